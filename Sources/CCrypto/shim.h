#ifndef HANDOFF_CCRYPTO_SHIM_H
#define HANDOFF_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/crypto.h>
#endif
