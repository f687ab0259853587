// Randomized inputs to the core (run under AddressSanitizer and UBSan by `make test-cpp`): every
// call either succeeds with sane outputs or throws the documented error type; nothing else.
// Seeded, so every run feeds the same inputs. DIODE_FUZZ_ITERATIONS=N runs N cases per test
// instead of the default (a longer search: `DIODE_FUZZ_ITERATIONS=200000 make test-cpp`).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "diode/features.h"
#include "diode/metrics.h"
#include "diode/model.h"

namespace {

int iterations(int default_count) {
  const char* env = std::getenv("DIODE_FUZZ_ITERATIONS");
  return env != nullptr ? std::max(1, std::atoi(env)) : default_count;
}

class Fuzz : public ::testing::Test {
 protected:
  std::mt19937_64 rng{20240611};

  uint64_t bits() { return rng(); }
  bool coin(int one_in = 2) { return rng() % static_cast<uint64_t>(one_in) == 0; }
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  // A value in the valid range [lo, hi] most of the time, else one from the edges of int64.
  int64_t column(int64_t lo, int64_t hi) {
    static constexpr int64_t kEdges[] = {std::numeric_limits<int64_t>::min(),
                                         -1,
                                         0,
                                         1,
                                         int64_t{1} << 31,
                                         int64_t{1} << 40,
                                         (int64_t{1} << 40) + 1,
                                         int64_t{1} << 62,
                                         std::numeric_limits<int64_t>::max()};
    if (!coin(8)) return uniform(lo, hi);
    return coin() ? kEdges[uniform(0, std::size(kEdges) - 1)] : static_cast<int64_t>(bits());
  }
  double real() {
    static constexpr double kEdges[] = {0.0,
                                        -0.0,
                                        1e-300,
                                        -1.0,
                                        1e300,
                                        -1e300,
                                        std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::denorm_min()};
    if (coin(6)) return kEdges[uniform(0, std::size(kEdges) - 1)];
    return std::uniform_real_distribution<double>(0.0, 1000.0)(rng);
  }
  // A size near `size`: usually exact, sometimes off by a little.
  size_t near(size_t size) {
    if (!coin(10)) return size;
    return static_cast<size_t>(std::max<int64_t>(0, static_cast<int64_t>(size) + uniform(-2, 2)));
  }

