"""How a dataset was collected, as its metadata's ``sources`` record it.

Every collection (the recorder, both sweeps) records its settings in a source record
``{"tool": "torch_diode.collect", "settings": {...}}``; merging keeps each distinct record once.
The settings are read here, a setting a record lacks read as its default (what such a collection did):
by `diode remeasure`, to measure a file again as it was measured and to leave alone a file already
measured with the layout hints or the fast collector's lead (:data:`~.timing.LEAD_US`).
"""

from __future__ import annotations

import os

from ..coverage import tf32_run
from ..formats import DatasetFormatError
from ..types import Dataset

COLLECTION_TOOL = "torch_diode.collect"

# what a collection records of how it measured, and is measured again with (remeasure)
MEASUREMENT_SETTINGS = (
    "mode",
    "exhaustive_sample",
    "exhaustive_rotations",
    "seed",
    "reps",
    "tf32",
    "max_autotune_gemm_search_space",
    "max_autotune_gemm_backends",
    "persistent_tma",
)


def collection_settings(dataset: Dataset) -> list[dict]:
    """The settings every collection of ``dataset`` recorded (its metadata's sources)."""
    return [
        s["settings"]
        for s in dataset.metadata.get("sources") or []
        if isinstance(s, dict) and isinstance(s.get("settings"), dict) and s.get("tool") == COLLECTION_TOOL
    ]


def recorded_rotations(settings: dict) -> int:
    """The ``--exhaustive-rotations`` a collection's recorded settings say it drew its samples
    with: a record without the setting drew one sample (1)."""
    rotations = settings.get("exhaustive_rotations")
    return 1 if rotations is None else int(rotations)


def measurement_settings(path: str | os.PathLike, dataset: Dataset) -> dict:
    """How ``dataset`` (read from ``path``) was measured: the settings its collections recorded,
    which must agree (DatasetFormatError naming ``path`` otherwise, or where none are recorded)."""
    recorded = []
    for s in collection_settings(dataset):
        # a record without persistent_tma did not time the TMA template; one without TF32 ran without it
        recorded.append(
            {
                **{k: s.get(k) for k in MEASUREMENT_SETTINGS},
                "persistent_tma": bool(s.get("persistent_tma")),
                "exhaustive_rotations": recorded_rotations(s),
                "tf32": tf32_run(s),
                "constant_ints": tuple(s.get("constant_ints") or ()),  # none where unrecorded
            }
        )
    if not recorded:
        raise DatasetFormatError(
            path, "metadata.sources", "no collection settings recorded: nothing says how to measure again"
        )
    if any(r != recorded[0] for r in recorded):
        raise DatasetFormatError(
            path, "metadata.sources", "collections with different settings: remeasure each file of them apart"
        )
    return recorded[0]


def hinted_already(dataset: Dataset) -> bool:
    """Whether the problems of ``dataset`` whose kernels get layout hints were measured with them:
    every collection ran with the hints, or a hinted re-measurement (of them all, not only of those
    under --below-us) was merged in (`diode dataset merge --replace`)."""
    settings = collection_settings(dataset)
    return bool(settings) and (
        all(s.get("layout_hints") for s in settings)
        or any(
            s.get("command") == "remeasure" and s.get("layout_hinted_only") and s.get("below_us") is None
            for s in settings
        )
    )


def led_already(dataset: Dataset, below_us: float | None = None) -> bool:
    """Whether ``dataset``'s timings (of its problems under ``below_us`` microseconds, where given)
    have the fast collector's lead before each flush (timing.LEAD_US) or need none: every
    collection recorded a lead or was not the fast collector's (Inductor's own timings), or a
    re-measurement with the lead of all its problems, or of all those under at least ``below_us``
    (``--below-us``), was merged in (`diode dataset merge --replace`); not one of its hinted
    problems, of --only's or of one shard."""
    settings = collection_settings(dataset)

    def covers(s: dict) -> bool:
        done_below = s.get("below_us")
        return done_below is None or (below_us is not None and done_below >= below_us)

    return bool(settings) and (
        all(s.get("lead_us") or s.get("mode") != "fast" for s in settings)
        or any(
            s.get("command") == "remeasure"
            and s.get("lead_us")
            and not (s.get("layout_hinted_only") or s.get("only") or s.get("shard"))
            and covers(s)
            for s in settings
        )
    )


__all__ = [
    "COLLECTION_TOOL",
    "MEASUREMENT_SETTINGS",
    "collection_settings",
    "hinted_already",
    "led_already",
    "measurement_settings",
    "recorded_rotations",
]
