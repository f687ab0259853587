"""Diode inside torch.compile on a GPU: correct outputs, the model decides, no benchmarking at k=1.

The model is the one shipped for this GPU (H100, H200). Problems are compiled
25 to a graph (one Inductor compile, each GEMM decided by diode on its own) to keep the run short.
Set DIODE_RESULTS_DIR to keep the correctness figures (benchmarks/results/correctness_h100.json, _h200)."""

import json
import logging
import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch
from gpu_models import gpu_slug, shipped_model_for_this_gpu
from torch._inductor import config as inductor_config

from torch_diode import config
from torch_diode.collection.inductor_sweep import make_inputs, op_function
from torch_diode.integration.install import diode_choices
from torch_diode.types import Problem

pytestmark = pytest.mark.gpu
TOL = {"float16": 2e-2, "bfloat16": 4e-2, "float32": 2e-3}
TF32_TOL = 2e-2
GROUP = 25


@pytest.fixture(scope="module")
def model():
    return shipped_model_for_this_gpu()


def random_problems(op: str, n: int, seed: int) -> list[Problem]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        dtype = rng.choice(["float16", "bfloat16", "float32"])
        size = lambda: rng.choice(
            [rng.randint(1, 300), rng.randint(1, 2048), 64 * rng.randint(1, 32) + rng.choice([0, 1, 7])]
        )
        batch = rng.randint(2, 8) if op in ("bmm", "baddbmm") else 1
        out.append(
            Problem(
                op,
                batch,
                size(),
                size(),
                size(),
                dtype,
                dtype,
                dtype,
                transpose_a=rng.random() < 0.3,
                transpose_b=rng.random() < 0.3,
            )
        )
    return out


def compile_and_compare(op: str, problems: list[Problem]) -> list[str]:
    """Compiles ``problems`` of ``op`` in one graph under max-autotune (diode decides each GEMM)
    and returns those whose outputs differ from eager's (fp32 reference)."""
    inputs = [make_inputs(p, "cuda") for p in problems]
    fn = op_function(op)
    torch._dynamo.reset()
    with inductor_config.patch(max_autotune_gemm=True, force_disable_caches=True):
        outs = torch.compile(lambda *xs: [fn(*x) for x in xs], dynamic=False)(*inputs)
    mismatches = []
    tf32 = torch.get_float32_matmul_precision() != "highest"
    for problem, x, out in zip(problems, inputs, outs):
        ref = fn(*[t.float() for t in x]).to(out.dtype)
        # fp32 GEMMs run TF32 kernels (10-bit mantissa), the compiled one's and eager's apart
        tol = TF32_TOL if tf32 and problem.dtype_a == "float32" else TOL[problem.dtype_a]
        if not torch.allclose(out.float(), ref.float(), atol=tol * max(1.0, ref.abs().max().item()), rtol=tol):
            mismatches.append(problem.short())
    return mismatches


def test_outputs_match_eager_and_the_model_decides(model):
    n = int(os.environ.get("DIODE_CORRECTNESS_PROBLEMS", "100"))
    checked, mismatches = 0, []
    # one pick per GEMM, unsure or not: the kernels diode picks are checked, and nothing is
    # benchmarked (most random sizes are unaligned, hence unsure: five benchmarked choices per
    # GEMM ran this test past its call's 520 s on the H100)
    with diode_choices(model) as choices, config.patch(top_k_configs=1, unsure_top_k=1):
        for op in ("mm", "addmm", "bmm", "baddbmm"):
            problems = random_problems(op, n, seed=sum(map(ord, op)))
            for start in range(0, len(problems), GROUP):
                group = problems[start : start + GROUP]
                mismatches += compile_and_compare(op, group)
                checked += len(group)
        stats = choices.get_stats()
    report = {
        "problems_checked": checked,
        "mismatches": len(mismatches),
        "mismatched_problems": mismatches,
        "fallbacks": stats["fallbacks_total"],
        "fallbacks_by_reason": stats["fallbacks"],
        "model_selections": stats["model_selections"],
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "pytest tests/gpu/test_integration_gpu.py",
    }
    if os.environ.get("DIODE_RESULTS_DIR"):
        Path(os.environ["DIODE_RESULTS_DIR"], f"correctness_{gpu_slug()}.json").write_text(json.dumps(report, indent=1))
    assert not mismatches, mismatches
    assert stats["fallbacks_total"] == 0, stats
    assert stats["model_selections"] == checked


