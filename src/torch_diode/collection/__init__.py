"""Data collection: the torch.compile recorder, shape generators, shapesets and sweeps."""

from .recorder import Collector, collect

__all__ = ["Collector", "collect"]
