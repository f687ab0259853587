// torch_diode._C: the nanobind layer. Only argument conversion lives here; the work is in the
// core library (csrc/src), which knows nothing of Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "diode/features.h"

namespace nb = nanobind;

void bind_model(nb::module_& m);
void bind_metrics(nb::module_& m);

namespace {

using AnyI64 = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using F32Matrix = nb::ndarray<nb::numpy, float, nb::ndim<2>>;

std::span<const int64_t> as_span(const AnyI64& a, const char* name, size_t ndim) {
  if (a.ndim() != ndim)
    throw std::invalid_argument(std::string(name) + " must have " + std::to_string(ndim) +
                                " dimension(s), got " + std::to_string(a.ndim()));
  return {a.data(), a.size()};
}

void check_cols(const AnyI64& a, const char* name, size_t cols) {
  if (a.shape(a.ndim() - 1) != cols)
    throw std::invalid_argument(std::string(name) + " must have " + std::to_string(cols) +
                                " columns, got " + std::to_string(a.shape(a.ndim() - 1)));
}

F32Matrix run(std::span<const int64_t> problems, std::span<const int64_t> problem_index,
              const AnyI64& configs, const AnyI64& hardware) {
  auto c = as_span(configs, "configs", 2);
  auto h = as_span(hardware, "hardware", 1);
  check_cols(configs, "configs", diode::kNumConfigColumns);
  const size_t rows = configs.shape(0);
  const size_t nf = static_cast<size_t>(diode::num_features());
  float* data = new float[rows * nf + 1];
  nb::capsule owner(data, [](void* ptr) noexcept { delete[] static_cast<float*>(ptr); });
  {
    nb::gil_scoped_release release;
    diode::compute_features(problems, problem_index, c, h, std::span<float>(data, rows * nf));
  }
  return F32Matrix(data, {rows, nf}, owner);
}

F32Matrix features_batch(const AnyI64& problems, const AnyI64& problem_index,
                         const AnyI64& configs, const AnyI64& hardware) {
  auto p = as_span(problems, "problems", 2);
  check_cols(problems, "problems", diode::kNumProblemColumns);
  return run(p, as_span(problem_index, "problem_index", 1), configs, hardware);
}

F32Matrix features_one(const AnyI64& problem, const AnyI64& configs, const AnyI64& hardware) {
  auto p = as_span(problem, "problem", 1);
  check_cols(problem, "problem", diode::kNumProblemColumns);
  // One problem row shared by every config row.
  std::vector<int64_t> index(configs.ndim() == 2 ? configs.shape(0) : 0, 0);
  return run(p, index, configs, hardware);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "torch-diode C++ core: GEMM feature extraction, the inference engine, ranking metrics.";
  bind_model(m);
  bind_metrics(m);
  m.attr("FEATURE_VERSION") = diode::kFeatureVersion;
  m.def("feature_names", &diode::feature_names, "Names of the feature columns, in order.");
  m.def("problem_columns", &diode::problem_columns, "Columns of a problem row (int64).");
  m.def("config_columns", &diode::config_columns, "Columns of a config row (int64).");
  m.def("hardware_columns", &diode::hardware_columns, "Entries of the hardware row (int64).");
  m.def("dtype_names", &diode::dtype_names, "Dtype codes: index = code.");
  m.def("dtype_bytes", &diode::dtype_bytes, nb::arg("dtype_code"), "Bytes per element of a dtype code.");
  m.def("row_alignment_log2", &diode::row_alignment_log2, nb::arg("leading_dim"), nb::arg("elem_bytes"),
        "log2 of the byte alignment (0-4: 1 to 16 bytes) of rows of leading_dim elements.");
  m.def("op_names", &diode::op_names, "Op codes: index = code.");
  m.def("template_kind_names", &diode::template_kind_names, "Template-kind codes.");
  m.def(
      "template_kind", [](const std::string& id) { return static_cast<int>(diode::template_kind(id)); },
      nb::arg("template_id"), "Template-kind code of a template id such as 'triton::mm'.");
  m.def("compute_features", &features_one, nb::arg("problem"), nb::arg("configs"),
        nb::arg("hardware"),
        "Features of one problem (int64[11]) with N configs (int64[N, 10]) on hardware "
        "(int64[2]): float32[N, F]. Releases the GIL.");
  m.def("compute_features_batch", &features_batch, nb::arg("problems"), nb::arg("problem_index"),
        nb::arg("configs"), nb::arg("hardware"),
        "Features of config row i paired with problems[problem_index[i]]: float32[N, F].");
}
