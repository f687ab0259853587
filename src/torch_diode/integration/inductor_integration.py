"""The integration README's module: ``torch_diode.integration.inductor_integration``.

``DiodeInductorChoices``, ``install_diode_choices()`` and ``create_diode_choices()`` are the ones
of :mod:`torch_diode.integration.choices` and :mod:`torch_diode.integration.install`, under the
module path and with the parameters the README documents (``model_path``, ``device``,
``top_k_configs``, ``performance_threshold``, ``enable_fallback``). Where they differ on purpose:

- ``model_path=None`` detects the model for the current GPU: the one trained on it, else the
  nearest of its family (every decision then unsure); no GPU or no such model: no model, and
  every GEMM keeps Inductor's stock choices (``get_stats()["fallbacks"]["no_model"]``).
- A model file that cannot be loaded (missing, not a torch-diode ``.diode`` file, corrupt: a
  PyTorch ``.pt`` included) leaves Inductor's stock choices, logged at WARNING and counted per
  GEMM (``fallbacks["model_load_error"]``, ``get_stats()["model_load_error"]``); with
  ``enable_fallback=False`` it raises.
- ``top_k_configs`` is the number of best predictions always kept, not a maximum: candidates
  predicted within ``performance_threshold`` of the best join them (at most
  ``torch_diode.config.max_selected_configs``), an unsure decision widens to ``unsure_top_k``,
  and where several Triton configs are kept the best ATen choice rides along. Its default is
  ``torch_diode.config.top_k_configs`` (1: Inductor benchmarks nothing), not 3: one pick is what
  makes compile time default mode's.
- The hook is ``_finalize_template_configs`` (torch 2.10 and later), which replaced
  ``_finalize_mm_configs``; the model is a ``.diode`` file run by the C++ engine, not a pickled
  ``.pt`` module; ``device`` is recorded, the engine runs on the CPU.
- ``get_stats()`` holds the README's ``total_calls``, ``model_selections``, ``fallback_<reason>``
  and ``configs_filtered``, and more (torch_diode.integration.choices).
"""

from __future__ import annotations

from .choices import DiodeInductorChoices
from .install import create_diode_choices, diode_choices, install_diode_choices, uninstall_diode_choices

__all__ = [
    "DiodeInductorChoices",
    "create_diode_choices",
    "diode_choices",
    "install_diode_choices",
    "uninstall_diode_choices",
]
