/* Inverted-dropout keep masks from a counter-based hash, for x86-64 CPUs (the loop vectorises with AVX2).
 *
 *     mask[i] = scale if bits(seed, i) >= threshold else 0,   bits uniform on [0, 2^31)
 *
 * bits(seed, i) hashes the element's index with the 64-bit seed (two rounds of a 32-bit integer hash with
 * full avalanche, "lowbias32"), so the mask depends on the seed and the index alone: not on the number of
 * threads or how the work is split. The caller draws the seed from torch's generator, so torch.manual_seed
 * still fixes every mask. Element ranges go to the threads.
 */
#include <stdint.h>

static inline uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

#define CHUNK 4096L /* elements per task: whole vectors, and the index's high word fixed within */

void attnkit_keep_mask(float *mask, long numel, uint64_t seed, uint32_t threshold, float scale, int threads) {
    uint32_t key_lo = (uint32_t)seed, key_hi = (uint32_t)(seed >> 32);
    long chunks = (numel + CHUNK - 1) / CHUNK;
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long c = 0; c < chunks; c++) {
        long start = c * CHUNK, end = start + CHUNK < numel ? start + CHUNK : numel;
        /* tensors past 2^32 elements: the high word of the index changes the second key */
        uint32_t key2 = key_hi + (uint32_t)((uint64_t)start >> 32) * 0x85ebca6bU;
        uint32_t base = (uint32_t)start;
        float *out = mask + start;
        for (uint32_t j = 0; j < (uint32_t)(end - start); j++) {
            uint32_t bits = mix32(mix32((base + j) * 0x9e3779b9U + key_lo) ^ key2);
            out[j] = (bits >> 1) >= threshold ? scale : 0.0f;
        }
    }
}
