// One dense layer of the inference engine: out[r, :] = act(bias + sum_i a[r, i] * wt[i, :]).
// Included by dense_avx2.cpp (built with -mavx2 -mfma, DIODE_VW = 8) and dense_generic.cpp
// (baseline, DIODE_VW = 4), which define DIODE_DENSE_NAME; model.cpp picks one at run time.
//
// Register blocking: 6 rows x 2 vectors of accumulators stay in registers while the input
// dimension streams past, so each weight vector loaded serves 6 rows; 12 independent sums keep
// both FMA pipes busy through their latency, and with the two weight vectors and a broadcast
// they fit x86-64's 16 vector registers (its speed: python -m benchmarks.engine_latency).
#include <cstddef>
#include <cstring>
#include <vector>

namespace diode::detail {

void DIODE_DENSE_NAME(const float* __restrict a, size_t rows, size_t in, const float* __restrict wt,
                      const float* __restrict bias, size_t out, float* __restrict o, bool relu) {
  typedef float vec __attribute__((vector_size(DIODE_VW * sizeof(float))));
  constexpr size_t kRows = 6, kW = DIODE_VW, kCols = 2 * kW;
  auto load = [](const float* p) {
    vec v;
    std::memcpy(&v, p, sizeof(vec));
    return v;
  };
  auto store = [relu](float* p, vec v) {
    if (relu) v = v > 0.f ? v : 0.f;
    std::memcpy(p, &v, sizeof(vec));
  };
  const size_t full_cols = out - out % kCols;
  size_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    const float* ar[kRows];
    for (size_t k = 0; k < kRows; ++k) ar[k] = a + (r + k) * in;
    for (size_t j0 = 0; j0 < full_cols; j0 += kCols) {
      const vec b0 = load(bias + j0), b1 = load(bias + j0 + kW);
      vec c0[kRows], c1[kRows];
#pragma GCC unroll 8
      for (size_t k = 0; k < kRows; ++k) c0[k] = b0, c1[k] = b1;
      for (size_t i = 0; i < in; ++i) {
        const float* w = wt + i * out + j0;
        const vec w0 = load(w), w1 = load(w + kW);
#pragma GCC unroll 8
        for (size_t k = 0; k < kRows; ++k) {
          c0[k] += ar[k][i] * w0;
          c1[k] += ar[k][i] * w1;
        }
      }
#pragma GCC unroll 8
      for (size_t k = 0; k < kRows; ++k) {
        store(o + (r + k) * out + j0, c0[k]);
        store(o + (r + k) * out + j0 + kW, c1[k]);
      }
    }
  }
  const size_t tiled_rows = r;
  if (full_cols < out) {
    // Leftover columns (the output layer's single one): per row, a dot product over the input
    // in vector lanes, against the column's weights, contiguous already where the layer has one
    // output and gathered so otherwise (a scalar sum would be one chain of dependent
    // multiply-adds per row).
    std::vector<float> gathered(out > 1 ? in : 0);
    for (size_t j = full_cols; j < out; ++j) {
      const float* col = wt;
      if (out > 1) {
        for (size_t i = 0; i < in; ++i) gathered[i] = wt[i * out + j];
        col = gathered.data();
      }
      for (size_t rr = 0; rr < tiled_rows; ++rr) {
        const float* ar = a + rr * in;
        vec s0 = {}, s1 = {};
        size_t i = 0;
        for (; i + 2 * kW <= in; i += 2 * kW) {
          s0 += load(ar + i) * load(col + i);
          s1 += load(ar + i + kW) * load(col + i + kW);
        }
        for (; i + kW <= in; i += kW) s0 += load(ar + i) * load(col + i);
        s0 += s1;
        float x = bias[j];
        for (size_t l = 0; l < kW; ++l) x += s0[l];
        for (; i < in; ++i) x += ar[i] * col[i];
        o[rr * out + j] = relu && x < 0.f ? 0.f : x;
      }
    }
  }
  for (; r < rows; ++r) {  // leftover rows
    float* orow = o + r * out;
    for (size_t j = 0; j < out; ++j) orow[j] = bias[j];
    for (size_t i = 0; i < in; ++i) {
      const float v = a[r * in + i];
      const float* w = wt + i * out;
      for (size_t j = 0; j < out; ++j) orow[j] += v * w[j];
    }
    if (relu)
      for (size_t j = 0; j < out; ++j) orow[j] = orow[j] < 0.f ? 0.f : orow[j];
  }
}

}  // namespace diode::detail
