#include "aesgcm.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

// Only these functions use the vector instructions; the rest of the program stays baseline x86-64.
#define VECTOR __attribute__((target("aes,pclmul,sse4.1,avx2,vaes,vpclmulqdq")))

struct handoff_aesgcm_context {
    __m128i round_keys[15];
    /// The hash key's powers, byte-reflected, paired as the eight-block loop multiplies them:
    /// [H^8 | H^7], [H^6 | H^5], [H^4 | H^3], [H^2 | H^1] (lower lane first).
    __m256i powers[4];
    __m128i hash_key;
};

int handoff_aesgcm_available(void) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    const unsigned aes = 1u << 25, pclmul = 1u << 1, sse41 = 1u << 19, osxsave = 1u << 27, avx = 1u << 28;
    if ((ecx & (aes | pclmul | sse41 | osxsave | avx)) != (aes | pclmul | sse41 | osxsave | avx)) return 0;
    // The kernel must save the YMM registers across context switches (XCR0: SSE and AVX state).
    unsigned xcr0_low, xcr0_high;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if ((xcr0_low & 6) != 6) return 0;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned avx2 = 1u << 5, vaes = 1u << 9, vpclmulqdq = 1u << 10;
    return (ebx & avx2) && (ecx & vaes) && (ecx & vpclmulqdq);
}

size_t handoff_aesgcm_context_bytes(void) { return sizeof(struct handoff_aesgcm_context); }
size_t handoff_aesgcm_context_alignment(void) { return _Alignof(struct handoff_aesgcm_context); }

// MARK: - AES-256

/// Each 32-bit word XORed with every word below it: the key schedule's running XOR.
VECTOR static inline __m128i xor_lower_words(__m128i words) {
    __m128i shifted = _mm_slli_si128(words, 4);
    words = _mm_xor_si128(words, shifted);
    shifted = _mm_slli_si128(shifted, 4);
    words = _mm_xor_si128(words, shifted);
    shifted = _mm_slli_si128(shifted, 4);
    return _mm_xor_si128(words, shifted);
}

/// Round keys 2, 4, ..., 14: from the one two before, with the rotated, substituted last word
/// of the one before (`assist`, from aeskeygenassist with the round constant).
VECTOR static inline __m128i expand_even(__m128i previous, __m128i assist) {
    return _mm_xor_si128(xor_lower_words(previous), _mm_shuffle_epi32(assist, 0xff));
}

/// Round keys 3, 5, ..., 13: from the one two before, with the substituted (not rotated) last
/// word of the even key just made.
VECTOR static inline __m128i expand_odd(__m128i even, __m128i previous) {
    return _mm_xor_si128(xor_lower_words(previous), _mm_shuffle_epi32(_mm_aeskeygenassist_si128(even, 0), 0xaa));
}

VECTOR static void expand_key(__m128i keys[15], const uint8_t key[32]) {
    __m128i even = _mm_loadu_si128((const __m128i *)key), odd = _mm_loadu_si128((const __m128i *)(key + 16));
    keys[0] = even;
    keys[1] = odd;
#define HANDOFF_EXPAND(index, rcon)                                          \
    even = expand_even(even, _mm_aeskeygenassist_si128(odd, rcon));          \
    keys[index] = even;                                                      \
    if (index < 14) { odd = expand_odd(even, odd); keys[index + 1] = odd; }
    HANDOFF_EXPAND(2, 0x01)
    HANDOFF_EXPAND(4, 0x02)
    HANDOFF_EXPAND(6, 0x04)
    HANDOFF_EXPAND(8, 0x08)
    HANDOFF_EXPAND(10, 0x10)
    HANDOFF_EXPAND(12, 0x20)
    HANDOFF_EXPAND(14, 0x40)
#undef HANDOFF_EXPAND
}