  std::vector<int64_t> problem_row() {
    std::vector<int64_t> p(near(diode::kNumProblemColumns));
    const int64_t bounds[][2] = {{0, 3}, {1, 64},      {1, 1 << 16}, {1, 1 << 16}, {1, 1 << 16},
                                 {0, 7}, {0, 7},       {0, 7},       {0, 1},       {0, 1},
                                 {0, 1}, {1, 1 << 16}, {1, 1 << 16}, {1, 1 << 16}};
    for (size_t i = 0; i < p.size(); ++i) {
      const auto& b = bounds[i % std::size(bounds)];
      p[i] = column(b[0], b[1]);
    }
    return p;
  }
  std::vector<int64_t> config_rows(size_t rows) {
    std::vector<int64_t> c(near(rows * diode::kNumConfigColumns));
    for (size_t r = 0; r * diode::kNumConfigColumns < c.size(); ++r) {
      const bool tiled = !coin(4);
      const int64_t v[] = {uniform(0, 8),
                           tiled ? 16 << uniform(0, 4) : 0,
                           tiled ? 16 << uniform(0, 4) : 0,
                           tiled ? 16 << uniform(0, 4) : 0,
                           tiled ? uniform(1, 16) : 0,
                           tiled ? uniform(1, 8) : 0,
                           tiled ? 1 << uniform(0, 4) : 0,
                           uniform(0, 1),
                           uniform(0, 1),
                           uniform(0, 1),
                           coin(4) ? int64_t{1} << uniform(1, 10) : 0};
      for (size_t j = 0;
           j < diode::kNumConfigColumns && r * diode::kNumConfigColumns + j < c.size(); ++j)
        c[r * diode::kNumConfigColumns + j] = coin(30) ? column(0, 1) : v[j];
    }
    return c;
  }
  std::vector<int64_t> hardware() {
    std::vector<int64_t> h(near(diode::kNumHardwareColumns));
    for (auto& v : h) v = column(1, 1 << 20);
    return h;
  }
};

std::vector<uint8_t> shipped_model() {
  std::ifstream f(DIODE_SOURCE_DIR "/src/torch_diode/models/NVIDIA-H100-matmul.diode",
                  std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The checksum recomputed after a mutation, so that the parser's checks behind it are reached.
void reseal(std::vector<uint8_t>& b) {
  if (b.size() < 8) return;
  const uint64_t sum = diode::fnv1a64(b.data(), b.size() - 8);
  for (int i = 0; i < 8; ++i) b[b.size() - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

TEST_F(Fuzz, FeaturesAreFiniteOrTheInputIsRejected) {
  int accepted = 0, rejected = 0;
  for (int it = 0; it < iterations(3000); ++it) {
    const size_t n_problems = static_cast<size_t>(uniform(1, 3));
    std::vector<int64_t> problems;
    for (size_t p = 0; p < n_problems; ++p) {
      auto row = problem_row();
      problems.insert(problems.end(), row.begin(), row.end());
    }
    const size_t rows = static_cast<size_t>(uniform(0, 6));
    auto configs = config_rows(rows);
    std::vector<int64_t> index(near(rows));
    for (auto& i : index)
      i = coin(20) ? column(0, 0) : uniform(0, static_cast<int64_t>(n_problems) - 1);
    const auto hw = hardware();
    const size_t out_rows = configs.size() / diode::kNumConfigColumns;
    // Filled with NaN: a column the extractor forgot to write stays NaN and fails below.
    std::vector<float> out(near(out_rows * diode::kNumFeatures), std::nanf(""));
    try {
      diode::compute_features(problems, index, configs, hw, out);
    } catch (const std::invalid_argument&) {
      ++rejected;
      continue;
    }
    ++accepted;
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_TRUE(std::isfinite(out[i]))
          << "feature " << diode::kFeatures[i % diode::kNumFeatures].name << " of row "
          << i / diode::kNumFeatures << " is " << out[i];
  }
  // Both outcomes are exercised.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

TEST_F(Fuzz, RowAlignmentOfAnySizes) {
  for (int it = 0; it < iterations(3000); ++it) {
    const int64_t ld = coin() ? column(1, 1 << 20) : static_cast<int64_t>(bits());
    const int elem = static_cast<int>(coin() ? uniform(-1, 9) : static_cast<int32_t>(bits()));
    if (ld < 1 || elem < 1) {
      EXPECT_THROW(diode::row_alignment_log2(ld, elem), std::invalid_argument);
      continue;
    }
    // The reference: the largest power of two (up to 16) dividing the exact 128-bit product.
    const unsigned __int128 bytes =
        static_cast<unsigned __int128>(ld) * static_cast<unsigned>(elem);
    int expected = 0;
    while (expected < 4 && bytes % (static_cast<unsigned __int128>(2) << expected) == 0) ++expected;
    ASSERT_EQ(diode::row_alignment_log2(ld, elem), expected) << ld << " x " << elem;
  }
}

TEST_F(Fuzz, MutatedModelFilesLoadOrRaiseModelFormatError) {
  const auto original = shipped_model();
  ASSERT_GT(original.size(), 64u) << "the shipped model is missing";
  const size_t header = 8 + 4 * 3;  // magic, format_version, feature_version, num_layers
  int loaded = 0, rejected = 0;
  for (int it = 0; it < iterations(400); ++it) {
    auto b = original;
    const int mutations = static_cast<int>(uniform(1, 4));
    for (int k = 0; k < mutations; ++k) {
      switch (uniform(0, 5)) {
        case 0:  // a random byte anywhere
          if (b.empty()) break;
          b[uniform(0, static_cast<int64_t>(b.size()) - 1)] = static_cast<uint8_t>(bits());
          break;
        case 1: {  // a u32 of the header or the dims (and the metadata length) set to an edge
          if (b.size() < header + 4 * 8 + 4) break;
          const uint32_t edges[] = {0, 1, 2, 62, 63, 64, 65, 65536, 65537, 0x7fffffff, 0xffffffff};
          const size_t at = static_cast<size_t>(uniform(8, header + 4 * 8));
          const uint32_t v = edges[uniform(0, std::size(edges) - 1)];
          for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
          break;
        }
        case 2:  // truncated
          b.resize(static_cast<size_t>(uniform(0, static_cast<int64_t>(b.size()))));
          break;
        case 3:  // bytes appended
          for (int i = 0, n = static_cast<int>(uniform(1, 16)); i < n; ++i)
            b.push_back(static_cast<uint8_t>(bits()));
          break;
        case 4: {  // a float set to NaN, inf, 0 or a huge value
          if (b.size() < 8) break;
          const float edges[] = {std::nanf(""), INFINITY, -INFINITY, 0.f, -1.f, 3e38f, 1e-45f};
          const float v = edges[uniform(0, std::size(edges) - 1)];
          const size_t at =
              static_cast<size_t>(uniform(0, static_cast<int64_t>(b.size()) - 4)) & ~size_t{3};
          std::memcpy(b.data() + at, &v, 4);
          break;
        }
        default:  // random bytes of any length
          b.resize(static_cast<size_t>(uniform(0, 96)));
          for (auto& x : b) x = static_cast<uint8_t>(bits());
          if (coin()) std::copy_n("DIODEMDL", std::min<size_t>(8, b.size()), b.begin());
      }
    }
    if (!coin(4)) reseal(b);
    try {
      const auto model = diode::Model::from_bytes(b, "fuzz.diode");
      ++loaded;
      // A model that loads predicts on valid features without fault (any float comes out).
      std::vector<float> x(3 * static_cast<size_t>(diode::num_features())), out(3);
      for (auto& v : x) v = static_cast<float>(real());
      model.predict_features(x, out);
    } catch (const diode::ModelFormatError&) {
      ++rejected;
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

TEST_F(Fuzz, ModelPredictOnRandomInputs) {
  const auto model = diode::Model::from_bytes(shipped_model(), "shipped");
  for (int it = 0; it < iterations(1000); ++it) {
    const auto problem = problem_row();
    const auto configs = config_rows(static_cast<size_t>(uniform(0, 5)));
    const auto hw = hardware();
    std::vector<float> out(near(configs.size() / diode::kNumConfigColumns));
    try {
      model.predict(problem, configs, hw, out);
    } catch (const std::invalid_argument&) {
      continue;
    }
    for (float v : out) ASSERT_TRUE(std::isfinite(v));
  }
  // Any float features (NaN and inf included) and any length.
  for (int it = 0; it < iterations(1000); ++it) {
    std::vector<float> x(near(static_cast<size_t>(uniform(0, 3)) * diode::kNumFeatures));
    for (auto& v : x) v = static_cast<float>(real());
    std::vector<float> out(near(x.size() / diode::kNumFeatures));
    try {
      model.predict_features(x, out);
    } catch (const std::invalid_argument&) {
    }
  }
}

TEST_F(Fuzz, RankingMetricsOfAnyInput) {
  int accepted = 0, rejected = 0;
  for (int it = 0; it < iterations(2000); ++it) {
    const size_t n = static_cast<size_t>(uniform(0, 12));
    std::vector<double> measured(n), predicted(near(n));
    for (auto& v : measured)
      v = coin(8) ? real() : std::uniform_real_distribution<double>(0, 10)(rng);
    for (auto& v : predicted)
      v = coin(8) ? real() : std::uniform_real_distribution<double>(-5, 5)(rng);
    std::vector<int64_t> offsets = {0};
    while (offsets.back() < static_cast<int64_t>(n) && coin(8) == false)
      offsets.push_back(std::min<int64_t>(n, offsets.back() + uniform(0, 4)));
    if (offsets.back() != static_cast<int64_t>(n)) offsets.push_back(static_cast<int64_t>(n));
    if (coin(10)) offsets[uniform(0, offsets.size() - 1)] = column(0, static_cast<int64_t>(n));
    if (coin(20)) offsets.clear();
    std::vector<int64_t> ks;
    for (int i = 0, k = static_cast<int>(uniform(0, 4)); i < k; ++i) ks.push_back(column(1, 20));
    const size_t P = offsets.empty() ? 0 : offsets.size() - 1;
    std::vector<double> best(P), slowdown(P), tau(P), topk(ks.size() * P);
    std::vector<int64_t> count(P);
    try {
      diode::compute_ranking_metrics(measured, predicted, offsets, ks,
                                     {best, slowdown, tau, count, topk});
    } catch (const std::invalid_argument&) {
      ++rejected;
      continue;
    }
    ++accepted;
    for (size_t p = 0; p < P; ++p) {
      ASSERT_LE(count[p], offsets[p + 1] - offsets[p]);
      if (count[p] == 0) continue;
      ASSERT_GE(slowdown[p], 1.0);
      ASSERT_TRUE(std::isnan(tau[p]) || std::abs(tau[p]) <= 1.0);
      for (size_t j = 0; j < ks.size(); ++j) {
        const double perf = topk[j * P + p];
        ASSERT_TRUE(std::isnan(perf) || (perf >= 0.0 && perf <= 1.0)) << perf;
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
