"""One-question studies: each answers one question once (benchmarks/studies/README.md: question,
answer, file). Run from the repository root as modules: ``python -m benchmarks.studies.NAME ...``."""
