#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "diode/metrics.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Result {
  std::vector<double> best, slowdown, tau;
  std::vector<int64_t> count;
  std::vector<double> topk;  // ks.size() x P
  size_t P = 0;
  double perf(size_t j, size_t p) const { return topk[j * P + p]; }
};

Result run(const std::vector<double>& measured, const std::vector<double>& predicted,
           const std::vector<int64_t>& offsets, const std::vector<int64_t>& ks) {
  Result r;
  r.P = offsets.empty() ? 0 : offsets.size() - 1;
  r.best.assign(r.P, -1);
  r.slowdown.assign(r.P, -1);
  r.tau.assign(r.P, -1);
  r.count.assign(r.P, -1);
  r.topk.assign(ks.size() * r.P, -1);
  diode::compute_ranking_metrics(measured, predicted, offsets, ks,
                                 {r.best, r.slowdown, r.tau, r.count, r.topk});
  return r;
}

// O(n^2) tau-b straight from the definition, for checking the O(n log n) one.
double brute_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  double con = 0, dis = 0, tx = 0, ty = 0, pairs = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      ++pairs;
      // Signs by comparison (a difference would give NaN for inf - inf).
      const int sx = (x[i] > x[j]) - (x[i] < x[j]), sy = (y[i] > y[j]) - (y[i] < y[j]);
      if (sx == 0) ++tx;
      if (sy == 0) ++ty;
      if (sx * sy > 0) ++con;
      if (sx * sy < 0) ++dis;
    }
  if (n < 2 || tx == pairs || ty == pairs) return kNaN;
  return (con - dis) / std::sqrt((pairs - tx) * (pairs - ty));
}

