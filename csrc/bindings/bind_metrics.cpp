// torch_diode._C: bindings of the ranking metrics (diode/metrics.h).
//
// Wiring (done by whoever owns the shared build files, not by this file):
//   * CMakeLists.txt: add csrc/src/metrics.cpp to the diode_core library and
//     csrc/bindings/bind_metrics.cpp to the _C module (nanobind_add_module).
//   * csrc/bindings/module.cpp: declare `void bind_metrics(nanobind::module_& m);` at namespace
//     scope and call `bind_metrics(m);` inside NB_MODULE(_C, m).
//
// Only argument conversion lives here; the work is in the core library (csrc/src/metrics.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "diode/metrics.h"

namespace nb = nanobind;

namespace {

using F64Vector = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using I64Vector = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;

template <class T>
std::span<const T> as_vector_span(const nb::ndarray<const T, nb::c_contig, nb::device::cpu>& a,
                                  const char* name) {
  if (a.ndim() != 1)
    throw std::invalid_argument(std::string(name) + " must have 1 dimension, got " +
                                std::to_string(a.ndim()));
  return {a.data(), a.size()};
}

// A freshly allocated 1-D numpy array of n entries; the capsule frees it.
template <class T>
struct OwnedArray {
  T* data;
  nb::capsule owner;
  size_t n;
  explicit OwnedArray(size_t n_)
      : data(new T[n_ + 1]), owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); }),
        n(n_) {}
  std::span<T> span() const { return {data, n}; }
  // Entries [start, start + len) as a numpy array kept alive by this allocation's capsule.
  nb::object to_numpy(size_t start, size_t len) const {
    return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(data + start, {len}, owner));
  }
  nb::object to_numpy() const { return to_numpy(0, n); }
};

nb::dict ranking_metrics(const F64Vector& measured, const F64Vector& predicted,
                         const I64Vector& offsets, const std::vector<int64_t>& ks) {
  auto m = as_vector_span(measured, "measured");
  auto pr = as_vector_span(predicted, "predicted");
  auto off = as_vector_span(offsets, "offsets");
  if (off.empty()) throw std::invalid_argument("offsets must have P + 1 >= 1 entries, got an empty array");
  const size_t P = off.size() - 1;
  OwnedArray<double> best(P), slowdown(P), tau(P);
  OwnedArray<int64_t> count(P);
  // topk_perf is one ks.size() x P block; each top{k}_perf array is a row of it, sharing its owner.
  OwnedArray<double> topk(ks.size() * P);
  {
    nb::gil_scoped_release release;
    diode::compute_ranking_metrics(
        m, pr, off, ks,
        diode::RankingOutputs{best.span(), slowdown.span(), tau.span(), count.span(), topk.span()});
  }
  nb::dict out;
  out["best_us"] = best.to_numpy();
  out["top1_slowdown"] = slowdown.to_numpy();
  out["kendall_tau"] = tau.to_numpy();
  out["num_candidates"] = count.to_numpy();
  for (size_t j = 0; j < ks.size(); ++j)
    out[("top" + std::to_string(ks[j]) + "_perf").c_str()] = topk.to_numpy(j * P, P);
  return out;
}

}  // namespace

void bind_metrics(nb::module_& m) {
  m.def("ranking_metrics", &ranking_metrics, nb::arg("measured"), nb::arg("predicted"),
        nb::arg("offsets"), nb::arg("ks"),
        "Per-problem ranking metrics of a runtime model.\n\n"
        "measured: float64[N] measured times >= 0 (+inf = failed candidate, ignored entirely);\n"
        "predicted: float64[N] predictions (only their order within a problem matters; NaN is\n"
        "rejected, also on failed rows);\n"
        "offsets: int64[P+1], problem p owns rows offsets[p]..offsets[p+1]-1 (offsets[0] = 0,\n"
        "non-decreasing, offsets[P] = N); ks: positive ints, no duplicates.\n\n"
        "Returns a dict of numpy arrays of length P: best_us (float64), top1_slowdown (float64),\n"
        "kendall_tau (float64, tau-b), num_candidates (int64, non-failed candidates) and\n"
        "top{k}_perf (float64) for each k in ks: best time / best time among the k best-predicted\n"
        "candidates (k clamped; ties in prediction broken by lower row). A problem with no\n"
        "finite candidate gets NaN. Bad input raises ValueError. Releases the GIL.");
}
