"""The C++ ranking metrics (torch_diode._C.ranking_metrics) against an independent numpy reference.

The reference below is written from the definitions of the metrics (per problem: drop failed
candidates, stable argsort of the predictions, O(n^2) Kendall tau-b over all pairs), never by
calling _C. Hand-made cases with known answers pin the definitions themselves.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from torch_diode import _C

KS = (1, 5, 10, 20, 50)
BASE_KEYS = {"best_us", "top1_slowdown", "kendall_tau", "num_candidates"}


# ----------------------------------------------------------------------------------------------
# Reference implementation (tests only).
# ----------------------------------------------------------------------------------------------
def ref_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    if n < 2:
        return math.nan
    iu = np.triu_indices(n, k=1)
    sx = _cmp_sign(x)[iu]
    sy = _cmp_sign(y)[iu]
    pairs = n * (n - 1) // 2
    tx = int((sx == 0).sum())
    ty = int((sy == 0).sum())
    if tx == pairs or ty == pairs:
        return math.nan
    s = int((sx * sy).sum())  # concordant - discordant
    return s / math.sqrt((pairs - tx) * (pairs - ty))


def _cmp_sign(v: np.ndarray) -> np.ndarray:
    # Sign of v[i] - v[j] by comparison (inf - inf would be NaN).
    return (v[:, None] > v[None, :]).astype(np.int64) - (v[:, None] < v[None, :]).astype(np.int64)


def reference(measured, predicted, offsets, ks):
    P = len(offsets) - 1
    out = {
        "best_us": np.full(P, np.nan),
        "top1_slowdown": np.full(P, np.nan),
        "kendall_tau": np.full(P, np.nan),
        "num_candidates": np.zeros(P, np.int64),
    }
    for k in ks:
        out[f"top{k}_perf"] = np.full(P, np.nan)
    for p in range(P):
        m = measured[offsets[p] : offsets[p + 1]]
        pr = predicted[offsets[p] : offsets[p + 1]]
        ok = np.isfinite(m)
        m, pr = m[ok], pr[ok]
        n = len(m)
        out["num_candidates"][p] = n
        if n == 0:
            continue
        best = m.min()
        out["best_us"][p] = best
        order = np.argsort(pr, kind="stable")
        for k in ks:
            chosen = m[order[: min(k, n)]].min()
            out[f"top{k}_perf"][p] = 1.0 if chosen == best else best / chosen
        first = m[order[0]]
        out["top1_slowdown"][p] = 1.0 if first == best else first / best
        out["kendall_tau"][p] = ref_tau_b(pr, m)
    return out


def assert_same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert isinstance(g, np.ndarray), key
        assert g.dtype == w.dtype and g.shape == w.shape, (key, g.dtype, g.shape)
        if g.dtype == np.int64:
            np.testing.assert_array_equal(g, w, err_msg=key)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=key)


def random_case(seed: int, n_problems: int = 80, max_candidates: int = 120):
    """Problems of random size (0 included) with failures, ties in both columns, and a model
    whose predictions are a noisy log of the truth (sometimes rounded, to make ties)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, max_candidates + 1, n_problems)
    sizes[:3] = (0, 1, 2)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    measured = np.exp(rng.normal(3.0, 1.0, n))
    measured[rng.random(n) < 0.1] = np.inf  # failed candidates
    round_m = rng.random(n) < 0.3
    measured[round_m] = np.round(measured[round_m])  # ties in measured
    predicted = np.log1p(np.where(np.isfinite(measured), measured, 1e3)) + rng.normal(0, 0.5, n)
    round_p = rng.random(n) < 0.3
    predicted[round_p] = np.round(predicted[round_p], 1)  # ties in predicted
    # An all-failed problem and a problem with constant predictions.
    if n_problems > 5:
        measured[offsets[4] : offsets[5]] = np.inf
        predicted[offsets[5] : offsets[6]] = 7.0
    return measured, predicted, offsets


# ----------------------------------------------------------------------------------------------
# Against the reference.
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_reference_on_random_problems(seed):
    measured, predicted, offsets = random_case(seed)
    got = _C.ranking_metrics(measured, predicted, offsets, list(KS))
    assert set(got) == BASE_KEYS | {f"top{k}_perf" for k in KS}
    assert_same(got, reference(measured, predicted, offsets, KS))


def test_matches_reference_on_one_large_problem():
    rng = np.random.default_rng(7)
    n = 3000
    measured = rng.integers(1, 200, n).astype(np.float64)  # many ties
    predicted = measured + rng.normal(0, 30, n)
    offsets = np.array([0, n], np.int64)
    ks = [1, 3, 100, 5000]
    assert_same(_C.ranking_metrics(measured, predicted, offsets, ks), reference(measured, predicted, offsets, ks))


