#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "diode/features.h"
#include "diode/model.h"

namespace {

using diode::Model;
using diode::ModelFormatError;

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8);
}
void put_f32(std::vector<uint8_t>& b, float v) {
  b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
}

// A model F -> H -> 1 with weight[h][i] = (h + 1) * 0.01 * (i % 3), bias 0.1 * h; mean 0.5, std 2.
// A model of an older feature version takes that version's features (`inputs`: how many, if not).
std::vector<uint8_t> make_model(uint32_t hidden = 5,
                                uint32_t feature_version = diode::kFeatureVersion,
                                uint32_t inputs = 0) {
  const int of_version = diode::features_of_version(static_cast<int>(feature_version));
  const uint32_t nf =
      inputs ? inputs : static_cast<uint32_t>(of_version ? of_version : diode::num_features());
  std::vector<uint8_t> b = {'D', 'I', 'O', 'D', 'E', 'M', 'D', 'L'};
  put_u32(b, 1);
  put_u32(b, feature_version);
  put_u32(b, 2);
  put_u32(b, nf);
  put_u32(b, hidden);
  put_u32(b, 1);
  put_u32(b, 0);
  const std::string meta = "{\"model_family\": \"test\"}";
  put_u64(b, meta.size());
  b.insert(b.end(), meta.begin(), meta.end());
  for (uint32_t i = 0; i < nf; ++i) put_f32(b, 0.5f);
  for (uint32_t i = 0; i < nf; ++i) put_f32(b, 2.0f);
  put_f32(b, 3.0f);  // target mean
  put_f32(b, 1.5f);  // target std
  for (uint32_t h = 0; h < hidden; ++h)
    for (uint32_t i = 0; i < nf; ++i) put_f32(b, (h + 1) * 0.01f * static_cast<float>(i % 3));
  for (uint32_t h = 0; h < hidden; ++h) put_f32(b, 0.1f * h - 0.15f);
  for (uint32_t h = 0; h < hidden; ++h) put_f32(b, h % 2 ? 0.5f : -0.25f);
  put_f32(b, 0.05f);
  put_u64(b, diode::fnv1a64(b.data(), b.size()));
  return b;
}

// The same MLP in format version 2 with `members` members, member k's output bias 0.05 + 0.1 k.
std::vector<uint8_t> make_ensemble(uint32_t members, uint32_t hidden = 5) {
  const uint32_t nf = static_cast<uint32_t>(diode::num_features());
  std::vector<uint8_t> b = {'D', 'I', 'O', 'D', 'E', 'M', 'D', 'L'};
  put_u32(b, 2);
  put_u32(b, diode::kFeatureVersion);
  put_u32(b, members);
  put_u32(b, 2);
  put_u32(b, nf);
  put_u32(b, hidden);
  put_u32(b, 1);
  put_u32(b, 0);
  put_u64(b, 2);
  b.push_back('{');
  b.push_back('}');
  for (uint32_t i = 0; i < nf; ++i) put_f32(b, 0.5f);
  for (uint32_t i = 0; i < nf; ++i) put_f32(b, 2.0f);
  put_f32(b, 3.0f);
  put_f32(b, 1.5f);
  for (uint32_t k = 0; k < members; ++k) {
    for (uint32_t h = 0; h < hidden; ++h)
      for (uint32_t i = 0; i < nf; ++i) put_f32(b, (h + 1) * 0.01f * static_cast<float>(i % 3));
    for (uint32_t h = 0; h < hidden; ++h) put_f32(b, 0.1f * h - 0.15f);
    for (uint32_t h = 0; h < hidden; ++h) put_f32(b, h % 2 ? 0.5f : -0.25f);
    put_f32(b, 0.05f + 0.1f * k);
  }
  put_u64(b, diode::fnv1a64(b.data(), b.size()));
  return b;
}

