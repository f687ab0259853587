"""Training tests fit a few hundred rows per step: with one intra-op thread the step is spent
computing, not synchronising threads (which, on a busy machine, costs more than the work)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
