// Only the header matters: it declares LLVMFuzzerRunDriver, which -sanitize=fuzzer links in.
#include "CFuzzer.h"
