#ifndef HANDOFF_AESGCM_H
#define HANDOFF_AESGCM_H

#include <stddef.h>
#include <stdint.h>

/// AES-256-GCM (NIST SP 800-38D) for the transfer's records, on the vector AES and carry-less
/// multiply instructions (VAES, VPCLMULQDQ with AVX2): two blocks per instruction, about twice
/// libsodium 1.0.18's AES-NI code on the CPUs that have them. The output is standard GCM, so
/// either end may use libsodium instead. 96-bit nonces only.

/// The expanded key and powers of the hash key; 32-byte aligned (`handoff_aesgcm_context_bytes`).
typedef struct handoff_aesgcm_context handoff_aesgcm_context;

/// 1 when this CPU and the kernel (saved AVX state) support the instructions, else 0.
int handoff_aesgcm_available(void);
size_t handoff_aesgcm_context_bytes(void);
size_t handoff_aesgcm_context_alignment(void);
/// Only when available.
void handoff_aesgcm_init(handoff_aesgcm_context *context, const uint8_t key[32]);
/// Writes `length` bytes of ciphertext (`output` may equal `input`) and the 16-byte tag.
void handoff_aesgcm_seal(const handoff_aesgcm_context *context, uint8_t *output, uint8_t tag[16],
                         const uint8_t *input, size_t length, const uint8_t *associated, size_t associated_length,
                         const uint8_t nonce[12]);
/// 0 and the plaintext when `tag` is authentic; -1 and `output` zeroed when it is not.
int handoff_aesgcm_open(const handoff_aesgcm_context *context, uint8_t *output, const uint8_t *input, size_t length,
                        const uint8_t tag[16], const uint8_t *associated, size_t associated_length, const uint8_t nonce[12]);

#endif
