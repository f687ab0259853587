"""The confidence contract a model file carries, judged on held-out problems of the repository's
H100 validation data with the shipped H100 model."""

from pathlib import Path

import numpy as np
import pytest

from torch_diode.dataset_io import load_each, merge_all
from torch_diode.model_file import read_model
from torch_diode.selection.policy import Policy
from torch_diode.training.confidence import held_out_contract, loss_cases
from torch_diode.training.data import build_arrays
from torch_diode.training.model import Ensemble

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def judged():
    arrays = build_arrays(merge_all(load_each([ROOT / "data" / "h100" / "validation"])))
    model = Ensemble.from_model_file(read_model(ROOT / "src" / "torch_diode" / "models" / "NVIDIA-H100-matmul.diode"))
    return model, arrays, np.ones(arrays.num_problems, dtype=bool)


def test_a_gpu_with_too_few_held_out_problems_of_its_own_is_calibrated_on_all_held_out_problems(judged):
    """The first picks come from the model's own GPU's held-out problems alone; where those give
    too few cases for a loss calibration, both calibrations are fitted on every held-out problem."""
    model, arrays, held = judged
    everyone = held_out_contract(model, arrays, held)
    own = np.zeros_like(held)
    own[:10] = True  # fewer problems than a calibration needs cases
    few = held_out_contract(model, arrays, held, own)
    assert sum(s.problems for s in few.heldout_top1_slowdown.values()) == 10
    assert sum(s.problems for s in everyone.heldout_top1_slowdown.values()) == len(held)
    assert everyone.loss_calibration is not None and everyone.misaligned_loss_calibration is not None
    assert few.loss_calibration == everyone.loss_calibration
    assert few.misaligned_loss_calibration == everyone.misaligned_loss_calibration


def test_a_gpu_with_enough_held_out_problems_of_its_own_is_calibrated_on_them(judged):
    """Five held-out problems of another GPU, each a case the model's pick did not lose: the
    calibration is fitted on the other cases, all the GPU's own."""
    model, arrays, held = judged
    policy = Policy.from_config()
    won = []
    for g in range(arrays.num_problems):
        cases = loss_cases(model, arrays, np.array([g]), policy).reshape(-1, 3)
        if len(cases) == 1 and not cases[0, 2]:
            won.append(g)
        if len(won) == 5:
            break
    own = held.copy()
    own[won] = False
    everyone = held_out_contract(model, arrays, held)
    mine = held_out_contract(model, arrays, held, own)
    assert everyone.loss_calibration is not None and mine.loss_calibration is not None
    assert mine.loss_calibration.problems == everyone.loss_calibration.problems - 5
