// torch_diode._C: bindings of the ranking metrics (diode/metrics.h).
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

#include "arrays.h"

namespace nb = nanobind;
using diode::py::ArrayArg;
using diode::py::as_array;
using diode::py::NumpyBuffer;

namespace {

nb::dict ranking_metrics(ArrayArg measured_arg, ArrayArg predicted_arg, ArrayArg offsets_arg,
                         const std::vector<int64_t>& ks) {
  const auto measured = as_array<double>(measured_arg, "measured", 1);
  const auto predicted = as_array<double>(predicted_arg, "predicted", 1);
  const auto offsets = as_array<int64_t>(offsets_arg, "offsets", 1);
  const std::span<const double> m(measured.data(), measured.size()),
      pr(predicted.data(), predicted.size());
  const std::span<const int64_t> off(offsets.data(), offsets.size());
  if (off.empty())
    throw std::invalid_argument("offsets must have P + 1 >= 1 entries, got an empty array");
  const size_t P = off.size() - 1;
  NumpyBuffer<double> best(P), slowdown(P), tau(P);
  NumpyBuffer<int64_t> count(P);
  // topk_perf is one ks.size() x P block; each top{k}_perf array is a row of it, sharing its owner.
  NumpyBuffer<double> topk(ks.size() * P);
  {
    nb::gil_scoped_release release;
    diode::compute_ranking_metrics(
        m, pr, off, ks,
        diode::RankingOutputs{best.span(), slowdown.span(), tau.span(), count.span(), topk.span()});
  }
  nb::dict out;
  out["best_us"] = best.view({P});
  out["top1_slowdown"] = slowdown.view({P});
  out["kendall_tau"] = tau.view({P});
  out["num_candidates"] = count.view({P});
  for (size_t j = 0; j < ks.size(); ++j)
    out[("top" + std::to_string(ks[j]) + "_perf").c_str()] = topk.view({P}, j * P);
  return out;
}

}  // namespace

void bind_metrics(nb::module_& m) {
  m.def("ranking_metrics", &ranking_metrics, nb::arg("measured").none(),
        nb::arg("predicted").none(), nb::arg("offsets").none(), nb::arg("ks"),
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
