// The inference engine: loads a torch-diode model file and predicts log runtimes.
//
// Model file, format version 2 (all integers and floats little-endian):
//   char[8]  magic "DIODEMDL"
//   u32      format_version (2)
//   u32      feature_version        kOldestFeatureVersion..kFeatureVersion of this build
//   u32      num_members K          MLPs of the same dims (an ensemble), 1..64
//   u32      num_layers L           Linear layers, ReLU between them
//   u32      dims[L + 1]            dims[0] = features_of_version(feature_version), dims[L] = 1
//   u32      activation             0 = ReLU
//   u64      metadata_bytes         length of the JSON metadata that follows
//   u8       metadata[metadata_bytes]   UTF-8 JSON for Python and people; the engine skips it
//   f32      feature_mean[dims[0]], feature_std[dims[0]], target_mean, target_std (shared)
//   per member, per layer l: f32 weight[dims[l+1]][dims[l]] (row-major, out x in), f32
//   bias[dims[l+1]] u64      FNV-1a 64-bit hash of every byte before it
// Format version 1 is the same without num_members (one member); this build reads both.
// Member k's prediction for a feature row x is
//   mlp_k((x - feature_mean) / feature_std) * target_std + target_mean = predicted ln(time_us);
// the model's prediction is the mean over members.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "diode/features.h"

namespace diode {

inline constexpr uint32_t kModelFormatVersion = 2;

// A model file that cannot be used: names the file and the field at fault.
class ModelFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t hash = 1469598103934665603ull);

class Model {
 public:
  static Model load(const std::string& path);
  static Model from_bytes(const std::vector<uint8_t>& bytes, const std::string& source);

  // The features the model reads: the first num_features() of the extractor's rows.
  int num_features() const { return static_cast<int>(dims_.front()); }
  int feature_version() const { return feature_version_; }
  const std::vector<uint32_t>& dims() const { return dims_; }
  const std::string& metadata_json() const { return metadata_; }
  const std::vector<float>& feature_mean() const { return mean_; }
  const std::vector<float>& feature_std() const { return std_; }
  float target_mean() const { return target_mean_; }
  float target_std() const { return target_std_; }
  size_t num_members() const { return members_.size(); }
  // out x in, row-major, as stored in the file
  std::vector<float> weight(size_t layer, size_t member = 0) const;
  const std::vector<float>& bias(size_t layer, size_t member = 0) const {
    return members_.at(member).bias.at(layer);
  }

  // ln(time_us) for each row of a rows x kNumFeatures matrix (compute_features's rows; a model of
  // an older feature version reads their first num_features()): the mean over members.
  // Thread-safe (const).
  void predict_features(std::span<const float> features, std::span<float> out) const;
  // Every member's ln(time_us): out is num_members() x rows (member-major), one pass over the rows.
  void predict_members(std::span<const float> features, std::span<float> out) const;
  // Features from the C++ feature extractor, then predict_features: one problem, N configs.
  void predict(std::span<const int64_t> problem, std::span<const int64_t> configs,
               std::span<const int64_t> hardware, std::span<float> out) const;

 private:
  int feature_version_ = kFeatureVersion;
  std::vector<uint32_t> dims_;
  std::vector<float> mean_, std_, inv_std_;
  float target_mean_ = 0.f, target_std_ = 1.f;
  struct Member {
    std::vector<std::vector<float>> weight_t;  // per layer, transposed: in x out
    std::vector<std::vector<float>> bias;
  };
  std::vector<Member> members_;
  std::string metadata_;
};

}  // namespace diode