float reference(const std::vector<float>& x, uint32_t hidden) {
  const size_t nf = x.size();
  float out = 0.05f;
  for (uint32_t h = 0; h < hidden; ++h) {
    float z = 0.1f * h - 0.15f;
    for (size_t i = 0; i < nf; ++i)
      z += (h + 1) * 0.01f * static_cast<float>(i % 3) * ((x[i] - 0.5f) / 2.0f);
    out += (z > 0 ? z : 0) * (h % 2 ? 0.5f : -0.25f);
  }
  return out * 1.5f + 3.0f;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    Model::from_bytes(bytes, "m.diode");
  } catch (const ModelFormatError& e) {
    return e.what();
  }
  return "";
}

TEST(Model, PredictsTheMlpOfTheFile) {
  for (uint32_t hidden : {5u, 16u, 37u}) {  // around the kernel's 8/16-column blocks
    const auto m = Model::from_bytes(make_model(hidden), "m.diode");
    EXPECT_EQ(m.metadata_json(), "{\"model_family\": \"test\"}");
    const size_t nf = diode::num_features(), rows = 11;  // not a multiple of the 6-row tiles
    std::vector<float> x(rows * nf), out(rows);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    m.predict_features(x, out);
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> row(x.begin() + r * nf, x.begin() + (r + 1) * nf);
      EXPECT_NEAR(out[r], reference(row, hidden), 1e-4f) << "hidden " << hidden << " row " << r;
    }
  }
}

// The engine adds the share of the features equal in every row to the first layer's bias once:
// rows where some features vary and others do not (zero or not), over several 120-row blocks, one
// row, and rows all alike predict as the plain MLP.
TEST(Model, FeaturesEqualInEveryRowPredictAsTheMlp) {
  const size_t nf = diode::num_features();
  for (uint32_t hidden : {5u, 37u}) {
    const auto m = Model::from_bytes(make_model(hidden), "m.diode");
    for (size_t rows : {1ul, 3ul, 300ul}) {
      for (bool all_alike : {false, true}) {
        std::vector<float> x(rows * nf), out(rows);
        for (size_t r = 0; r < rows; ++r)
          for (size_t i = 0; i < nf; ++i) {
            const bool same = all_alike || i % 4 == 0 || i % 7 == 0;
            const float v = same ? (i % 8 == 0 ? 0.f : std::cos(0.3f * i))
                                 : std::sin(0.37f * static_cast<float>(r * nf + i));
            x[r * nf + i] = v;
          }
        m.predict_features(x, out);
        for (size_t r = 0; r < rows; ++r) {
          std::vector<float> row(x.begin() + r * nf, x.begin() + (r + 1) * nf);
          EXPECT_NEAR(out[r], reference(row, hidden), 1e-4f)
              << "hidden " << hidden << " rows " << rows << " alike " << all_alike << " row " << r;
        }
      }
    }
  }
}

TEST(Model, CorruptFilesNameTheField) {
  auto bytes = make_model();
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(error_of(bad).find("field 'magic'"), std::string::npos);
  EXPECT_NE(error_of(make_model(5, diode::kFeatureVersion + 1)).find("field 'feature_version'"),
            std::string::npos);
  bad = bytes;
  bad[bad.size() - 20] ^= 0xFF;  // a weight byte
  EXPECT_NE(error_of(bad).find("field 'checksum'"), std::string::npos);
  bad = std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2));
  EXPECT_NE(error_of(bad).find("truncated"), std::string::npos);
  bad = bytes;
  bad.push_back(0);
  EXPECT_NE(error_of(bad).find("unexpected bytes"), std::string::npos);
  EXPECT_NE(error_of({}).find("m.diode"), std::string::npos);
  bad = std::vector<uint8_t>(bytes.begin(), bytes.end() - 8);
  bad[44] =
      0xFF;  // the metadata's first byte (after magic, 3 + 3 u32, activation, length): not UTF-8
  put_u64(bad, diode::fnv1a64(bad.data(), bad.size()));
  EXPECT_NE(error_of(bad).find("field 'metadata': not valid UTF-8"), std::string::npos);
  EXPECT_THROW(Model::load("/nonexistent/model.diode"), ModelFormatError);
}

