#ifndef HANDOFF_CSODIUM_SHIM_H
#define HANDOFF_CSODIUM_SHIM_H
#include <sodium.h>
#endif
