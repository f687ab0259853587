"""A selection policy for the selection tests."""

from torch_diode.selection import Policy


def make_policy(**settings) -> Policy:
    """Two picks, no threshold, no ATen preference, three benchmarked where unsure, no dtype bar,
    unless ``settings`` say otherwise."""
    base = dict(
        top_k=2,
        performance_threshold=1.0,
        max_selected_configs=8,
        extern_preference=1.0,
        unsure_top_k=3,
        unsure_heldout_slowdown=1.05,
        min_dtype_problems=0,
    )
    return Policy(**{**base, **settings})