TEST(Model, AModelOfAnOlderFeatureVersionReadsTheFirstFeaturesOfEachRow) {
  // Version 2 models (62 features) predate decompose_k's split features, appended by version 3.
  const auto m = Model::from_bytes(make_model(16, diode::kOldestFeatureVersion), "m.diode");
  const size_t old_nf = diode::features_of_version(diode::kOldestFeatureVersion);
  ASSERT_EQ(old_nf, 62u);
  EXPECT_EQ(m.num_features(), 62);
  EXPECT_EQ(m.feature_version(), diode::kOldestFeatureVersion);
  const size_t nf = diode::num_features(), rows = 5;
  std::vector<float> x(rows * nf), out(rows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  m.predict_features(x, out);
  for (size_t r = 0; r < rows; ++r) {
    std::vector<float> row(x.begin() + r * nf, x.begin() + r * nf + old_nf);
    EXPECT_NEAR(out[r], reference(row, 16), 1e-4f) << "row " << r;
  }
  // The features it was not trained on change nothing.
  auto changed = x;
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = old_nf; i < nf; ++i) changed[r * nf + i] += 7.f;
  std::vector<float> again(rows);
  m.predict_features(changed, again);
  EXPECT_EQ(out, again);
  // A file whose dims disagree with its feature version, or of a version before the oldest.
  EXPECT_NE(error_of(make_model(5, diode::kOldestFeatureVersion, diode::num_features()))
                .find("field 'dims[0]'"),
            std::string::npos);
  EXPECT_NE(
      error_of(make_model(5, diode::kOldestFeatureVersion - 1, 62)).find("field 'feature_version'"),
      std::string::npos);
}

TEST(Model, RejectsWrongShapes) {
  const auto m = Model::from_bytes(make_model(), "m.diode");
  std::vector<float> x(diode::num_features() + 1), out(1);
  EXPECT_THROW(m.predict_features(x, out), std::invalid_argument);
}

}  // namespace

namespace {

TEST(Model, LoadingADirectoryIsAModelFormatError) {
  try {
    diode::Model::load("/");
    FAIL() << "loaded a directory";
  } catch (const diode::ModelFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Model, AnEnsemblePredictsEveryMemberAndTheirMean) {
  for (uint32_t hidden : {5u, 16u}) {
    const uint32_t members = 3;
    const auto m = Model::from_bytes(make_ensemble(members, hidden), "e.diode");
    ASSERT_EQ(m.num_members(), members);
    const size_t nf = diode::num_features(), rows = 131;  // more than one 120-row block
    std::vector<float> x(rows * nf), each(members * rows), mean(rows);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.21f * static_cast<float>(i));
    m.predict_members(x, each);
    m.predict_features(x, mean);
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> row(x.begin() + r * nf, x.begin() + (r + 1) * nf);
      const float base = reference(row, hidden);
      for (uint32_t k = 0; k < members; ++k)
        EXPECT_NEAR(each[k * rows + r], base + 0.15f * k, 1e-4f) << "member " << k << " row " << r;
      EXPECT_NEAR(mean[r], base + 0.15f, 1e-4f);
    }
    std::vector<float> wrong(rows);
    EXPECT_THROW(m.predict_members(x, wrong), std::invalid_argument);
  }
}

TEST(Model, AVersionOneFileIsOneMember) {
  const auto m = Model::from_bytes(make_model(), "m.diode");
  EXPECT_EQ(m.num_members(), 1u);
  EXPECT_EQ(m.weight(0), m.weight(0, 0));
  EXPECT_THROW(m.weight(0, 1), std::out_of_range);
}

TEST(Model, AnEnsembleFileNamesItsFields) {
  auto zero = make_ensemble(2);
  const uint32_t none = 0;
  std::memcpy(zero.data() + 16, &none, 4);
  EXPECT_NE(error_of(zero).find("num_members"), std::string::npos) << error_of(zero);
  auto cut = make_ensemble(2);
  cut.resize(cut.size() - 20);
  EXPECT_NE(error_of(cut).find("members[1]"), std::string::npos) << error_of(cut);
}