VECTOR static inline __m128i encrypt_block(const __m128i keys[15], __m128i block) {
    block = _mm_xor_si128(block, keys[0]);
    for (int round = 1; round < 14; round++) block = _mm_aesenc_si128(block, keys[round]);
    return _mm_aesenclast_si128(block, keys[14]);
}

// MARK: - GHASH, on byte-reflected blocks (Gueron and Kounavis, "Intel Carry-Less
// Multiplication Instruction and its Usage for Computing the GCM Mode"): a product of
// reflected operands is the reflected product shifted right by one, so the 256-bit
// product is shifted left by one, then reduced modulo x^128 + x^7 + x^2 + x + 1.

VECTOR static inline __m128i reverse_bytes(__m128i block) {
    return _mm_shuffle_epi8(block, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/// The product's three parts (low, middle, high), unreduced: sums of them reduce once.
typedef struct { __m128i low, middle, high; } wide_product;

VECTOR static inline wide_product multiply(__m128i a, __m128i b) {
    wide_product product;
    product.low = _mm_clmulepi64_si128(a, b, 0x00);
    product.high = _mm_clmulepi64_si128(a, b, 0x11);
    product.middle = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10));
    return product;
}

VECTOR static inline __m128i reduce(wide_product product) {
    __m128i low = _mm_xor_si128(product.low, _mm_slli_si128(product.middle, 8));
    __m128i high = _mm_xor_si128(product.high, _mm_srli_si128(product.middle, 8));
    // Shift the 256-bit high:low left by one bit.
    __m128i low_carries = _mm_srli_epi32(low, 31), high_carries = _mm_srli_epi32(high, 31);
    __m128i across = _mm_srli_si128(low_carries, 12);
    low = _mm_or_si128(_mm_slli_epi32(low, 1), _mm_slli_si128(low_carries, 4));
    high = _mm_or_si128(_mm_or_si128(_mm_slli_epi32(high, 1), _mm_slli_si128(high_carries, 4)), across);
    // Reduce: first the bits that fold back into the low half, then the rest.
    __m128i folded = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(low, 31), _mm_slli_epi32(low, 30)), _mm_slli_epi32(low, 25));
    __m128i spill = _mm_srli_si128(folded, 4);
    low = _mm_xor_si128(low, _mm_slli_si128(folded, 12));
    __m128i back = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(low, 1), _mm_srli_epi32(low, 2)), _mm_srli_epi32(low, 7));
    low = _mm_xor_si128(low, _mm_xor_si128(back, spill));
    return _mm_xor_si128(high, low);
}

VECTOR static inline __m128i multiply_reduced(__m128i a, __m128i b) { return reduce(multiply(a, b)); }

/// Absorbs `length` bytes (the last block zero-padded) one block at a time.
VECTOR static __m128i hash_bytes(__m128i state, __m128i hash_key, const uint8_t *bytes, size_t length) {
    for (; length >= 16; bytes += 16, length -= 16) {
        state = multiply_reduced(_mm_xor_si128(state, reverse_bytes(_mm_loadu_si128((const __m128i *)bytes))), hash_key);
    }
    if (length > 0) {
        uint8_t padded[16] = {0};
        memcpy(padded, bytes, length);
        state = multiply_reduced(_mm_xor_si128(state, reverse_bytes(_mm_loadu_si128((const __m128i *)padded))), hash_key);
    }
    return state;
}

VECTOR void handoff_aesgcm_init(handoff_aesgcm_context *context, const uint8_t key[32]) {
    expand_key(context->round_keys, key);
    __m128i h1 = reverse_bytes(encrypt_block(context->round_keys, _mm_setzero_si128()));
    __m128i powers[9];
    powers[1] = h1;
    for (int power = 2; power <= 8; power++) powers[power] = multiply_reduced(powers[power - 1], h1);
    for (int pair = 0; pair < 4; pair++) {
        context->powers[pair] = _mm256_set_m128i(powers[7 - 2 * pair], powers[8 - 2 * pair]);
    }
    context->hash_key = h1;
}

