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

#include "arrays.h"

namespace nb = nanobind;
using diode::py::ArrayArg;
using diode::py::as_array;

void bind_model(nb::module_& m);
void bind_metrics(nb::module_& m);

namespace {

using F32Matrix = nb::ndarray<nb::numpy, float>;

using I64Array = diode::py::CArray<int64_t>;

I64Array configs_array(ArrayArg configs) {
  return as_array<int64_t>(configs, "configs", 2, diode::kNumConfigColumns);
}

F32Matrix run(std::span<const int64_t> problems, std::span<const int64_t> problem_index,
              const I64Array& configs, ArrayArg hardware_arg) {
  const auto hardware = as_array<int64_t>(hardware_arg, "hardware", 1);
  const size_t rows = configs.shape(0);
  diode::py::NumpyBuffer<float> out(rows * diode::kNumFeatures);
  {
    nb::gil_scoped_release release;
    diode::compute_features(problems, problem_index, {configs.data(), configs.size()},
                            {hardware.data(), hardware.size()}, out.span());
  }
  return out.view({rows, static_cast<size_t>(diode::kNumFeatures)});
}

F32Matrix features_batch(ArrayArg problems_arg, ArrayArg problem_index_arg, ArrayArg configs,
                         ArrayArg hardware) {
  const auto problems = as_array<int64_t>(problems_arg, "problems", 2, diode::kNumProblemColumns);
  const auto problem_index = as_array<int64_t>(problem_index_arg, "problem_index", 1);
  return run({problems.data(), problems.size()}, {problem_index.data(), problem_index.size()},
             configs_array(configs), hardware);
}

F32Matrix features_one(ArrayArg problem_arg, ArrayArg configs, ArrayArg hardware) {
  const auto problem = as_array<int64_t>(problem_arg, "problem", 1, diode::kNumProblemColumns);
  // One problem row shared by every config row.
  const auto config_rows = configs_array(configs);
  const std::vector<int64_t> index(config_rows.shape(0), 0);
  return run({problem.data(), problem.size()}, index, config_rows, hardware);
}

nb::tuple feature_name_tuple() {
  nb::list names;
  for (const auto& spec : diode::kFeatures)
    names.append(nb::str(spec.name.data(), spec.name.size()));
  return nb::tuple(names);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "torch-diode C++ core: GEMM feature extraction, the inference engine, ranking metrics.";
  bind_model(m);
  bind_metrics(m);
  m.attr("FEATURE_VERSION") = diode::kFeatureVersion;
  m.attr("OLDEST_FEATURE_VERSION") = diode::kOldestFeatureVersion;
  m.def(
      "features_of_version", [](int version) { return diode::features_of_version(version); },
      nb::arg("version"),
      "How many features (the first of each row) a model of a feature version reads; 0 for a "
      "version this build cannot run.");
  m.attr("FEATURE_NAMES") = feature_name_tuple();
  m.def("feature_names", &diode::feature_names,
        "Names of the feature columns, in order (FEATURE_NAMES).");
  m.def("problem_columns", &diode::problem_columns, "Columns of a problem row (int64).");
  m.def("config_columns", &diode::config_columns, "Columns of a config row (int64).");
  m.def("hardware_columns", &diode::hardware_columns, "Entries of the hardware row (int64).");
  m.def("dtype_names", &diode::dtype_names, "Dtype codes: index = code.");
  m.def(
      "dtype_bytes",
      [](int64_t code) {
        if (code < 0 || code >= diode::kNumDTypes)
          throw std::invalid_argument("unknown dtype code " + std::to_string(code));
        return diode::dtype_bytes(static_cast<int32_t>(code));
      },
      nb::arg("dtype_code"), "Bytes per element of a dtype code.");
  m.def("row_alignment_log2", &diode::row_alignment_log2, nb::arg("leading_dim"),
        nb::arg("elem_bytes"),
        "log2 of the byte alignment (0-4: 1 to 16 bytes) of rows of leading_dim elements.");
  m.def("op_names", &diode::op_names, "Op codes: index = code.");
  m.def("template_kind_names", &diode::template_kind_names, "Template-kind codes.");
  m.def(
      "template_kind",
      [](const std::string& id) { return static_cast<int>(diode::template_kind(id)); },
      nb::arg("template_id"), "Template-kind code of a template id such as 'triton::mm'.");
  // Static: nanobind keeps the docstring's pointer.
  static const std::string shapes =
      "problem int64[" + std::to_string(diode::kNumProblemColumns) + "], configs int64[N, " +
      std::to_string(diode::kNumConfigColumns) + "], hardware int64[" +
      std::to_string(diode::kNumHardwareColumns) + "]";
  static const std::string shapes_doc = "Features of one problem with N configs on hardware (" +
                                        shapes +
                                        "): float32[N, F]. Bad input raises ValueError. Releases "
                                        "the GIL.";
  m.def("compute_features", &features_one, nb::arg("problem").none(), nb::arg("configs").none(),
        nb::arg("hardware").none(), shapes_doc.c_str());
  m.def("compute_features_batch", &features_batch, nb::arg("problems").none(),
        nb::arg("problem_index").none(), nb::arg("configs").none(), nb::arg("hardware").none(),
        "Features of config row i paired with problems[problem_index[i]]: float32[N, F]. Bad "
        "input raises ValueError. Releases the GIL.");
}
