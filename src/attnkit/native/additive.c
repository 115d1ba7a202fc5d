/* Fused additive-attention energies for x86-64 CPUs with AVX2 and FMA.
 *
 *     scores[b, t, s] = sum_a v[a] * tanh(query[b, t, a] + keys[b, s, a])
 *
 * One pass over the keys: the (B, T, S, A) sum is never written out unless the caller asks for its tanh
 * (training keeps it for the backward). tanh is a [13/6] rational approximation, the one Eigen and XLA use
 * for float32, with |error| below 3e-7; the library tanh on some CPUs costs several times the rest of the
 * step. Rows (b, t) are spread over `threads` OpenMP threads (the caller passes torch.get_num_threads()); with
 * gcc and a PyTorch built on libgomp they are PyTorch's own pool.
 *
 * All arrays are contiguous float32: query (B, T, A), keys (B, S, A), v (A), scores (B, T, S), and
 * hidden (B, T, S, A) or NULL.
 */
#include <immintrin.h>

#define TANH_CLAMP 7.90531110763549805f /* beyond this the approximation is 1 to float precision */

static const float NUM[7] = {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
                             5.12229709037114e-08f, 1.48572235717979e-05f, 6.37261928875436e-04f,
                             4.89352455891786e-03f};
static const float DEN[4] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                             4.89352518554385e-03f};

static inline __m256 tanh8(__m256 x) {
    /* max/min return their second operand when one is NaN: x goes second, so a NaN comes out NaN */
    x = _mm256_min_ps(_mm256_set1_ps(TANH_CLAMP), _mm256_max_ps(_mm256_set1_ps(-TANH_CLAMP), x));
    __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(NUM[0]);
    for (int i = 1; i < 7; i++) p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(NUM[i]));
    __m256 q = _mm256_set1_ps(DEN[0]);
    for (int i = 1; i < 4; i++) q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(DEN[i]));
    return _mm256_div_ps(_mm256_mul_ps(p, x), q);
}

static inline float tanh1(float x) {
    x = x < -TANH_CLAMP ? -TANH_CLAMP : (x > TANH_CLAMP ? TANH_CLAMP : x); /* NaN falls through */
    float x2 = x * x, p = NUM[0], q = DEN[0];
    for (int i = 1; i < 7; i++) p = p * x2 + NUM[i];
    for (int i = 1; i < 4; i++) q = q * x2 + DEN[i];
    return p * x / q;
}

static inline float sum8(__m256 acc) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

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