// MARK: - Counter mode with the hash, eight blocks at a time

/// Counter blocks are kept with the 32-bit counter in native order in their last four bytes
/// (so one vector add steps them); this puts it back big-endian before encryption.
VECTOR static inline __m128i counter_order(void) {
    return _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
}

VECTOR static inline __m128i first_counter(const uint8_t nonce[12], uint32_t counter) {
    uint8_t block[16];
    memcpy(block, nonce, 12);
    memcpy(block + 12, &counter, 4);
    return _mm_loadu_si128((const __m128i *)block);
}

/// Encrypts or decrypts `length` bytes from counter 2 on and hashes the ciphertext (`input`
/// when opening, `output` when sealing); returns the hash state before the lengths block.
VECTOR static __m128i crypt_and_hash(const handoff_aesgcm_context *context, uint8_t *output, const uint8_t *input,
                                     size_t length, __m128i state, const uint8_t nonce[12], int sealing) {
    const __m256i order = _mm256_broadcastsi128_si256(counter_order());
    const __m256i reflect = _mm256_broadcastsi128_si256(_mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m256i keys[15];
    for (int round = 0; round < 15; round++) keys[round] = _mm256_broadcastsi128_si256(context->round_keys[round]);
    // Two counters per vector: lanes n and n + 1.
    __m256i counters = _mm256_add_epi32(_mm256_broadcastsi128_si256(first_counter(nonce, 2)), _mm256_set_epi32(1, 0, 0, 0, 0, 0, 0, 0));
    const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
    for (; length >= 128; input += 128, output += 128, length -= 128) {
        __m256i blocks[4], text[4];
        for (int i = 0; i < 4; i++) {
            blocks[i] = _mm256_xor_si256(_mm256_shuffle_epi8(counters, order), keys[0]);
            counters = _mm256_add_epi32(counters, two);
            text[i] = _mm256_loadu_si256((const __m256i *)(input + 32 * i));
        }
        for (int round = 1; round < 14; round++) {
            for (int i = 0; i < 4; i++) blocks[i] = _mm256_aesenc_epi128(blocks[i], keys[round]);
        }
        __m256i low = _mm256_setzero_si256(), middle = _mm256_setzero_si256(), high = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
            __m256i result = _mm256_xor_si256(_mm256_aesenclast_epi128(blocks[i], keys[14]), text[i]);
            _mm256_storeu_si256((__m256i *)(output + 32 * i), result);
            __m256i hashed = _mm256_shuffle_epi8(sealing ? result : text[i], reflect);
            if (i == 0) hashed = _mm256_xor_si256(hashed, _mm256_inserti128_si256(_mm256_setzero_si256(), state, 0));
            const __m256i power = context->powers[i];
            low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(hashed, power, 0x00));
            high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(hashed, power, 0x11));
            middle = _mm256_xor_si256(middle, _mm256_xor_si256(_mm256_clmulepi64_epi128(hashed, power, 0x01),
                                                               _mm256_clmulepi64_epi128(hashed, power, 0x10)));
        }
        wide_product sum;
        sum.low = _mm_xor_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
        sum.middle = _mm_xor_si128(_mm256_castsi256_si128(middle), _mm256_extracti128_si256(middle, 1));
        sum.high = _mm_xor_si128(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
        state = reduce(sum);
    }
    // The rest one block at a time; the next counter is the lower lane's.
    __m128i counter = _mm256_castsi256_si128(counters);
    const __m128i one = _mm_set_epi32(1, 0, 0, 0);
    while (length > 0) {
        const size_t count = length < 16 ? length : 16;
        uint8_t text[16] = {0}, result[16] = {0};
        memcpy(text, input, count);
        __m128i stream = encrypt_block(context->round_keys, _mm_shuffle_epi8(counter, counter_order()));
        counter = _mm_add_epi32(counter, one);
        _mm_storeu_si128((__m128i *)result, _mm_xor_si128(stream, _mm_loadu_si128((const __m128i *)text)));
        memset(result + count, 0, 16 - count);  // the hash pads the last ciphertext block with zeros
        memcpy(output, result, count);
        state = hash_bytes(state, context->hash_key, sealing ? result : text, 16);
        input += count;
        output += count;
        length -= count;
    }
    return state;
}