std::string message_of(const std::vector<double>& measured, const std::vector<double>& predicted,
                       const std::vector<int64_t>& offsets, const std::vector<int64_t>& ks) {
  try {
    run(measured, predicted, offsets, ks);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

TEST(KendallTau, PerfectAndReversedOrder) {
  std::vector<double> x = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(diode::kendall_tau_b(x, std::vector<double>{10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(diode::kendall_tau_b(x, std::vector<double>{5, 4, 3, 2, 1}), -1.0);
}

TEST(KendallTau, KnownValueWithTies) {
  // scipy.stats.kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) = -0.47140452079103173
  std::vector<double> x = {12, 2, 1, 12, 2}, y = {1, 4, 7, 1, 0};
  EXPECT_NEAR(diode::kendall_tau_b(x, y), -0.47140452079103173, 1e-15);
  EXPECT_NEAR(diode::kendall_tau_b(y, x), -0.47140452079103173, 1e-15);
  // 4 items, one swapped pair out of 6: (5 - 1) / 6.
  EXPECT_NEAR(
      diode::kendall_tau_b(std::vector<double>{1, 2, 3, 4}, std::vector<double>{1, 3, 2, 4}),
      4.0 / 6.0, 1e-15);
}

TEST(KendallTau, DegenerateCasesAreNaN) {
  EXPECT_TRUE(std::isnan(diode::kendall_tau_b(std::vector<double>{}, std::vector<double>{})));
  EXPECT_TRUE(std::isnan(diode::kendall_tau_b(std::vector<double>{1}, std::vector<double>{2})));
  EXPECT_TRUE(
      std::isnan(diode::kendall_tau_b(std::vector<double>{3, 3, 3}, std::vector<double>{1, 2, 3})));
  EXPECT_TRUE(
      std::isnan(diode::kendall_tau_b(std::vector<double>{1, 2, 3}, std::vector<double>{7, 7, 7})));
  EXPECT_THROW(diode::kendall_tau_b(std::vector<double>{1, 2}, std::vector<double>{1}),
               std::invalid_argument);
  EXPECT_THROW(diode::kendall_tau_b(std::vector<double>{1, kNaN}, std::vector<double>{1, 2}),
               std::invalid_argument);
}

TEST(KendallTau, InfinitiesOrderLikeNumbers) {
  std::vector<double> x = {-kInf, 0, kInf, kInf}, y = {1, 2, 3, 3};
  EXPECT_NEAR(diode::kendall_tau_b(x, y), brute_tau_b(x, y), 1e-15);
  EXPECT_NEAR(diode::kendall_tau_b(x, y), 1.0, 1e-15);
}

TEST(KendallTau, MatchesBruteForceOnRandomDataWithTies) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 2 + rng() % (trial < 150 ? 40 : 600);
    const int levels_x = 1 + static_cast<int>(rng() % 12),
              levels_y = 1 + static_cast<int>(rng() % 12);
    const bool continuous = trial % 3 == 0;
    std::vector<double> x(n), y(n);
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t i = 0; i < n; ++i) {
      x[i] = continuous ? u(rng) : static_cast<double>(rng() % levels_x);
      y[i] = continuous ? x[i] + 0.3 * u(rng) : static_cast<double>(rng() % levels_y);
    }
    const double want = brute_tau_b(x, y), got = diode::kendall_tau_b(x, y);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "trial " << trial;
    } else {
      EXPECT_NEAR(got, want, 1e-12) << "trial " << trial << " n " << n;
    }
  }
}

TEST(RankingMetrics, HandMadeProblem) {
  // Rows:       0    1    2     3    4
  // measured:   4    2    inf   1    3
  // predicted:  0.1  0.2  0.0   0.3  0.4   (row 2 failed: ignored although predicted first)
  // The model's order over the finite rows: 0, 1, 3, 4 -> measured 4, 2, 1, 3.
  auto r = run({4, 2, kInf, 1, 3}, {0.1, 0.2, 0.0, 0.3, 0.4}, {0, 5}, {1, 2, 3, 10});
  EXPECT_EQ(r.count[0], 4);
  EXPECT_DOUBLE_EQ(r.best[0], 1.0);
  EXPECT_DOUBLE_EQ(r.perf(0, 0), 1.0 / 4.0);  // top1: 4
  EXPECT_DOUBLE_EQ(r.perf(1, 0), 1.0 / 2.0);  // top2: min(4, 2)
  EXPECT_DOUBLE_EQ(r.perf(2, 0), 1.0);        // top3 contains the best
  EXPECT_DOUBLE_EQ(r.perf(3, 0), 1.0);        // k clamped to 4
  EXPECT_DOUBLE_EQ(r.slowdown[0], 4.0);
  // Measured in predicted order: 4, 2, 1, 3. Concordant pairs: (2,3), (1,3); the other 4 are
  // discordant, no ties -> tau = (2 - 4) / 6.
  EXPECT_NEAR(r.tau[0], -2.0 / 6.0, 1e-15);
}

TEST(RankingMetrics, SeveralProblemsAndKOrder) {
  // Problem 0: rows 0..2, perfect model. Problem 1: rows 3..3, one candidate. Problem 2: empty.
  // Problem 3: rows 4..5, both failed.
  auto r = run({1, 2, 3, 7, kInf, kInf}, {1, 2, 3, 5, 1, 2}, {0, 3, 4, 4, 6}, {5, 1});
  ASSERT_EQ(r.P, 4u);
  EXPECT_EQ(r.count, (std::vector<int64_t>{3, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(r.best[0], 1.0);
  EXPECT_DOUBLE_EQ(r.best[1], 7.0);
  EXPECT_DOUBLE_EQ(r.tau[0], 1.0);
  EXPECT_TRUE(std::isnan(r.tau[1]));  // one candidate
  EXPECT_DOUBLE_EQ(r.perf(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(r.perf(1, 1), 1.0);
  EXPECT_DOUBLE_EQ(r.slowdown[1], 1.0);
  for (size_t p : {2u, 3u}) {
    EXPECT_TRUE(std::isnan(r.best[p]));
    EXPECT_TRUE(std::isnan(r.slowdown[p]));
    EXPECT_TRUE(std::isnan(r.tau[p]));
    EXPECT_TRUE(std::isnan(r.perf(0, p)));
    EXPECT_TRUE(std::isnan(r.perf(1, p)));
  }
}

TEST(RankingMetrics, PredictedTiesAreBrokenByRowIndex) {
  // All predictions equal: the model's first choice is row 0.
  auto r = run({5, 1, 2}, {0, 0, 0}, {0, 3}, {1, 2});
  EXPECT_DOUBLE_EQ(r.perf(0, 0), 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(r.perf(1, 0), 1.0);
  EXPECT_DOUBLE_EQ(r.slowdown[0], 5.0);
  EXPECT_TRUE(std::isnan(r.tau[0]));  // constant predictions
  // The tie is broken by row, not by measured time: rows 1 and 2 tie after row 0.
  auto s = run({5, 3, 1, 9}, {0, 1, 1, 2}, {0, 4}, {2});
  EXPECT_DOUBLE_EQ(s.perf(0, 0), 1.0 / 3.0);
}

TEST(RankingMetrics, FailedRowsChangeNothing) {
  auto a = run({3, 1, 2}, {2, 3, 1}, {0, 3}, {1, 2});
  auto b = run({kInf, 3, kInf, 1, 2, kInf}, {-kInf, 2, 0, 3, 1, 100}, {0, 6}, {1, 2});
  EXPECT_EQ(b.count[0], 3);
  EXPECT_DOUBLE_EQ(a.best[0], b.best[0]);
  EXPECT_DOUBLE_EQ(a.slowdown[0], b.slowdown[0]);
  EXPECT_DOUBLE_EQ(a.tau[0], b.tau[0]);
  EXPECT_DOUBLE_EQ(a.perf(0, 0), b.perf(0, 0));
  EXPECT_DOUBLE_EQ(a.perf(1, 0), b.perf(1, 0));
  EXPECT_DOUBLE_EQ(a.slowdown[0], 2.0);  // predicted-first row has measured 2, best 1
}

TEST(RankingMetrics, ZeroTimes) {
  auto r = run({0, 0, 1}, {2, 1, 0}, {0, 3}, {1, 2});
  EXPECT_DOUBLE_EQ(r.best[0], 0.0);
  EXPECT_DOUBLE_EQ(r.perf(0, 0), 0.0);  // model picks the 1, best is 0
  EXPECT_TRUE(std::isinf(r.slowdown[0]));
  EXPECT_DOUBLE_EQ(r.perf(1, 0), 1.0);  // 0 / 0 among equals counts as 1
}

TEST(RankingMetrics, NoProblems) {
  auto r = run({}, {}, {0}, {1});
  EXPECT_EQ(r.P, 0u);
}

TEST(RankingMetrics, BadArgumentsThrowInvalidArgument) {
  const std::vector<double> m = {1, 2, 3}, p = {1, 2, 3};
  const std::vector<int64_t> off = {0, 3}, ks = {1};
  EXPECT_NE(message_of(m, {1, 2}, off, ks).find("predicted has 2 entries"), std::string::npos);
  EXPECT_NE(message_of({1, kNaN, 3}, p, off, ks).find("measured[1] is NaN"), std::string::npos);
  EXPECT_NE(message_of({1, -kInf, 3}, p, off, ks).find("measured[1]"), std::string::npos);
  EXPECT_NE(message_of({1, -2, 3}, p, off, ks).find("measured[1]"), std::string::npos);
  EXPECT_NE(message_of(m, {1, 2, kNaN}, off, ks).find("predicted[2] is NaN"), std::string::npos);
  // NaN is rejected also on a failed row.
  EXPECT_NE(message_of({1, kInf, 3}, {1, kNaN, 3}, off, ks).find("predicted[1] is NaN"),
            std::string::npos);
  EXPECT_NE(message_of(m, p, {}, ks).find("offsets"), std::string::npos);
  EXPECT_NE(message_of(m, p, {1, 3}, ks).find("offsets[0] must be 0"), std::string::npos);
  EXPECT_NE(message_of(m, p, {0, 2}, ks).find("offsets[-1] must equal"), std::string::npos);
  EXPECT_NE(message_of(m, p, {0, 2, 1, 3}, ks).find("non-decreasing"), std::string::npos);
  EXPECT_NE(message_of(m, p, {0, 4, 3}, ks).find("offsets[1] = 4 is out of range"),
            std::string::npos);
  EXPECT_NE(message_of(m, p, off, {1, 0}).find("ks[1] = 0"), std::string::npos);
  EXPECT_NE(message_of(m, p, off, {-3}).find("ks[0] = -3"), std::string::npos);
  EXPECT_NE(message_of(m, p, off, {5, 5}).find("ks has the value 5 twice"), std::string::npos);
  // Wrong output sizes.
  std::vector<double> one(1), none;
  std::vector<int64_t> c(1);
  EXPECT_THROW(diode::compute_ranking_metrics(m, p, off, ks, {one, one, one, c, none}),
               std::invalid_argument);
}

}  // namespace

namespace {

TEST(RankingMetrics, NegativeZeroIsAZeroTime) {
  // The best time is -0.0; the first pick (1.0) is infinitely slower, never -inf.
  const auto r = run({1.0, -0.0}, {0.0, 1.0}, {0, 2}, {1, 2});
  EXPECT_EQ(r.best[0], 0.0);
  EXPECT_FALSE(std::signbit(r.best[0]));
  EXPECT_EQ(r.slowdown[0], kInf);
  EXPECT_EQ(r.perf(0, 0), 0.0);
  EXPECT_EQ(r.perf(1, 0), 1.0);
}

}  // namespace
