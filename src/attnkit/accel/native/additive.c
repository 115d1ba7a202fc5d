/* Fused additive-attention energies for x86-64 CPUs with AVX2 and FMA.
 *
 *     scores[b, t, s] = sum_a v[a] * tanh(query[b, t, a] + keys[b, s, a])
 *
 * One pass over the keys: the (B, T, S, A) sum is never written out unless the caller asks for its tanh
 * (training keeps it for the backward). tanh is fastmath.h's (|error| < 3e-7). Rows (b, t) are spread over
 * `threads` OpenMP threads (the caller passes torch.get_num_threads()); with gcc and a PyTorch built on
 * libgomp they are PyTorch's own pool.
 *
 * All arrays are contiguous float32: query (B, T, A), keys (B, S, A), v (A), scores (B, T, S), and
 * hidden (B, T, S, A) or NULL.
 *
 * attnkit_additive_backward is one decoding step's backward through those energies (T = 1), also in one pass.
 */
#include "fastmath.h"

void attnkit_additive_energies(const float *query, const float *keys, const float *v, float *scores,
                               float *hidden, long B, long T, long S, long A, int threads) {
    long vec_end = A - A % 8;
    (void)threads; /* unused where the compiler has no OpenMP */
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
    for (long b = 0; b < B; b++) {
        for (long t = 0; t < T; t++) {
            const float *q = query + (b * T + t) * A;
            for (long s = 0; s < S; s++) {
                const float *k = keys + (b * S + s) * A;
                float *h = hidden ? hidden + ((b * T + t) * S + s) * A : 0;
                __m256 acc = _mm256_setzero_ps();
                long a = 0;
                for (; a < vec_end; a += 8) {
                    __m256 e = tanh8(_mm256_add_ps(_mm256_loadu_ps(q + a), _mm256_loadu_ps(k + a)));
                    if (h) _mm256_storeu_ps(h + a, e);
                    acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a), e, acc);
                }
                float total = sum8(acc);
                for (; a < A; a++) {
                    float e = tanh1(q[a] + k[a]);
                    if (h) h[a] = e;
                    total += v[a] * e;
                }
                scores[(b * T + t) * S + s] = total;
            }
        }
    }
}

/* Backward of one step's energies (T = 1) given the score gradients d_scores (B, S) and the kept tanh
 * hidden (B, S, A):
 *
 *     d_e[b, s, a]   = d_scores[b, s] * v[a] * (1 - hidden[b, s, a]^2)     (before tanh)
 *     d_keys[b, s, a] += d_e[b, s, a]        (accumulated over the steps)
 *     d_query[b, a]  = sum_s d_e[b, s, a]    (overwritten)
 *
 * d_e itself is never written out. d v (= d_scores . hidden summed over rows) is a matmul, left to the
 * caller. Rows b go to the threads; d_keys (B, S, A) and d_query (B, A) contiguous like the inputs.
 */
void attnkit_additive_backward(const float *d_scores, const float *hidden, const float *v, float *d_keys,
                               float *d_query, long B, long S, long A, int threads) {
    long vec_end = A - A % 8;
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < B; b++) {
        float *dq = d_query + b * A;
        for (long a = 0; a < A; a++) dq[a] = 0.0f;
        for (long s = 0; s < S; s++) {
            const float *h = hidden + (b * S + s) * A;
            float *dk = d_keys + (b * S + s) * A;
            float ds = d_scores[b * S + s];
            __m256 ds8 = _mm256_set1_ps(ds), one = _mm256_set1_ps(1.0f);
            long a = 0;
            for (; a < vec_end; a += 8) {
                __m256 e = _mm256_loadu_ps(h + a);
                __m256 de = _mm256_mul_ps(_mm256_mul_ps(ds8, _mm256_loadu_ps(v + a)),
                                          _mm256_fnmadd_ps(e, e, one));
                _mm256_storeu_ps(dk + a, _mm256_add_ps(_mm256_loadu_ps(dk + a), de));
                _mm256_storeu_ps(dq + a, _mm256_add_ps(_mm256_loadu_ps(dq + a), de));
            }
            for (; a < A; a++) {
                float de = ds * v[a] * (1.0f - h[a] * h[a]);
                dk[a] += de;
                dq[a] += de;
            }
        }
    }
}