VECTOR static void finish_tag(const handoff_aesgcm_context *context, __m128i state, size_t associated_length, size_t length,
                              const uint8_t nonce[12], uint8_t tag[16]) {
    uint8_t lengths[16];
    const uint64_t associated_bits = (uint64_t)associated_length * 8, bits = (uint64_t)length * 8;
    for (int i = 0; i < 8; i++) {
        lengths[i] = (uint8_t)(associated_bits >> (56 - 8 * i));
        lengths[8 + i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    state = hash_bytes(state, context->hash_key, lengths, 16);
    const uint32_t one = 1;
    __m128i mask = encrypt_block(context->round_keys, _mm_shuffle_epi8(first_counter(nonce, one), counter_order()));
    _mm_storeu_si128((__m128i *)tag, _mm_xor_si128(reverse_bytes(state), mask));
}

VECTOR void handoff_aesgcm_seal(const handoff_aesgcm_context *context, uint8_t *output, uint8_t tag[16], const uint8_t *input,
                                size_t length, const uint8_t *associated, size_t associated_length, const uint8_t nonce[12]) {
    __m128i state = hash_bytes(_mm_setzero_si128(), context->hash_key, associated, associated_length);
    state = crypt_and_hash(context, output, input, length, state, nonce, 1);
    finish_tag(context, state, associated_length, length, nonce, tag);
}

VECTOR int handoff_aesgcm_open(const handoff_aesgcm_context *context, uint8_t *output, const uint8_t *input, size_t length,
                               const uint8_t tag[16], const uint8_t *associated, size_t associated_length, const uint8_t nonce[12]) {
    __m128i state = hash_bytes(_mm_setzero_si128(), context->hash_key, associated, associated_length);
    state = crypt_and_hash(context, output, input, length, state, nonce, 0);
    uint8_t expected[16];
    finish_tag(context, state, associated_length, length, nonce, expected);
    // Constant time: every byte is compared whatever the first difference.
    uint8_t difference = 0;
    for (int i = 0; i < 16; i++) difference |= (uint8_t)(expected[i] ^ tag[i]);
    if (difference != 0) {
        memset(output, 0, length);
        return -1;
    }
    return 0;
}

#else

struct handoff_aesgcm_context { uint8_t unused; };
int handoff_aesgcm_available(void) { return 0; }
size_t handoff_aesgcm_context_bytes(void) { return sizeof(struct handoff_aesgcm_context); }
size_t handoff_aesgcm_context_alignment(void) { return _Alignof(struct handoff_aesgcm_context); }
void handoff_aesgcm_init(handoff_aesgcm_context *context, const uint8_t key[32]) { (void)context; (void)key; __builtin_trap(); }
void handoff_aesgcm_seal(const handoff_aesgcm_context *context, uint8_t *output, uint8_t tag[16], const uint8_t *input,
                         size_t length, const uint8_t *associated, size_t associated_length, const uint8_t nonce[12]) {
    (void)context; (void)output; (void)tag; (void)input; (void)length; (void)associated; (void)associated_length; (void)nonce;
    __builtin_trap();
}
int handoff_aesgcm_open(const handoff_aesgcm_context *context, uint8_t *output, const uint8_t *input, size_t length,
                        const uint8_t tag[16], const uint8_t *associated, size_t associated_length, const uint8_t nonce[12]) {
    (void)context; (void)output; (void)input; (void)length; (void)tag; (void)associated; (void)associated_length; (void)nonce;
    __builtin_trap();
}

#endif