def test_kendall_tau_matches_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    measured, predicted, offsets = random_case(11, n_problems=20)
    tau = _C.ranking_metrics(measured, predicted, offsets, [])["kendall_tau"]
    for p in range(len(offsets) - 1):
        m = measured[offsets[p] : offsets[p + 1]]
        pr = predicted[offsets[p] : offsets[p + 1]]
        ok = np.isfinite(m)
        if ok.sum() < 2:
            assert math.isnan(tau[p])
            continue
        want = stats.kendalltau(pr[ok], m[ok]).statistic
        np.testing.assert_allclose(tau[p], want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_predictions_only_matter_by_order():
    measured, predicted, offsets = random_case(5)
    a = _C.ranking_metrics(measured, predicted, offsets, list(KS))
    b = _C.ranking_metrics(measured, np.exp(predicted) * 3.0 - 1.0, offsets, list(KS))
    assert_same(b, a)


# ----------------------------------------------------------------------------------------------
# Hand-made cases.
# ----------------------------------------------------------------------------------------------
def test_hand_made_problem():
    # Finite rows in the model's order: 0, 1, 3, 4 with measured 4, 2, 1, 3. Row 2 failed: it is
    # ignored although the model ranks it first.
    measured = np.array([4.0, 2.0, np.inf, 1.0, 3.0])
    predicted = np.array([0.1, 0.2, 0.0, 0.3, 0.4])
    r = _C.ranking_metrics(measured, predicted, np.array([0, 5], np.int64), [1, 2, 3, 10])
    assert r["num_candidates"].tolist() == [4]
    assert r["best_us"].tolist() == [1.0]
    assert r["top1_perf"].tolist() == [0.25]
    assert r["top2_perf"].tolist() == [0.5]
    assert r["top3_perf"].tolist() == [1.0]
    assert r["top10_perf"].tolist() == [1.0]  # k clamped to the 4 candidates
    assert r["top1_slowdown"].tolist() == [4.0]
    # Concordant pairs (2,3), (1,3); 4 discordant; no ties: (2 - 4) / 6.
    assert r["kendall_tau"][0] == pytest.approx(-1 / 3, abs=1e-15)


def test_perfect_and_reversed_models():
    measured = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0])
    predicted = np.array([1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0])
    r = _C.ranking_metrics(measured, predicted, np.array([0, 4, 7], np.int64), [1, 2, 3])
    assert r["kendall_tau"].tolist() == [1.0, -1.0]
    assert r["top1_perf"].tolist() == [1.0, 10.0 / 30.0]
    assert r["top2_perf"].tolist() == [1.0, 0.5]
    assert r["top3_perf"].tolist() == [1.0, 1.0]
    assert r["top1_slowdown"].tolist() == [1.0, 3.0]


def test_known_tau_b_with_ties():
    # scipy.stats.kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) = -0.47140452079103173
    # measured [2, 5, 8, 2, 1] has the order of [1, 4, 7, 1, 0]; tau-b is symmetric.
    r = _C.ranking_metrics(
        np.array([2.0, 5.0, 8.0, 2.0, 1.0]), np.array([12.0, 2.0, 1.0, 12.0, 2.0]), np.array([0, 5]), []
    )
    assert r["kendall_tau"][0] == pytest.approx(-0.47140452079103173, abs=1e-15)


def test_predicted_ties_are_broken_by_row():
    # Rows 1 and 2 tie in prediction after row 0; the tie goes to row 1 (measured 3), not to the
    # faster row 2.
    r = _C.ranking_metrics(
        np.array([5.0, 3.0, 1.0, 9.0]), np.array([0.0, 1.0, 1.0, 2.0]), np.array([0, 4], np.int64), [1, 2, 3]
    )
    assert r["top1_perf"].tolist() == [0.2]
    assert r["top2_perf"].tolist() == [1 / 3]
    assert r["top3_perf"].tolist() == [1.0]


def test_degenerate_problems():
    inf = np.inf
    # p0: empty; p1: all failed; p2: one candidate; p3: constant predictions; p4: constant times.
    measured = np.array([inf, inf, 7.0, 3.0, 1.0, 2.0, 2.0, 2.0])
    predicted = np.array([1.0, 2.0, 0.0, 5.0, 5.0, 1.0, 2.0, 3.0])
    offsets = np.array([0, 0, 2, 3, 5, 8], np.int64)
    r = _C.ranking_metrics(measured, predicted, offsets, [1, 2])
    assert r["num_candidates"].tolist() == [0, 0, 1, 2, 3]
    for key in ("best_us", "top1_slowdown", "top1_perf", "top2_perf"):
        assert np.isnan(r[key][:2]).all(), key
    assert np.isnan(r["kendall_tau"]).all()  # every problem is degenerate for tau
    assert r["best_us"][2:].tolist() == [7.0, 1.0, 2.0]
    assert r["top1_perf"][2:].tolist() == [1.0, 1.0 / 3.0, 1.0]
    assert r["top1_slowdown"][2:].tolist() == [1.0, 3.0, 1.0]


def test_no_problems_and_no_ks():
    r = _C.ranking_metrics(np.zeros(0), np.zeros(0), np.zeros(1, np.int64), [])
    assert set(r) == BASE_KEYS
    assert all(v.shape == (0,) for v in r.values())
    assert r["num_candidates"].dtype == np.int64


