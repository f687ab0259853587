// Ranking metrics for validating a GEMM kernel-runtime model.
//
// One "problem" is one GEMM shape with many candidate kernel configs. For every candidate we
// have its measured time and the model's prediction (a time, a log time, any score where lower
// means faster: only the ORDER of the predictions within a problem matters). The candidates of
// all problems are concatenated; problem p owns rows offsets[p] .. offsets[p+1]-1 (CSR style).
//
// Per problem, over the candidates that did not fail:
//   best_us          min measured time.
//   topk_perf[k]     best_us / (min measured time among the model's k best-predicted
//                    candidates), k clamped to the number of candidates. 1.0 means the model's
//                    top k contains the fastest candidate; 0.5 means the best of its top k is
//                    twice as slow as the fastest. Ties in the predicted order are broken by the
//                    lower row index (a stable sort).
//   top1_slowdown    1 / topk_perf[1]: the time of the model's first choice over the best time.
//   kendall_tau      Kendall's tau-b between predicted and measured (ties on either side
//                    handled). NaN with fewer than 2 candidates or when either side is constant.
//   num_candidates   the number of candidates that did not fail.
//
// Failed candidates: a candidate whose measured time is +inf failed to compile or run. Such rows
// are ignored entirely (they count nowhere, their prediction is irrelevant to the order). A
// problem with no finite candidate gets NaN in every floating-point metric and 0 candidates.
//
// Summaries over problems (geometric means, fractions) are left to Python.
#pragma once

#include <cstdint>
#include <span>

namespace diode {

// Where compute_ranking_metrics writes. Every span has P = offsets.size() - 1 entries except
// topk_perf, which has ks.size() * P entries, row-major: topk_perf[j * P + p] is the top-ks[j]
// performance of problem p.
struct RankingOutputs {
  std::span<double> best_us;
  std::span<double> top1_slowdown;
  std::span<double> kendall_tau;
  std::span<int64_t> num_candidates;
  std::span<double> topk_perf;
};

// Computes the per-problem metrics described above.
//
// measured:  N times (microseconds or any unit; only ratios are reported). Finite values must be
//            >= 0; +inf marks a failed candidate. NaN, -inf and negative values are rejected.
// predicted: N predictions; any non-NaN value (+-inf allowed, NaN rejected, also on failed rows).
// offsets:   P + 1 entries, offsets[0] == 0, non-decreasing, offsets[P] == N.
// ks:        the k values of topk_perf, each >= 1, no duplicates (any order).
//
// Validates every input first and throws std::invalid_argument with a message naming the
// argument (and the index) at fault; nothing is written when it throws. Touches no Python state,
// so callers may release the GIL around it.
void compute_ranking_metrics(std::span<const double> measured, std::span<const double> predicted,
                             std::span<const int64_t> offsets, std::span<const int64_t> ks,
                             const RankingOutputs& out);

// Kendall's tau-b of two equally long sequences in O(n log n) (Knight's algorithm), with the
// tie correction of tau-b. NaN when n < 2 or when x or y is constant. Throws
// std::invalid_argument when the lengths differ or a value is NaN. Symmetric in x and y.
double kendall_tau_b(std::span<const double> x, std::span<const double> y);

}  // namespace diode
