"""torch-diode's version (``torch_diode.__version__``; the same as pyproject.toml's, which a test
checks)."""

__version__ = "0.2.0"
