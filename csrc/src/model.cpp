#include "diode/model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "diode/features.h"

namespace diode {
namespace {

class Reader {
 public:
  Reader(const std::vector<uint8_t>& bytes, const std::string& source) : b_(bytes), src_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ModelFormatError(src_ + ": field '" + field + "': " + what);
  }
  void need(size_t n, const std::string& field) const {
    if (pos_ + n > b_.size())
      fail(field, "file is truncated (needs " + std::to_string(n) + " more bytes at offset " +
                      std::to_string(pos_) + ")");
  }
  template <class T>
  T scalar(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::vector<float> floats(size_t n, const std::string& field) {
    need(n * sizeof(float), field);
    std::vector<float> v(n);
    std::memcpy(v.data(), b_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    for (float x : v)
      if (!std::isfinite(x)) fail(field, "contains a non-finite value");
    return v;
  }
  std::string bytes(size_t n, const std::string& field) {
    need(n, field);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  const std::vector<uint8_t>& b_;
  const std::string& src_;
  size_t pos_ = 0;
};

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF): the
// metadata becomes a Python str.
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<uint8_t>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t hash) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

Model Model::load(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw ModelFormatError(path + ": field '<file>': is a directory, not a model file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelFormatError(path + ": field '<file>': cannot open");
  std::vector<uint8_t> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {
    throw ModelFormatError(path + ": field '<file>': cannot read (" + e.what() + ")");
  }
  return from_bytes(bytes, path);
}

Model Model::from_bytes(const std::vector<uint8_t>& b, const std::string& source) {
  Reader r(b, source);
  if (r.bytes(8, "magic") != "DIODEMDL") r.fail("magic", "not a torch-diode model file");
  const auto version = r.scalar<uint32_t>("format_version");
  if (version > kModelFormatVersion)
    r.fail("format_version", "file has format version " + std::to_string(version) +
                                 ", this build reads up to " + std::to_string(kModelFormatVersion) +
                                 ": upgrade torch-diode");
  if (version == 0) r.fail("format_version", "invalid version 0");
  const auto fv = r.scalar<uint32_t>("feature_version");
  if (fv < static_cast<uint32_t>(kOldestFeatureVersion) ||
      fv > static_cast<uint32_t>(kFeatureVersion))
    r.fail("feature_version", "model was trained on features version " + std::to_string(fv) +
                                  ", this build runs versions " +
                                  std::to_string(kOldestFeatureVersion) + " to " +
                                  std::to_string(kFeatureVersion));
  const auto members = version >= 2 ? r.scalar<uint32_t>("num_members") : 1u;
  if (members < 1 || members > 64)
    r.fail("num_members", "expected 1..64, got " + std::to_string(members));
  const auto layers = r.scalar<uint32_t>("num_layers");
  if (layers < 1 || layers > 64)
    r.fail("num_layers", "expected 1..64, got " + std::to_string(layers));
  Model m;
  m.feature_version_ = static_cast<int>(fv);
  for (uint32_t i = 0; i <= layers; ++i) {
    const auto d = r.scalar<uint32_t>("dims");
    if (d < 1 || d > 65536)
      r.fail("dims[" + std::to_string(i) + "]", "expected 1..65536, got " + std::to_string(d));
    m.dims_.push_back(d);
  }
  if (m.dims_.front() != static_cast<uint32_t>(features_of_version(m.feature_version_)))
    r.fail("dims[0]", "model takes " + std::to_string(m.dims_.front()) + " features, version " +
                          std::to_string(fv) + " has " +
                          std::to_string(features_of_version(m.feature_version_)));
  if (m.dims_.back() != 1)
    r.fail("dims[" + std::to_string(layers) + "]", "the last layer must have 1 output");
  if (r.scalar<uint32_t>("activation") != 0) r.fail("activation", "unknown activation (0 = ReLU)");
  const auto meta_len = r.scalar<uint64_t>("metadata_bytes");
  if (meta_len > b.size()) r.fail("metadata_bytes", "larger than the file");
  m.metadata_ = r.bytes(static_cast<size_t>(meta_len), "metadata");
  if (!valid_utf8(m.metadata_)) r.fail("metadata", "not valid UTF-8");
  const size_t nf = m.dims_.front();
  m.mean_ = r.floats(nf, "feature_mean");
  m.std_ = r.floats(nf, "feature_std");
  m.inv_std_.resize(nf);
  for (size_t i = 0; i < nf; ++i) {
    if (!(m.std_[i] > 0.f))
      r.fail("feature_std", "entry " + std::to_string(i) + " is not positive");
    m.inv_std_[i] = 1.f / m.std_[i];
  }
  m.target_mean_ = r.floats(1, "target_mean")[0];
  m.target_std_ = r.floats(1, "target_std")[0];
  if (!(m.target_std_ > 0.f)) r.fail("target_std", "is not positive");
  for (uint32_t k = 0; k < members; ++k) {
    const std::string prefix = members > 1 ? "members[" + std::to_string(k) + "]." : "";
    Member member;
    for (uint32_t l = 0; l < layers; ++l) {
      const size_t in = m.dims_[l], out = m.dims_[l + 1];
      auto w = r.floats(in * out, prefix + "layers[" + std::to_string(l) + "].weight");
      std::vector<float> wt(in * out);
      for (size_t o = 0; o < out; ++o)
        for (size_t i = 0; i < in; ++i) wt[i * out + o] = w[o * in + i];
      member.weight_t.push_back(std::move(wt));
      member.bias.push_back(r.floats(out, prefix + "layers[" + std::to_string(l) + "].bias"));
    }
    m.members_.push_back(std::move(member));
  }
  const size_t body = r.pos();
  const auto stored = r.scalar<uint64_t>("checksum");
  if (r.pos() != b.size())
    r.fail("checksum", std::to_string(b.size() - r.pos()) + " unexpected bytes after the checksum");
  if (fnv1a64(b.data(), body) != stored)
    r.fail("checksum", "does not match the contents (corrupt file)");
  return m;
}

std::vector<float> Model::weight(size_t layer, size_t member) const {
  const auto& wt = members_.at(member).weight_t.at(layer);
  const size_t in = dims_[layer], out = dims_[layer + 1];
  std::vector<float> w(in * out);
  for (size_t i = 0; i < in; ++i)
    for (size_t o = 0; o < out; ++o) w[o * in + i] = wt[i * out + o];
  return w;
}

namespace detail {
void dense_layer_avx2(const float*, size_t, size_t, const float*, const float*, size_t, float*,
                      bool);
void dense_layer_generic(const float*, size_t, size_t, const float*, const float*, size_t, float*,
                         bool);
}  // namespace detail

namespace {

using DenseFn = void (*)(const float*, size_t, size_t, const float*, const float*, size_t, float*,
                         bool);

// The same kernel (dense_kernel.h) built for AVX2+FMA and for the baseline; the CPU decides.
DenseFn pick_dense_layer() {
  // DIODE_GENERIC_KERNEL=1 forces the baseline kernel (the tests compare the two).
  if (const char* env = std::getenv("DIODE_GENERIC_KERNEL"); env != nullptr && env[0] == '1')
    return detail::dense_layer_generic;
#if defined(__x86_64__) && defined(DIODE_HAVE_AVX2_KERNEL)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return detail::dense_layer_avx2;
#endif
  return detail::dense_layer_generic;
}

const DenseFn dense_layer = pick_dense_layer();

}  // namespace

void Model::predict_members(std::span<const float> x, std::span<float> out) const {
  const size_t nf = dims_.front();  // the first nf of every row's row_width features
  constexpr size_t row_width = kNumFeatures;
  if (x.size() % row_width != 0)
    throw std::invalid_argument("features must be an N x " + std::to_string(row_width) + " matrix");
  const size_t rows = x.size() / row_width;
  if (out.size() != rows * members_.size())
    throw std::invalid_argument("output has the wrong size");
  if (rows == 0) return;
  // A feature equal in every row (the problem's own, and those no candidate sets) adds the same
  // to the first layer of every row: that share joins the layer's bias once, and the layer runs
  // over the other features only.
  std::vector<size_t> varying;
  std::vector<float> fixed_input(nf, 0.f);  // normalised value of each feature equal in every row
  for (size_t i = 0; i < nf; ++i) {
    bool same = true;
    for (size_t r = 1; r < rows && same; ++r) same = x[r * row_width + i] == x[i];
    if (same)
      fixed_input[i] = (x[i] - mean_[i]) * inv_std_[i];
    else
      varying.push_back(i);
  }
  const size_t nv = varying.size(), h1 = dims_[1];
  std::vector<float> first_weight_t(members_.size() * nv * h1), first_bias(members_.size() * h1);
  for (size_t k = 0; k < members_.size(); ++k) {
    const float* wt = members_[k].weight_t[0].data();
    float* bias = first_bias.data() + k * h1;
    std::copy(members_[k].bias[0].begin(), members_[k].bias[0].end(), bias);
    for (size_t i = 0, j = 0; i < nf; ++i) {
      if (j < nv && varying[j] == i) {
        std::copy(wt + i * h1, wt + (i + 1) * h1, first_weight_t.data() + (k * nv + j) * h1);
        ++j;
      } else if (fixed_input[i] != 0.f) {
        for (size_t o = 0; o < h1; ++o) bias[o] += fixed_input[i] * wt[i * h1 + o];
      }
    }
  }
  size_t widest = 0;
  for (auto d : dims_) widest = std::max<size_t>(widest, d);
  // rows per block: activations stay in L1/L2, and a multiple of the dense kernel's 6-row tile
  constexpr size_t kBlock = 120;
  std::vector<float> input(kBlock * std::max<size_t>(nv, 1)), a(kBlock * widest),
      next(kBlock * widest);
  const size_t layers = dims_.size() - 1;
  for (size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const size_t nr = std::min(kBlock, rows - r0);
    for (size_t r = 0; r < nr; ++r)
      for (size_t j = 0; j < nv; ++j) {
        const size_t i = varying[j];
        input[r * nv + j] = (x[(r0 + r) * row_width + i] - mean_[i]) * inv_std_[i];
      }
    for (size_t k = 0; k < members_.size(); ++k) {
      const Member& member = members_[k];
      const float* in = input.data();
      for (size_t l = 0; l < layers; ++l) {
        const bool first = l == 0;
        dense_layer(in, nr, first ? nv : dims_[l],
                    first ? first_weight_t.data() + k * nv * h1 : member.weight_t[l].data(),
                    first ? first_bias.data() + k * h1 : member.bias[l].data(), dims_[l + 1],
                    next.data(), l + 1 < layers);
        std::swap(a, next);
        in = a.data();
      }
      for (size_t r = 0; r < nr; ++r) out[k * rows + r0 + r] = a[r] * target_std_ + target_mean_;
    }
  }
}

void Model::predict_features(std::span<const float> x, std::span<float> out) const {
  constexpr size_t row_width = kNumFeatures;
  if (x.size() % row_width != 0)
    throw std::invalid_argument("features must be an N x " + std::to_string(row_width) + " matrix");
  const size_t rows = x.size() / row_width;
  if (out.size() != rows) throw std::invalid_argument("output has the wrong size");
  if (members_.size() == 1) {
    predict_members(x, out);
    return;
  }
  std::vector<float> all(rows * members_.size());
  predict_members(x, all);
  const float scale = 1.f / static_cast<float>(members_.size());
  for (size_t r = 0; r < rows; ++r) {
    float sum = 0.f;
    for (size_t k = 0; k < members_.size(); ++k) sum += all[k * rows + r];
    out[r] = sum * scale;
  }
}

void Model::predict(std::span<const int64_t> problem, std::span<const int64_t> configs,
                    std::span<const int64_t> hardware, std::span<float> out) const {
  const size_t rows = configs.size() / kNumConfigColumns;
  std::vector<int64_t> index(rows, 0);
  std::vector<float> features(rows * kNumFeatures);
  compute_features(problem, index, configs, hardware, features);
  predict_features(features, out);
}

}  // namespace diode
