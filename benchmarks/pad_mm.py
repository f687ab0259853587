"""What Inductor's shape-padding pass (torch/_inductor/fx_passes/pad_mm.py) did during a compile,
and its decisions shared between processes (benchmarks/e2e.py's workers).

pad_mm pads an unaligned GEMM (M=199 to 200, say) where its own benchmark of padded against
unpadded finds padding 1.1x faster. The decision is taken before any kernel is chosen, is cached
in Inductor's local cache file (TORCHINDUCTOR_CACHE_DIR/cache/<system hash>) keyed by the
operands' shapes, strides and dtypes, and is noisy near its margin: two processes can decide
differently on the same GEMM. Nothing here ever fails a compile: what cannot be read is left out
or recorded as ``error``."""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any

from torch_diode.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

# counters["inductor"] entries that say what pad_mm did (its own two, the pattern matcher's, the FX graph cache's)
PAD_MM_COUNTERS = (
    "pad_mm_bench",
    "shape_padding_multiplier",
    "pattern_matcher_count",
    "pattern_matcher_nodes",
    "fxgraph_cache_hit",
    "fxgraph_cache_miss",
    "fxgraph_cache_bypass",
)
GEMM_OPS = ("mm", "addmm", "bmm", "baddbmm")


def inductor_counters() -> dict[str, int]:
    """The PAD_MM_COUNTERS of ``counters["inductor"]`` now (0 where absent)."""
    try:
        from torch._dynamo.utils import counters

        inductor = counters.get("inductor", {})
        return {k: int(inductor.get(k, 0)) for k in PAD_MM_COUNTERS}
    except Exception as e:
        logger.debug("no Inductor counters: %s", e)
        return {}


def pad_cache_entries() -> dict[str, Any] | None:
    """pad_mm's entries in Inductor's local cache file (decisions, base mm times); None if unreadable.

    The file also holds autotuning results (nested dicts, keyed by op); pad_mm's entries are the
    top-level scalars: ``str(key) -> bool`` and ``"base mm time: " + str(key) -> ms``."""
    try:
        from torch._inductor.fx_passes.pad_mm import get_pad_cache

        return {k: v for k, v in get_pad_cache().get_local_cache().items() if not isinstance(v, dict)}
    except Exception as e:
        logger.debug("pad_mm's cache unreadable: %s", e)
        return None


def save_pad_decisions(path: Path) -> None:
    """Writes this process's pad_mm entries to ``path`` (atomically), for the workers after it."""
    entries = pad_cache_entries()
    if entries is None:
        return
    try:
        atomic_write_bytes(path, json.dumps(entries).encode())
    except OSError as e:  # the row's own pad_mm facts still say what happened
        logger.warning("pad_mm decisions not shared through %s: %s", path, e)


def load_pad_decisions(path: Path) -> None:
    """Puts the pad_mm entries an earlier worker saved in ``path`` into this process's pad cache:
    its GEMMs' decisions are then cache hits, not benchmarked again (one decision per GEMM for
    every method)."""
    if not path.exists():
        return
    try:
        from torch._inductor.fx_passes.pad_mm import get_pad_cache

        cache = get_pad_cache()
        local = cache.get_local_cache()
        local.update(json.loads(path.read_text()))
        cache.update_local_cache(local)
    except Exception as e:  # the row's own pad_mm facts still say what happened
        logger.warning("pad_mm decisions not read from %s: %s", path, e)


def gemm_nodes(graph: Any) -> list[dict[str, Any]]:
    """Every GEMM of a post-grad FX graph: op, operand shapes, whether an operand was padded."""
    gemms = []
    for node in graph.nodes:
        name = getattr(getattr(node.target, "overloadpacket", None), "__name__", None)
        if node.op != "call_function" or name not in GEMM_OPS:
            continue
        operands = [a for a in node.args if hasattr(a, "meta") and hasattr(a.meta.get("val"), "shape")]
        gemms.append(
            {
                "op": name,
                "shapes": [[int(d) if isinstance(d, int) else str(d) for d in a.meta["val"].shape] for a in operands],
                "padded": any(
                    getattr(getattr(a.target, "overloadpacket", None), "__name__", None) == "constant_pad_nd"
                    for a in operands
                ),
            }
        )
    return gemms


@contextlib.contextmanager
def pad_mm_facts():
    """Yields a dict that, once the block (a cold compile) ends, holds what pad_mm did in it.

    The counters are diffed around the block, the GEMMs are read by a post-grad custom pass
    installed for the block (Inductor's config restores the previous value on exit), the
    cache entries are those new or changed in the block. Failures are recorded, never raised."""
    facts: dict[str, Any] = {}
    graphs: list[list[dict[str, Any]]] = []
    counters_before = inductor_counters()
    cache_before = pad_cache_entries()
    patch: Any = contextlib.nullcontext()
    try:
        from torch._inductor import config as inductor_config
        from torch._inductor.custom_graph_pass import CustomGraphPass

        class GemmShapes(CustomGraphPass):
            def __call__(self, graph: Any) -> None:
                try:
                    graphs.append(gemm_nodes(graph))
                except Exception as e:  # never fails the compile
                    facts["error"] = f"graph: {type(e).__name__}: {str(e)[:200]}"

            def uuid(self) -> None:  # no FX graph cache entry: the pass must see every compile
                return None

        if inductor_config.post_grad_custom_post_pass is None:
            patch = inductor_config.patch(post_grad_custom_post_pass=GemmShapes())
        else:
            facts["error"] = "post_grad_custom_post_pass already set: GEMMs not read"
    except Exception as e:
        facts["error"] = f"{type(e).__name__}: {str(e)[:200]}"
    try:
        with patch:
            yield facts
    finally:
        after = inductor_counters()
        facts["counters"] = {k: v - counters_before.get(k, 0) for k, v in after.items()}
        if graphs:
            facts["graphs"] = len(graphs)
            facts["gemms"] = [g for gemms in graphs for g in gemms]
            facts["padded_gemms"] = sum(g["padded"] for g in facts["gemms"])
        cache_after = pad_cache_entries()
        if cache_before is not None and cache_after is not None:
            new = {k: v for k, v in cache_after.items() if cache_before.get(k) != v}
            prefix = "base mm time: "
            facts["cached_decisions"] = {k: v for k, v in new.items() if not k.startswith(prefix)}
            facts["cached_base_mm_ms"] = {k[len(prefix) :]: v for k, v in new.items() if k.startswith(prefix)}
