"""Settings from the environment: a bad value is a WARNING naming the variable, and the default
stays; ``import torch_diode`` never fails because of one."""

import os
import subprocess
import sys

import pytest

BAD = {
    "TORCH_DIODE_TOP_K": "abc",
    "TORCH_DIODE_MAX_SELECTED": "0",
    "TORCH_DIODE_PERFORMANCE_THRESHOLD": "nan",
    "TORCH_DIODE_EXTERN_PREFERENCE": "0.5",
    "TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN": "inf",
    "TORCH_DIODE_MIN_DTYPE_PROBLEMS": "-1",
    "TORCH_DIODE_CANDIDATE_POOL": "HUGE",
    "TORCH_DIODE_ENABLE_FALLBACK": "maybe",
    "TORCH_DIODE_NO_AUTOREGISTER": "2",
}
SHOW = "import torch_diode, json; print(json.dumps(torch_diode.config.snapshot()))"


def _settings(env: dict, configure_logging: bool = False) -> tuple[dict, str]:
    import json

    code = ("import logging; logging.basicConfig(); " if configure_logging else "") + SHOW
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TORCH_DIODE_")}, **env},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_bad_values_are_logged_and_the_defaults_kept():
    defaults, quiet = _settings({})
    assert "TORCH_DIODE" not in quiet
    for configure_logging in (False, True):
        settings, err = _settings(BAD, configure_logging)
        assert settings == defaults
        for name, value in BAD.items():
            assert name in err and repr(value) in err, (name, err)
        assert ("WARNING" in err) == configure_logging  # a logged WARNING where logging is set up


@pytest.mark.parametrize(
    "name,value,key,expected",
    [
        ("TORCH_DIODE_TOP_K", " 3 ", "top_k_configs", 3),
        ("TORCH_DIODE_CANDIDATE_POOL", "default", "candidate_pool", "DEFAULT"),
        ("TORCH_DIODE_ENABLE_FALLBACK", "off", "enable_fallback", False),
        ("TORCH_DIODE_EXTERN_PREFERENCE", "1.0", "extern_preference", 1.0),
    ],
)
def test_good_values_are_taken(name, value, key, expected):
    settings, err = _settings({name: value})
    assert settings[key] == expected and name not in err
