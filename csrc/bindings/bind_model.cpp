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

#include "arrays.h"

namespace nb = nanobind;
using diode::py::ArrayArg;
using diode::py::as_array;
using diode::py::to_numpy;

namespace {

// The number of layer `layer` of a model, or ValueError.
size_t layer_index(const diode::Model& model, int64_t layer) {
  const auto layers = static_cast<int64_t>(model.dims().size()) - 1;
  if (layer < 0 || layer >= layers)
    throw std::invalid_argument("layer " + std::to_string(layer) + " out of range: the model has " +
                                std::to_string(layers) + " layers");
  return static_cast<size_t>(layer);
}

// The number of member `member` of a model, or ValueError.
size_t member_index(const diode::Model& model, int64_t member) {
  if (member < 0 || member >= static_cast<int64_t>(model.num_members()))
    throw std::invalid_argument("member " + std::to_string(member) +
                                " out of range: the model has " +
                                std::to_string(model.num_members()) + " members");
  return static_cast<size_t>(member);
}

}  // namespace

void bind_model(nb::module_& m) {
  nb::exception<diode::ModelFormatError>(m, "ModelFormatError", PyExc_ValueError);
  m.attr("MODEL_FORMAT_VERSION") = diode::kModelFormatVersion;
  m.def(
      "fnv1a64",
      [](nb::bytes data) {
        return diode::fnv1a64(reinterpret_cast<const uint8_t*>(data.c_str()), data.size());
      },
      "FNV-1a 64-bit hash (the model file's checksum).");

  nb::class_<diode::Model>(m, "Model", "A loaded torch-diode model: predicts ln(time_us).")
      .def_static("load", &diode::Model::load, nb::arg("path"),
                  "Loads a model file; ModelFormatError names the field at fault.")
      .def_static(
          "from_bytes",
          [](nb::bytes data, const std::string& source) {
            std::vector<uint8_t> b(reinterpret_cast<const uint8_t*>(data.c_str()),
                                   reinterpret_cast<const uint8_t*>(data.c_str()) + data.size());
            return diode::Model::from_bytes(b, source);
          },
          nb::arg("data"), nb::arg("source") = "<bytes>")
      .def_prop_ro("num_features", &diode::Model::num_features,
                   "features the model reads: the first ones of each feature row")
      .def_prop_ro("feature_version", &diode::Model::feature_version)
      .def_prop_ro("dims", &diode::Model::dims)
      .def_prop_ro("metadata_json", &diode::Model::metadata_json)
      .def(
          "feature_mean",
          [](const diode::Model& s) {
            return to_numpy<float>(s.feature_mean(), {s.feature_mean().size()});
          },
          "float32[F]")
      .def(
          "feature_std",
          [](const diode::Model& s) {
            return to_numpy<float>(s.feature_std(), {s.feature_std().size()});
          },
          "float32[F]")
      .def_prop_ro("target_mean", &diode::Model::target_mean)
      .def_prop_ro("target_std", &diode::Model::target_std)
      .def_prop_ro("num_members", &diode::Model::num_members)
      .def(
          "weight",
          [](const diode::Model& s, int64_t layer, int64_t member) {
            const size_t l = layer_index(s, layer), k = member_index(s, member);
            return to_numpy<float>(s.weight(l, k), {s.dims()[l + 1], s.dims()[l]});
          },
          nb::arg("layer"), nb::arg("member") = 0, "float32[out, in]")
      .def(
          "bias",
          [](const diode::Model& s, int64_t layer, int64_t member) {
            const size_t l = layer_index(s, layer), k = member_index(s, member);
            return to_numpy<float>(s.bias(l, k), {s.dims()[l + 1]});
          },
          nb::arg("layer"), nb::arg("member") = 0, "float32[out]")
      .def(
          "predict_members",
          [](const diode::Model& self, ArrayArg features) {
            const auto x = as_array<float>(features, "features", 2,
                                           static_cast<size_t>(diode::num_features()));
            diode::py::NumpyBuffer<float> out(self.num_members() * x.shape(0));
            {
              nb::gil_scoped_release release;
              self.predict_members({x.data(), x.size()}, out.span());
            }
            return out.view({self.num_members(), x.shape(0)});
          },
          nb::arg("features").none(),
          "Every member's ln(time_us): float32[K, N] for a float32[N, F] feature matrix (F: every "
          "feature of this build; a model of an older feature version reads the first ones).")
      .def(
          "predict_features",
          [](const diode::Model& self, ArrayArg features) {
            const auto x = as_array<float>(features, "features", 2,
                                           static_cast<size_t>(diode::num_features()));
            diode::py::NumpyBuffer<float> out(x.shape(0));
            {
              nb::gil_scoped_release release;
              self.predict_features({x.data(), x.size()}, out.span());
            }
            return out.view({x.shape(0)});
          },
          nb::arg("features").none(),
          "ln(time_us) for each row of a float32[N, F] feature matrix (the mean over members).")
      .def(
          "predict",
          [](const diode::Model& self, ArrayArg problem_arg, ArrayArg configs_arg,
             ArrayArg hardware_arg) {
            const auto problem =
                as_array<int64_t>(problem_arg, "problem", 1, diode::kNumProblemColumns);
            const auto configs =
                as_array<int64_t>(configs_arg, "configs", 2, diode::kNumConfigColumns);
            const auto hardware = as_array<int64_t>(hardware_arg, "hardware", 1);
            diode::py::NumpyBuffer<float> out(configs.shape(0));
            {
              nb::gil_scoped_release release;
              self.predict({problem.data(), problem.size()}, {configs.data(), configs.size()},
                           {hardware.data(), hardware.size()}, out.span());
            }
            return out.view({configs.shape(0)});
          },
          nb::arg("problem").none(), nb::arg("configs").none(), nb::arg("hardware").none(),
          "Features (C++) and predictions for one problem and N configs in one call: float32[N] "
          "ln(time_us).");
}
