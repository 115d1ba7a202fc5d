/* Shared by the attnkit kernels (x86-64, AVX2 + FMA): tanh and sigmoid, 8 floats at a time and one at a time.
 *
 * tanh is a [13/6] rational approximation, the one Eigen and XLA use for float32, with |error| below 3e-7;
 * the library tanh on some CPUs costs several times the arithmetic around it. sigmoid(x) = (1 + tanh(x/2)) / 2,
 * so its error is below 1.5e-7.
 */
#ifndef ATTNKIT_FASTMATH_H
#define ATTNKIT_FASTMATH_H

#include <immintrin.h>

#define TANH_CLAMP 7.90531110763549805f /* beyond this the approximation is 1 to float precision */

static const float TANH_NUM[7] = {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
                                  5.12229709037114e-08f, 1.48572235717979e-05f, 6.37261928875436e-04f,
                                  4.89352455891786e-03f};
static const float TANH_DEN[4] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                                  4.89352518554385e-03f};

static inline __m256 tanh8(__m256 x) {
    /* max/min return their second operand when one is NaN: x goes second, so a NaN comes out NaN */
    x = _mm256_min_ps(_mm256_set1_ps(TANH_CLAMP), _mm256_max_ps(_mm256_set1_ps(-TANH_CLAMP), x));
    __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(TANH_NUM[0]);
    for (int i = 1; i < 7; i++) p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(TANH_NUM[i]));
    __m256 q = _mm256_set1_ps(TANH_DEN[0]);
    for (int i = 1; i < 4; i++) q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(TANH_DEN[i]));
    return _mm256_div_ps(_mm256_mul_ps(p, x), q);
}

static inline float tanh1(float x) {
    x = x < -TANH_CLAMP ? -TANH_CLAMP : (x > TANH_CLAMP ? TANH_CLAMP : x); /* NaN falls through */
    float x2 = x * x, p = TANH_NUM[0], q = TANH_DEN[0];
    for (int i = 1; i < 7; i++) p = p * x2 + TANH_NUM[i];
    for (int i = 1; i < 4; i++) q = q * x2 + TANH_DEN[i];
    return p * x / q;
}

static inline __m256 sigmoid8(__m256 x) {
    __m256 half = _mm256_set1_ps(0.5f);
    return _mm256_fmadd_ps(half, tanh8(_mm256_mul_ps(half, x)), half);
}

static inline float sigmoid1(float x) { return 0.5f * tanh1(0.5f * x) + 0.5f; }

static inline float sum8(__m256 acc) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

#endif
