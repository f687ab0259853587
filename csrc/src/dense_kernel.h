// One dense layer of the inference engine: out[r, :] = act(bias + sum_i a[r, i] * wt[i, :]).
// Included by dense_avx2.cpp (built with -mavx2 -mfma, DIODE_VW = 8) and dense_generic.cpp
// (baseline, DIODE_VW = 4), which define DIODE_DENSE_NAME; model.cpp picks one at run time.
//
// Register blocking: 4 rows x 2 vectors of accumulators stay in registers while the input
// dimension streams past, so each weight vector loaded serves 4 rows (its speed:
// python -m benchmarks.engine_latency).
#include <cstddef>
#include <cstring>

namespace diode::detail {

void DIODE_DENSE_NAME(const float* __restrict a, size_t rows, size_t in, const float* __restrict wt,
                      const float* __restrict bias, size_t out, float* __restrict o, bool relu) {
  typedef float vec __attribute__((vector_size(DIODE_VW * sizeof(float))));
  constexpr size_t kRows = 4, kW = DIODE_VW, kCols = 2 * kW;
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
    const float* a0 = a + r * in;
    const float* a1 = a0 + in;
    const float* a2 = a1 + in;
    const float* a3 = a2 + in;
    for (size_t j0 = 0; j0 < full_cols; j0 += kCols) {
      const vec b0 = load(bias + j0), b1 = load(bias + j0 + kW);
      vec c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
      for (size_t i = 0; i < in; ++i) {
        const float* w = wt + i * out + j0;
        const vec w0 = load(w), w1 = load(w + kW);
        c00 += a0[i] * w0;
        c01 += a0[i] * w1;
        c10 += a1[i] * w0;
        c11 += a1[i] * w1;
        c20 += a2[i] * w0;
        c21 += a2[i] * w1;
        c30 += a3[i] * w0;
        c31 += a3[i] * w1;
      }
      float* o0 = o + r * out + j0;
      store(o0, c00);
      store(o0 + kW, c01);
      store(o0 + out, c10);
      store(o0 + out + kW, c11);
      store(o0 + 2 * out, c20);
      store(o0 + 2 * out + kW, c21);
      store(o0 + 3 * out, c30);
      store(o0 + 3 * out + kW, c31);
    }
    for (size_t j = full_cols; j < out; ++j)  // leftover columns
      for (size_t rr = 0; rr < kRows; ++rr) {
        float x = bias[j];
        for (size_t i = 0; i < in; ++i) x += a[(r + rr) * in + i] * wt[i * out + j];
        o[(r + rr) * out + j] = relu && x < 0.f ? 0.f : x;
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
