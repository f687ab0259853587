#include "diode/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace diode {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::to_string(v);
}

// Reusable scratch space, sized once for the largest problem.
struct Scratch {
  std::vector<size_t> rows;                      // finite rows of the problem, ascending
  std::vector<size_t> order;                     // those rows by (predicted, row)
  std::vector<std::pair<double, double>> pairs;  // (x, y) for Kendall
  std::vector<double> ys, buf;                   // merge-sort buffers for Kendall
};

// Counts the pairs i < j with a[i] > a[j] (strict: equal values are no inversion) and leaves `a`
// sorted ascending. Bottom-up merge sort; `buf` is scratch of at least a.size() entries.
int64_t sort_count_inversions(std::vector<double>& a, std::vector<double>& buf) {
  const size_t n = a.size();
  buf.resize(n);
  int64_t inversions = 0;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      const size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (a[j] < a[i]) {
          buf[k++] = a[j++];
          inversions += static_cast<int64_t>(mid - i);
        } else {
          buf[k++] = a[i++];
        }
      }
      while (i < mid) buf[k++] = a[i++];
      while (j < hi) buf[k++] = a[j++];
    }
    a.swap(buf);
  }
  return inversions;
}

// Sum over runs of equal values in a sorted range of t * (t - 1) / 2.
template <class It, class Eq>
int64_t tied_pairs(It first, It last, Eq eq) {
  int64_t total = 0;
  while (first != last) {
    It run = first;
    while (run != last && eq(*run, *first)) ++run;
    const auto t = static_cast<int64_t>(run - first);
    total += t * (t - 1) / 2;
    first = run;
  }
  return total;
}

// Knight's O(n log n) tau-b on the (x, y) pairs in s.pairs (reordered in place).
double kendall_pairs(Scratch& s) {
  auto& v = s.pairs;
  const auto n = static_cast<int64_t>(v.size());
  if (n < 2) return kNaN;
  std::sort(v.begin(), v.end());  // by x, then y
  // Pairs tied in x, and pairs tied in both x and y.
  const int64_t x_ties = tied_pairs(
      v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first == b.first; });
  const int64_t xy_ties = tied_pairs(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first == b.first && a.second == b.second;
  });
  // With the pairs sorted by (x, y), a strict inversion in y is exactly a discordant pair (pairs
  // tied in x are sorted by y, so they contribute none).
  s.ys.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) s.ys[i] = v[i].second;
  const int64_t discordant = sort_count_inversions(s.ys, s.buf);
  const int64_t y_ties =
      tied_pairs(s.ys.begin(), s.ys.end(), [](double a, double b) { return a == b; });
  const int64_t total = n * (n - 1) / 2;
  if (x_ties == total || y_ties == total) return kNaN;  // a constant side
  // concordant - discordant = total - x_ties - y_ties + xy_ties - 2 * discordant
  const int64_t diff = total - x_ties - y_ties + xy_ties - 2 * discordant;
  const double tau = static_cast<double>(diff) / std::sqrt(static_cast<double>(total - x_ties) *
                                                           static_cast<double>(total - y_ties));
  return std::clamp(tau, -1.0, 1.0);
}

// best / candidate, with equal values giving exactly 1 (also 0 / 0).
double ratio(double best, double candidate) {
  if (candidate == best) return 1.0;
  return best / candidate;
}

