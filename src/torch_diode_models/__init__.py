"""The seeds' other import name: ``import torch_diode_models`` registers the shipped model that
matches the GPU (even where TORCH_DIODE_NO_AUTOREGISTER is set for ``torch_diode``) and exposes
torch_diode's API."""

import torch_diode
from torch_diode import *  # noqa: F401,F403
from torch_diode import (  # noqa: F401  # noqa: F401
    disable,
    get_detected_hardware,
    get_prediction_stats,
    list_available_models,
    profile_predictions,
    register_model,
    set_log_level,
)

registered_model = torch_diode.autoregister(force=True)
