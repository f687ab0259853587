// torch_diode._C.Model: the inference engine's Python face (numpy in, numpy out, GIL released).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "diode/features.h"
#include "diode/model.h"

namespace nb = nanobind;

namespace {

using AnyI64 = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using F32Matrix = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32Out = nb::ndarray<nb::numpy, float, nb::ndim<1>>;

F32Out make_out(size_t rows, float** data) {
  *data = new float[rows + 1];
  nb::capsule owner(*data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  return F32Out(*data, {rows}, owner);
}

nb::ndarray<nb::numpy, float> to_numpy(const std::vector<float>& v, std::initializer_list<size_t> shape) {
  float* data = new float[v.size() + 1];
  std::copy(v.begin(), v.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  return nb::ndarray<nb::numpy, float>(data, shape, owner);
}

}  // namespace

void bind_model(nb::module_& m) {
  nb::exception<diode::ModelFormatError>(m, "ModelFormatError", PyExc_ValueError);
  m.attr("MODEL_FORMAT_VERSION") = diode::kModelFormatVersion;
  m.def("fnv1a64", [](nb::bytes data) {
    return diode::fnv1a64(reinterpret_cast<const uint8_t*>(data.c_str()), data.size());
  }, "FNV-1a 64-bit hash (the model file's checksum).");

  nb::class_<diode::Model>(m, "Model", "A loaded torch-diode model: predicts ln(time_us).")
      .def_static("load", &diode::Model::load, nb::arg("path"), "Loads a model file; ModelFormatError names the field at fault.")
      .def_static(
          "from_bytes",
          [](nb::bytes data, const std::string& source) {
            std::vector<uint8_t> b(reinterpret_cast<const uint8_t*>(data.c_str()),
                                   reinterpret_cast<const uint8_t*>(data.c_str()) + data.size());
            return diode::Model::from_bytes(b, source);
          },
          nb::arg("data"), nb::arg("source") = "<bytes>")
      .def_prop_ro("num_features", &diode::Model::num_features)
      .def_prop_ro("dims", &diode::Model::dims)
      .def_prop_ro("metadata_json", &diode::Model::metadata_json)
      .def("feature_mean", [](const diode::Model& s) { return to_numpy(s.feature_mean(), {s.feature_mean().size()}); })
      .def("feature_std", [](const diode::Model& s) { return to_numpy(s.feature_std(), {s.feature_std().size()}); })
      .def_prop_ro("target_mean", &diode::Model::target_mean)
      .def_prop_ro("target_std", &diode::Model::target_std)
      .def("weight", [](const diode::Model& s, size_t l) {
        if (l + 1 >= s.dims().size()) throw std::invalid_argument("no layer " + std::to_string(l));
        return to_numpy(s.weight(l), {s.dims()[l + 1], s.dims()[l]}); }, nb::arg("layer"), "float32[out, in]")
      .def("bias", [](const diode::Model& s, size_t l) {
        if (l + 1 >= s.dims().size()) throw std::invalid_argument("no layer " + std::to_string(l));
        return to_numpy(s.bias(l), {s.dims()[l + 1]}); }, nb::arg("layer"), "float32[out]")
      .def(
          "predict_features",
          [](const diode::Model& self, const F32Matrix& x) {
            if (x.shape(1) != static_cast<size_t>(self.num_features()))
              throw std::invalid_argument("features must have " + std::to_string(self.num_features()) + " columns, got " + std::to_string(x.shape(1)));
            float* data;
            auto out = make_out(x.shape(0), &data);
            {
              nb::gil_scoped_release release;
              self.predict_features({x.data(), x.size()}, {data, x.shape(0)});
            }
            return out;
          },
          nb::arg("features"), "ln(time_us) for each row of a float32[N, F] feature matrix.")
      .def(
          "predict",
          [](const diode::Model& self, const AnyI64& problem, const AnyI64& configs, const AnyI64& hardware) {
            if (problem.ndim() != 1 || problem.shape(0) != diode::kNumProblemColumns)
              throw std::invalid_argument("problem must be int64[" + std::to_string(diode::kNumProblemColumns) + "]");
            if (configs.ndim() != 2 || configs.shape(1) != diode::kNumConfigColumns)
              throw std::invalid_argument("configs must be int64[N, " + std::to_string(diode::kNumConfigColumns) + "]");
            if (hardware.ndim() != 1) throw std::invalid_argument("hardware must be a 1-D int64 array");
            float* data;
            auto out = make_out(configs.shape(0), &data);
            {
              nb::gil_scoped_release release;
              self.predict({problem.data(), problem.size()}, {configs.data(), configs.size()},
                           {hardware.data(), hardware.size()}, {data, configs.shape(0)});
            }
            return out;
          },
          nb::arg("problem"), nb::arg("configs"), nb::arg("hardware"),
          "Features (C++) and predictions for one problem and N configs in one call: float32[N] ln(time_us).");
}
