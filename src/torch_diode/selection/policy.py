"""The handler's settings for one decision, as one frozen value read from torch_diode.config."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """How a ranking becomes a choice (each field: the ``torch_diode.config`` setting of that name,
    documented there, but ``top_k`` = ``top_k_configs``, and ``min_heldout_problems``, a fixed bar of
    the ``misaligned`` unsure rule that is no setting)."""

    top_k: int
    performance_threshold: float
    max_selected_configs: int
    extern_preference: float
    unsure_top_k: int
    unsure_heldout_slowdown: float
    min_dtype_problems: int
    # a held-out figure from fewer problems than this is noise: the other unsure rules decide. A model
    # adapted to a hundred problems of a new GPU holds out about fifteen, about nine misaligned, whose
    # geomean moved across 1.05 with the seed (benchmarks/results/adapt_layers_cpu.json); the bar is
    # a loss calibration's too (training.confidence.MIN_CALIBRATION_CASES)
    min_heldout_problems: int = 20
    unsure_loss_probability: float = 1.0  # 1.0: the rule never fires

    @classmethod
    def from_config(
        cls,
        top_k: int | None = None,
        performance_threshold: float | None = None,
        extern_preference: float | None = None,
    ) -> Policy:
        """The policy of the current ``torch_diode.config``; arguments that are not None override it."""
        from .. import config

        return cls(
            top_k=max(1, int(config.top_k_configs if top_k is None else top_k)),
            performance_threshold=float(
                config.performance_threshold if performance_threshold is None else performance_threshold
            ),
            max_selected_configs=int(config.max_selected_configs),
            extern_preference=float(config.extern_preference if extern_preference is None else extern_preference),
            unsure_top_k=int(config.unsure_top_k),
            unsure_heldout_slowdown=float(config.unsure_heldout_slowdown),
            min_dtype_problems=int(config.min_dtype_problems),
            unsure_loss_probability=float(config.unsure_loss_probability),
        )
