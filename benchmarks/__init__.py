"""Benchmark scripts, run from the repository root as modules: ``python -m benchmarks.e2e ...``."""
