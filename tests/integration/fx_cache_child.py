"""The FX-graph cache tests' processes (tests/integration/test_fx_graph_cache.py,
tests/gpu/test_fx_graph_cache_gpu.py). Run as a script, in a process of its own, it compiles one GEMM per step with
diode installed (a step's model and diode settings) and prints, as JSON, what Inductor's FX-graph
cache did for each (hits, misses, bypasses), how often diode's handler was called and whether the
result equals eager's. Argument: a JSON object with ``device``, ``op`` (bmm or mm), ``inductor``
(Inductor config values), ``steps`` ([{"model": path or name, "settings": {...}}]) and
``pickled_key`` (true: Inductor's cache key pickles ``inductor_choices_class``, as torch 2.11
does, instead of asking it for ``uuid()``). :func:`check_cache_use` runs it and checks the
cache's use."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config

import torch_diode
from torch_diode import config
from torch_diode.model_file import read_model, write_model

COUNTERS = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("pickled_key") and hasattr(inductor_config, "_cache_config_factory_keys"):
        inductor_config._cache_config_factory_keys = []
    torch.manual_seed(0)
    batch = (3,) if spec["op"] == "bmm" else ()
    a = torch.randn(*batch, 64, 32, device=spec["device"])
    b = torch.randn(*batch, 32, 48, device=spec["device"])
    fn = getattr(torch, spec["op"])
    results = []
    for step in spec["steps"]:
        torch._dynamo.reset()
        before = {name: counters["inductor"][name] for name in COUNTERS}
        with (
            torch_diode.diode_choices(step["model"], enable_gemm_autotune=True) as choices,
            config.patch(**step.get("settings", {})),
            inductor_config.patch(spec["inductor"]),
        ):
            out = torch.compile(fn)(a, b)
            calls = choices.get_stats()["total_calls"]
        result = {name: counters["inductor"][name] - before[name] for name in COUNTERS}
        result.update(calls=calls, correct=bool(torch.allclose(out, fn(a, b), atol=1e-2, rtol=1e-2)))
        results.append(result)
    print(json.dumps(results))


def run_child(spec: dict, cache_dir: Path) -> list[dict]:
    """fx_cache_child.py's results in a fresh process using the cache in ``cache_dir``; its
    stderr holds no traceback and no pickling failure."""
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0",
        "TORCH_DIODE_NO_AUTOREGISTER": "1",
    }
    proc = subprocess.run(
        [sys.executable, str(__file__), json.dumps(spec)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr and "Failed to pickle" not in proc.stderr, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def other_model(model_path: Path, directory: Path) -> Path:
    """The same model with other weights (every prediction one ln-unit slower)."""
    model = read_model(model_path)
    model.target_mean += 1.0
    return write_model(directory / "other.diode", model)


def check_cache_use(spec: dict, model: str, other: str, cache_dir: Path) -> None:
    """A cold process misses and caches; a warm one hits (diode is not even asked), then misses
    with another setting and with another model; every result equals eager's."""
    (cold,) = run_child({**spec, "steps": [{"model": model}]}, cache_dir)
    assert cold["fxgraph_cache_miss"] == 1 and cold["fxgraph_cache_hit"] == 0 and cold["calls"] >= 1, cold
    hit, setting, weights = run_child(
        {**spec, "steps": [{"model": model}, {"model": model, "settings": {"top_k_configs": 2}}, {"model": other}]},
        cache_dir,
    )
    assert hit["fxgraph_cache_hit"] == 1 and hit["fxgraph_cache_miss"] == 0 and hit["calls"] == 0, hit
    for missed in (setting, weights):
        assert missed["fxgraph_cache_miss"] == 1 and missed["fxgraph_cache_hit"] == 0 and missed["calls"] >= 1, missed
    for result in (cold, hit, setting, weights):
        assert result["fxgraph_cache_bypass"] == 0 and result["correct"], result


if __name__ == "__main__":
    main()