void validate(std::span<const double> measured, std::span<const double> predicted,
              std::span<const int64_t> offsets, std::span<const int64_t> ks,
              const RankingOutputs& out) {
  const size_t n = measured.size();
  if (predicted.size() != n)
    fail("predicted has " + std::to_string(predicted.size()) + " entries, measured has " +
         std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const double m = measured[i];
    if (std::isnan(m)) fail("measured[" + std::to_string(i) + "] is NaN");
    if (m < 0)
      fail("measured[" + std::to_string(i) + "] is " + num(m) +
           ": times must be >= 0 (+inf marks a failed candidate)");
    if (std::isnan(predicted[i])) fail("predicted[" + std::to_string(i) + "] is NaN");
  }
  if (offsets.empty()) fail("offsets must have P + 1 >= 1 entries, got an empty array");
  if (offsets[0] != 0) fail("offsets[0] must be 0, got " + std::to_string(offsets[0]));
  for (size_t p = 1; p < offsets.size(); ++p) {
    if (offsets[p] < offsets[p - 1])
      fail("offsets must be non-decreasing: offsets[" + std::to_string(p) +
           "] = " + std::to_string(offsets[p]) + " < offsets[" + std::to_string(p - 1) +
           "] = " + std::to_string(offsets[p - 1]));
    if (offsets[p] > static_cast<int64_t>(n))
      fail("offsets[" + std::to_string(p) + "] = " + std::to_string(offsets[p]) +
           " is out of range: measured has " + std::to_string(n) + " entries");
  }
  if (offsets.back() != static_cast<int64_t>(n))
    fail("offsets[-1] must equal the number of rows " + std::to_string(n) + ", got " +
         std::to_string(offsets.back()));
  for (size_t j = 0; j < ks.size(); ++j) {
    if (ks[j] < 1)
      fail("ks[" + std::to_string(j) + "] = " + std::to_string(ks[j]) + ", expected k >= 1");
    for (size_t i = 0; i < j; ++i)
      if (ks[i] == ks[j]) fail("ks has the value " + std::to_string(ks[j]) + " twice");
  }
  const size_t P = offsets.size() - 1;
  auto check_out = [&](size_t got, size_t want, const char* name) {
    if (got != want)
      fail(std::string("output ") + name + " has " + std::to_string(got) + " entries, expected " +
           std::to_string(want));
  };
  check_out(out.best_us.size(), P, "best_us");
  check_out(out.top1_slowdown.size(), P, "top1_slowdown");
  check_out(out.kendall_tau.size(), P, "kendall_tau");
  check_out(out.num_candidates.size(), P, "num_candidates");
  check_out(out.topk_perf.size(), ks.size() * P, "topk_perf");
}

}  // namespace

double kendall_tau_b(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size())
    fail("kendall_tau_b: x has " + std::to_string(x.size()) + " entries, y has " +
         std::to_string(y.size()));
  Scratch s;
  s.pairs.reserve(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) fail("kendall_tau_b: x[" + std::to_string(i) + "] is NaN");
    if (std::isnan(y[i])) fail("kendall_tau_b: y[" + std::to_string(i) + "] is NaN");
    s.pairs.emplace_back(x[i], y[i]);
  }
  return kendall_pairs(s);
}

void compute_ranking_metrics(std::span<const double> measured, std::span<const double> predicted,
                             std::span<const int64_t> offsets, std::span<const int64_t> ks,
                             const RankingOutputs& out) {
  validate(measured, predicted, offsets, ks, out);
  const size_t P = offsets.size() - 1;
  Scratch s;
  std::vector<double> prefix_min;
  for (size_t p = 0; p < P; ++p) {
    const auto begin = static_cast<size_t>(offsets[p]), end = static_cast<size_t>(offsets[p + 1]);
    s.rows.clear();
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(measured[i])) s.rows.push_back(i);
    const size_t n = s.rows.size();
    out.num_candidates[p] = static_cast<int64_t>(n);
    if (n == 0) {
      out.best_us[p] = out.top1_slowdown[p] = out.kendall_tau[p] = kNaN;
      for (size_t j = 0; j < ks.size(); ++j) out.topk_perf[j * P + p] = kNaN;
      continue;
    }

    double best = measured[s.rows[0]];
    for (size_t i : s.rows) best = std::min(best, measured[i]);
    if (best == 0.0) best = 0.0;  // -0.0 is a zero time too: x / -0.0 would be -inf
    out.best_us[p] = best;

    // The model's order: by prediction, ties by row (rows are ascending, the sort is stable).
    s.order.assign(s.rows.begin(), s.rows.end());
    std::stable_sort(s.order.begin(), s.order.end(),
                     [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
    prefix_min.resize(n);
    double run = measured[s.order[0]];
    for (size_t r = 0; r < n; ++r) prefix_min[r] = run = std::min(run, measured[s.order[r]]);
    for (size_t j = 0; j < ks.size(); ++j) {
      const size_t k = std::min(static_cast<size_t>(ks[j]), n);
      out.topk_perf[j * P + p] = ratio(best, prefix_min[k - 1]);
    }
    // = 1 / top1 perf, computed directly to avoid a second rounding.
    const double first = prefix_min[0];
    out.top1_slowdown[p] = first == best ? 1.0 : first / best;

    s.pairs.clear();
    for (size_t i : s.rows) s.pairs.emplace_back(predicted[i], measured[i]);
    out.kendall_tau[p] = kendall_pairs(s);
  }
}

}  // namespace diode
