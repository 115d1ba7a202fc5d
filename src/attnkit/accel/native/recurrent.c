/* GRU gate arithmetic of one step, forward and backward, for x86-64 CPUs with AVX2 and FMA.
 *
 * The matmuls stay with the caller (attnkit/accel/cell_math.py); these do the elementwise part that
 * torch would run as a chain of small kernels, each a pass over the gates and each paying the library's
 * sigmoid and tanh. Equations and gate order are nn.GRU's:
 *
 *     r = sigmoid(x_r + h_r),  z = sigmoid(x_z + h_z),  n = tanh(x_n + r * h_n),  h' = n + z * (h - n)
 *
 * with x the input gates (b_ih inside) and h the hidden gates (h_prev W_hh^T + b_hh). sigmoid and tanh are
 * fastmath.h's (|error| < 3e-7).
 *
 * Every array is a stack of rows (d, b), d < D directions and b < B batch rows, each row contiguous: row
 * (d, b) of array X starts at X + d * X_d + b * X_b (strides in floats). Rows go to the threads.
 */
#include "fastmath.h"

#define ROW(name, d, b) (name + (d) * name##_d + (b) * name##_b)

/* gates_x, gates_h (rows of 3H) and h_prev (rows of H) -> the activated gates [r, z, n] (rows of 3H) and
 * the new state h_out (rows of H). With a bias (rows of 3H, usually batch stride 0; NULL for none), gates_h
 * comes without b_hh and the bias is added into it first, in place: torch's addmm would copy the bias into
 * its output before the matmul, a pass of its own. */
void attnkit_gru_forward(const float *gx, long gx_d, long gx_b, float *gh, long gh_d, long gh_b,
                         const float *bias, long bias_d, long bias_b, const float *hp, long hp_d, long hp_b,
                         float *gates, long gates_d, long gates_b, float *ho, long ho_d, long ho_b,
                         long D, long B, long H, int threads) {
    long vec_end = H - H % 8;
    (void)threads;
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
    for (long d = 0; d < D; d++) {
        for (long b = 0; b < B; b++) {
            const float *x = ROW(gx, d, b), *p = ROW(hp, d, b);
            float *h = ROW(gh, d, b), *g = ROW(gates, d, b), *out = ROW(ho, d, b);
            if (bias) {
                const float *add = ROW(bias, d, b);
                for (long j = 0; j < 3 * H; j++) h[j] += add[j];
            }
            long j = 0;
            for (; j < vec_end; j += 8) {
                __m256 r = sigmoid8(_mm256_add_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(h + j)));
                __m256 z = sigmoid8(_mm256_add_ps(_mm256_loadu_ps(x + H + j), _mm256_loadu_ps(h + H + j)));
                __m256 n = tanh8(_mm256_fmadd_ps(r, _mm256_loadu_ps(h + 2 * H + j), _mm256_loadu_ps(x + 2 * H + j)));
                _mm256_storeu_ps(g + j, r);
                _mm256_storeu_ps(g + H + j, z);
                _mm256_storeu_ps(g + 2 * H + j, n);
                _mm256_storeu_ps(out + j, _mm256_fmadd_ps(z, _mm256_sub_ps(_mm256_loadu_ps(p + j), n), n));
            }
            for (; j < H; j++) {
                float r = sigmoid1(x[j] + h[j]), z = sigmoid1(x[H + j] + h[H + j]);
                float n = tanh1(x[2 * H + j] + r * h[2 * H + j]);
                g[j] = r;
                g[H + j] = z;
                g[2 * H + j] = n;
                out[j] = n + z * (p[j] - n);
            }
        }
    }
}

/* Backward of the step given d_h (rows of H), the gradient with respect to h':
 *
 *     direct = d_h z                         the part of d h_prev that skips the matmul
 *     d n    = (d_h - direct) (1 - n^2)
 *     d r    = d n * h_n * r (1 - r),    d z = d_h (h_prev - n) z (1 - z)
 *     d_gates_x = [d r, d z, d n],       d_gates_h = [d r, d z, d n * r]
 *
 * gates: the activated [r, z, n] of the forward; gates_h: its hidden gates (h_n is their last third). */
void attnkit_gru_backward(const float *dh, long dh_d, long dh_b, const float *gates, long gates_d, long gates_b,
                          const float *gh, long gh_d, long gh_b, const float *hp, long hp_d, long hp_b,
                          float *dgx, long dgx_d, long dgx_b, float *dgh, long dgh_d, long dgh_b,
                          float *direct, long direct_d, long direct_b, long D, long B, long H, int threads) {
    long vec_end = H - H % 8;
    (void)threads;
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
    for (long d = 0; d < D; d++) {
        for (long b = 0; b < B; b++) {
            const float *dy = ROW(dh, d, b), *g = ROW(gates, d, b), *h = ROW(gh, d, b), *p = ROW(hp, d, b);
            float *gx_out = ROW(dgx, d, b), *gh_out = ROW(dgh, d, b), *skip = ROW(direct, d, b);
            long j = 0;
            __m256 one = _mm256_set1_ps(1.0f);
            for (; j < vec_end; j += 8) {
                __m256 r = _mm256_loadu_ps(g + j), z = _mm256_loadu_ps(g + H + j), n = _mm256_loadu_ps(g + 2 * H + j);
                __m256 dy8 = _mm256_loadu_ps(dy + j);
                __m256 dyz = _mm256_mul_ps(dy8, z);
                __m256 dn = _mm256_mul_ps(_mm256_sub_ps(dy8, dyz), _mm256_fnmadd_ps(n, n, one));
                __m256 dr = _mm256_mul_ps(_mm256_mul_ps(dn, _mm256_loadu_ps(h + 2 * H + j)),
                                          _mm256_mul_ps(r, _mm256_sub_ps(one, r)));
                __m256 dz = _mm256_mul_ps(_mm256_mul_ps(dy8, _mm256_sub_ps(_mm256_loadu_ps(p + j), n)),
                                          _mm256_mul_ps(z, _mm256_sub_ps(one, z)));
                _mm256_storeu_ps(gx_out + j, dr);
                _mm256_storeu_ps(gx_out + H + j, dz);
                _mm256_storeu_ps(gx_out + 2 * H + j, dn);
                _mm256_storeu_ps(gh_out + j, dr);
                _mm256_storeu_ps(gh_out + H + j, dz);
                _mm256_storeu_ps(gh_out + 2 * H + j, _mm256_mul_ps(dn, r));
                _mm256_storeu_ps(skip + j, dyz);
            }
            for (; j < H; j++) {
                float r = g[j], z = g[H + j], n = g[2 * H + j], dyz = dy[j] * z;
                float dn = (dy[j] - dyz) * (1.0f - n * n);
                float dr = dn * h[2 * H + j] * (r * (1.0f - r));
                float dz = dy[j] * (p[j] - n) * (z * (1.0f - z));
                gx_out[j] = gh_out[j] = dr;
                gx_out[H + j] = gh_out[H + j] = dz;
                gx_out[2 * H + j] = dn;
                gh_out[2 * H + j] = dn * r;
                skip[j] = dyz;
            }
        }
    }
}