def test_k1_means_no_benchmarking(model):
    """Inductor's own autotune counter: zero with k=1 (one choice, nothing to benchmark), and
    positive with k=3 on the same problem (the counter does count here)."""
    from torch._dynamo.utils import counters

    # aligned and inside the training ranges: a problem the model is sure of (N=700 would make
    # B's rows 1,400 bytes, not 16-byte aligned, and the handler would benchmark its top 5)
    problem = Problem("mm", 1, 1024, 768, 1024, "float16", "float16", "float16")
    inputs = make_inputs(problem, "cuda")
    autotunes = {}
    for k in (1, 3):
        with (
            diode_choices(model) as choices,
            config.patch(top_k_configs=k, performance_threshold=1.0),
            inductor_config.patch(max_autotune=True, force_disable_caches=True),
        ):
            torch._dynamo.reset()
            counters.clear()
            torch.compile(op_function("mm"))(*inputs)
            autotunes[k] = counters["inductor"]["select_algorithm_autotune"]
            assert choices.get_stats()["model_selections"] == 1
    assert autotunes[1] == 0 and autotunes[3] > 0, autotunes


@pytest.mark.parametrize("precision", ["highest", "high"])
def test_own_enumeration_decides_as_inductors_generators(model, precision):
    """Diode's own enumeration of the Triton template's candidates (config.enumerate_candidates)
    must rank the same pool as Inductor's generators: the same picks, in the same order, on random
    problems of every op (unaligned sizes, transposes, three dtypes), and correct outputs; with
    TF32 allowed too, where Inductor's ALLOW_TF32 rule differs between torch versions."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        _own_enumeration_decides_as_inductors_generators(model)
    finally:
        torch.set_float32_matmul_precision(before)


def _own_enumeration_decides_as_inductors_generators(model: str) -> None:
    decided, seconds = {}, {}
    for enumerate_candidates in (True, False):
        # one pick per GEMM, unsure or not: nothing is benchmarked (it ran out of time otherwise)
        with (
            diode_choices(model) as choices,
            config.patch(
                enumerate_candidates=enumerate_candidates, top_k_configs=1, unsure_top_k=1, performance_threshold=1.0
            ),
        ):
            for op in ("mm", "addmm", "bmm", "baddbmm"):
                mismatches = compile_and_compare(op, random_problems(op, 10, seed=7 + sum(map(ord, op))))
                assert not mismatches, mismatches
            stats = choices.get_stats()
            decided[enumerate_candidates] = [(d["problem"], d["chosen"]) for d in choices.decisions]
            seconds[enumerate_candidates] = stats["decision_seconds"]
            assert stats["fallbacks_total"] == 0 and stats["enumeration_mismatch"] == 0, stats
            if enumerate_candidates:
                assert stats["enumerated"] == len(decided[True]) > 0, stats
            else:
                assert stats["enumerated"] == 0, stats
    print(
        f"decision seconds: enumerated {seconds[True]:.3f}, Inductor's generators {seconds[False]:.3f} "
        f"({len(decided[True])} decisions)"
    )
    assert decided[True] == decided[False]


def test_a_kind_without_training_data_is_never_chosen_alone(model):
    """A skinny-output, long-K bf16 mm, for which Inductor offers decompose_k candidates: the
    shipped model's contract (version 1: ATen and Triton's mm/bmm known) never makes one the first
    pick nor the ATen choice that rides along; the output equals eager's."""
    import numpy as np
    from torch._inductor.virtualized import V

    from torch_diode.features import FEATURE_NAMES
    from torch_diode.integration.choices import DiodeInductorChoices

    seen = []

    class Spy(DiodeInductorChoices):
        def _select(self, predicted, features, problem, candidates):
            decision = super()._select(predicted, features, problem, candidates)
            seen.append((features, decision))
            return decision

    a = torch.randn(64, 32768, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(32768, 64, device="cuda", dtype=torch.bfloat16)
    spy = Spy(model)
    torch._dynamo.reset()
    with (
        config.patch(enumerate_candidates=False),
        V.set_choices_handler(spy),
        inductor_config.patch(max_autotune_gemm=True, force_disable_caches=True),
    ):
        out = torch.compile(torch.mm, dynamic=False)(a, b)
    torch.testing.assert_close(out.float(), (a.float() @ b.float()), atol=1.0, rtol=4e-2)
    ((features, decision),) = seen
    unknown = features[:, FEATURE_NAMES.index("template_is_decompose_k")] > 0.5
    if not unknown.any():
        pytest.skip("Inductor offered no decompose_k candidate for this problem")
    assert not unknown[decision.first]
    assert not any(unknown[i] for i in decision.chosen if i not in decision.widened), decision
    assert np.count_nonzero(unknown[list(decision.chosen)]) <= 1 and (
        not unknown[list(decision.chosen)].any() or decision.unsure
    )


def _dynamic_calls() -> list:
    """(function, inputs of n rows, the sizes it runs): an nn.Linear-like addmm over a growing token
    count, and a decode step's attention bmm over a growing KV length."""
    dtype = torch.bfloat16
    w, bias = torch.randn(1024, 768, device="cuda", dtype=dtype), torch.randn(1024, device="cuda", dtype=dtype)
    linear = lambda x, w, bias: torch.addmm(bias, x, w.t())
    attention = lambda q, k: torch.bmm(q, k.transpose(1, 2))
    calls = [
        (linear, lambda n: (torch.randn(n, 768, device="cuda", dtype=dtype), w, bias), (128, 197, 333, 1000)),
        (
            attention,
            lambda n: (
                torch.randn(32, 1, 128, device="cuda", dtype=dtype),
                torch.randn(32, n, 128, device="cuda", dtype=dtype),
            ),
            (256, 257, 300, 1777),
        ),
    ]
    return calls


def test_dynamic_shapes_compile_once_and_stay_right(model):
    """Shapes that change from call to call, as a user's model makes them: an nn.Linear-like addmm
    over a growing token count and a decode step's attention bmm over a growing KV length, compiled
    with dynamic=True (Inductor's Triton templates with symbolic sizes, decided over the sizes they
    will run: selection.dynamic) and with torch.compile's automatic dynamic shapes. Every output
    equals eager's, diode decides every graph, each dynamic one over more than one size, and falls
    back nowhere."""
    calls = _dynamic_calls()
    for dynamic in (True, None):
        with diode_choices(model) as choices, inductor_config.patch(max_autotune_gemm=True, force_disable_caches=True):
            for fn, make, sizes in calls:
                torch._dynamo.reset()
                compiled = torch.compile(fn, dynamic=dynamic)
                for n in sizes:
                    x = make(n)
                    ref = fn(*[t.float() for t in x])
                    torch.testing.assert_close(compiled(*x).float(), ref, atol=4e-2 * ref.abs().max().item(), rtol=4e-2)
            stats = choices.get_stats()
            assert stats["fallbacks_total"] == 0 and stats["model_selections"] >= 2, (dynamic, stats)
            assert stats["dynamic_decisions"] >= 2, (dynamic, stats)
            assert all(d["scenarios"] > 1 for d in choices.decisions if "sizes" in d), list(choices.decisions)


def test_own_enumeration_decides_dynamic_graphs_as_inductors_generators(model, caplog):
    """Graphs whose rows are symbolic and K static (automatic dynamic shapes; a module's static
    parameters under dynamic=True) are decided over
    diode's own enumeration of the Triton template's candidates, scaled to the hints as Inductor
    scales them, with TF32 allowed or not (ALLOW_TF32 read off Inductor's first candidate): the
    same decisions as over Inductor's generators, and outputs equal to eager's."""
    before = torch.get_float32_matmul_precision()
    caplog.set_level(logging.DEBUG, logger="torch_diode")
    try:
        for precision in ("highest", "high"):
            torch.set_float32_matmul_precision(precision)
            decided = {}
            for enumerate_candidates in (True, False):
                caplog.clear()
                try:
                    decided[enumerate_candidates] = _dynamic_decisions(model, enumerate_candidates)
                except AssertionError as e:  # say which enumerated configs Inductor did not reproduce
                    said = [r.getMessage() for r in caplog.records]
                    why = [m for m in said if "reproduce" in m or "first" in m]
                    raise AssertionError(f"{precision}, enumerate_candidates={enumerate_candidates}: {why}") from e
            assert decided[True] == decided[False], precision
    finally:
        torch.set_float32_matmul_precision(before)


def _dynamic_decisions(model: str, enumerate_candidates: bool) -> list:
    with (
        diode_choices(model) as choices,
        inductor_config.patch(max_autotune_gemm=True, force_disable_caches=True),
        config.patch(enumerate_candidates=enumerate_candidates, top_k_configs=1, unsure_top_k=1),
    ):
        # automatic dynamic shapes, and a module's parameters (static) under dynamic=True
        linear = torch.nn.Linear(768, 1024, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
        module = (linear, lambda n: (torch.randn(n, 768, device="cuda", dtype=torch.bfloat16),), (128, 197, 333, 1000))
        for (fn, make, sizes), dynamic in [*((c, None) for c in _dynamic_calls()), (module, True)]:
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=dynamic)
            for n in sizes:
                x = make(n)
                # the module's parameters are bf16: its reference is eager bf16
                ref = fn(*[t.float() for t in x]) if dynamic is None else fn(*x).float()
                torch.testing.assert_close(compiled(*x).float(), ref, atol=4e-2 * ref.abs().max().item(), rtol=4e-2)
        stats = choices.get_stats()
        assert stats["fallbacks_total"] == 0 and stats["enumeration_mismatch"] == 0, stats
        assert stats["dynamic_decisions"] >= 2, stats
        assert (stats["enumerated"] > 0) == enumerate_candidates, stats
        return [(d["problem"], d["chosen"], d.get("sizes")) for d in choices.decisions]