def test_failed_rows_change_nothing():
    a = _C.ranking_metrics(np.array([3.0, 1.0, 2.0]), np.array([2.0, 3.0, 1.0]), np.array([0, 3]), [1, 2])
    b = _C.ranking_metrics(
        np.array([np.inf, 3.0, np.inf, 1.0, 2.0, np.inf]),
        np.array([-np.inf, 2.0, 0.0, 3.0, 1.0, 1e9]),
        np.array([0, 6]),
        [1, 2],
    )
    assert_same(b, a)
    assert b["top1_slowdown"].tolist() == [2.0]


def test_ks_may_be_any_integer_sequence():
    measured, predicted, offsets = random_case(3, n_problems=10)
    want = _C.ranking_metrics(measured, predicted, offsets, [20, 1, 5])
    assert list(want)[-3:] == ["top20_perf", "top1_perf", "top5_perf"]
    for ks in ((20, 1, 5), np.array([20, 1, 5], np.int64), np.array([20, 1, 5], np.int32)):
        assert_same(_C.ranking_metrics(measured, predicted, offsets, ks), want)


def test_other_input_dtypes_and_layouts_are_converted():
    measured, predicted, offsets = random_case(4, n_problems=10)
    want = _C.ranking_metrics(measured, predicted, offsets, list(KS))
    strided = np.repeat(predicted, 2)[::2]
    assert not strided.flags.c_contiguous
    assert_same(_C.ranking_metrics(measured, strided, offsets.astype(np.int32), list(KS)), want)


def test_results_own_their_memory():
    measured, predicted, offsets = random_case(6, n_problems=10)
    r = _C.ranking_metrics(measured.copy(), predicted.copy(), offsets.copy(), list(KS))
    want = reference(measured, predicted, offsets, KS)
    del measured, predicted, offsets
    import gc

    gc.collect()
    assert_same(r, want)
    r["top1_perf"][:] = -1.0  # writable, and independent of the other top-k arrays
    np.testing.assert_array_equal(r["top5_perf"], want["top5_perf"])


def test_concurrent_calls_from_threads():
    cases = [random_case(s, n_problems=40) for s in range(8)]
    want = [reference(*c, KS) for c in cases]
    got: list = [None] * len(cases)
    errors: list = []

    def work(i):
        try:
            for _ in range(5):
                got[i] = _C.ranking_metrics(*cases[i], list(KS))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        assert_same(g, w)


# ----------------------------------------------------------------------------------------------
# Bad input.
# ----------------------------------------------------------------------------------------------
M3 = np.array([1.0, 2.0, 3.0])
P3 = np.array([3.0, 2.0, 1.0])
O3 = np.array([0, 3], np.int64)


def _set(a: np.ndarray, i: int, v) -> np.ndarray:
    a = a.copy()
    a[i] = v
    return a


@pytest.mark.parametrize(
    "measured, predicted, offsets, ks, pattern",
    [
        (M3, P3[:2], O3, [1], r"predicted has 2 entries, measured has 3"),
        (_set(M3, 1, np.nan), P3, O3, [1], r"measured\[1\] is NaN"),
        (_set(M3, 2, -np.inf), P3, O3, [1], r"measured\[2\] is -inf"),
        (_set(M3, 0, -1.0), P3, O3, [1], r"measured\[0\] is -1\.0+: times must be >= 0"),
        (M3, _set(P3, 0, np.nan), O3, [1], r"predicted\[0\] is NaN"),
        (_set(M3, 0, np.inf), _set(P3, 0, np.nan), O3, [1], r"predicted\[0\] is NaN"),
        (M3, P3, np.zeros(0, np.int64), [1], r"offsets must have P \+ 1 >= 1 entries"),
        (M3, P3, np.array([1, 3]), [1], r"offsets\[0\] must be 0, got 1"),
        (M3, P3, np.array([0, 2]), [1], r"offsets\[-1\] must equal the number of rows 3, got 2"),
        (M3, P3, np.array([0, 2, 1, 3]), [1], r"offsets must be non-decreasing: offsets\[2\] = 1 < offsets\[1\] = 2"),
        (M3, P3, np.array([0, 5, 3]), [1], r"offsets\[1\] = 5 is out of range"),
        (M3, P3, O3, [1, 0], r"ks\[1\] = 0, expected k >= 1"),
        (M3, P3, O3, [-2], r"ks\[0\] = -2"),
        (M3, P3, O3, [5, 1, 5], r"ks has the value 5 twice"),
        (M3[None, :], P3, O3, [1], r"measured must have 1 dimension, got 2"),
        (M3, P3[None, :], O3, [1], r"predicted must have 1 dimension, got 2"),
        (M3, P3, O3[None, :], [1], r"offsets must have 1 dimension, got 2"),
    ],
)
def test_bad_arguments_raise_value_error(measured, predicted, offsets, ks, pattern):
    with pytest.raises(ValueError, match=pattern):
        _C.ranking_metrics(measured, predicted, offsets, ks)
