# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv/ (seeing the system's packages, so an installed torch is reused, never
# downloaded again), install torch==2.13.0 from this machine's wheel only where no torch is
# importable, build and install the package with its C++ core, then run.
#
# Targets:
#   make install     .venv with the package, its C++ core and the development tools (pytest, ruff)
#   make test-fast   the Python tests not marked `slow`, pytest-xdist workers one more than the
#                    cores: what to run while editing
#   make test-slow   the Python tests marked `slow` (real torch.compile runs, workflows end to end),
#                    the same workers (idle ones steal queued tests)
#   make test-python the whole Python suite in one pytest-xdist run, the same workers, the slow
#                    tests queued first (tests/conftest.py): the short ones even out the workers' ends
#   make test-cpp    the C++ unit tests under AddressSanitizer and UBSan
#   make lint        ruff (lint and format check) over Python, clang-format over csrc/
#   make test        lint, test-python, test-cpp and test-lib in turn (minutes): what .ci/run runs
#   make format      applies ruff's fixes and formatting and clang-format in place

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
RUFF := $(PY) -m ruff
RUFF_VERSION := 0.17.6
RUFF_STAMP := $(VENV)/.ruff-$(RUFF_VERSION)
STAMP := $(VENV)/.diode-installed
SOURCES := $(shell find src csrc -type f \( -name '*.py' -o -name '*.cpp' -o -name '*.h' -o -name '*.json' -o -name '*.diode' \)) CMakeLists.txt pyproject.toml
CPP_SOURCES = $(shell find csrc -type f \( -name '*.cpp' -o -name '*.h' \))
JOBS := $(shell nproc 2>/dev/null || echo 2)
# pytest-xdist workers: one more than the cores, as many tests wait on the processes they start
# (the command line, workflows, Inductor's compile workers) and another worker fills that time
TEST_JOBS := $(shell echo $$(( $(JOBS) + 1 )))
CPP_BUILD := build/cpp-tests
# pytest exits 5 when a selection holds no test: not a failure here.
PYTEST = $(PY) -m pytest tests
PYTEST_OK = || test $$? -eq 5

# $(call debian_package,CHECK,PACKAGE): apt-get installs PACKAGE where the shell test CHECK fails.
define debian_package
@$(1) || { \
  command -v apt-get >/dev/null || { echo "$(2) is missing and apt-get is unavailable" >&2; exit 1; }; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); }
endef

.PHONY: install demo test test-python test-fast test-slow test-cpp lint format test-lib lib-wheel clean

$(PY):
	$(PYTHON) -m venv --system-site-packages $(VENV)

$(STAMP): $(PY) $(SOURCES)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install "torch==2.13.0"
	$(PIP) install "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.24" "msgpack>=1.0" "tqdm>=4.60" "matplotlib>=3.6" "pytest>=7" "tensorboard>=2.10" "hypothesis>=6" "pytest-xdist>=3.2"
	$(PIP) install --no-build-isolation --no-deps .
	$(PY) -c "import torch_diode._C"
	touch $(STAMP)

# One ruff version: its formatter's output changes between releases.
$(RUFF_STAMP): $(PY)
	$(PIP) install "ruff==$(RUFF_VERSION)"
	touch $(RUFF_STAMP)

install: $(STAMP) $(RUFF_STAMP)

demo: $(STAMP)
	$(PY) workflows/demo.py

test: lint test-python test-cpp test-lib

test-python: $(STAMP)
	$(PYTEST) -n $(TEST_JOBS) --dist worksteal $(PYTEST_OK)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow" -n $(TEST_JOBS) --dist worksteal $(PYTEST_OK)

test-slow: $(STAMP)
	@echo "test-slow: real torch.compile runs and whole workflows; minutes, not seconds (make test-fast skips them)"
	$(PYTEST) -m slow -n $(TEST_JOBS) --dist worksteal $(PYTEST_OK)

# C++ unit tests under AddressSanitizer and UBSan (test_fuzz.cpp: seeded random inputs, longer with
# DIODE_FUZZ_ITERATIONS=N): GoogleTest from Debian's libgtest-dev, installed here where it is
# missing. The build directory is kept between runs, so only what
# changed is rebuilt; Ninja where installed, ccache where installed, one job per core.
test-cpp:
	$(call debian_package,test -f /usr/include/gtest/gtest.h,libgtest-dev)
	@test -f $(CPP_BUILD)/CMakeCache.txt || cmake -S . -B $(CPP_BUILD) \
	  $(if $(shell command -v ninja),-G Ninja) \
	  $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) \
	  -DDIODE_BUILD_TESTS=ON -DDIODE_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer"
	cmake --build $(CPP_BUILD) -j $(JOBS)
	ctest --test-dir $(CPP_BUILD) --output-on-failure -j $(JOBS)

# clang-format from Debian's package (the version `make format` and `make lint` must share).
lint: $(RUFF_STAMP)
	$(call debian_package,command -v clang-format >/dev/null,clang-format)
	$(RUFF) check .
	$(RUFF) format --check .
	clang-format --dry-run --Werror $(CPP_SOURCES)

format: $(RUFF_STAMP)
	$(call debian_package,command -v clang-format >/dev/null,clang-format)
	$(RUFF) check --fix .
	$(RUFF) format .
	clang-format -i $(CPP_SOURCES)

# The library-only distribution torch-diode-lib (dist-lib/pyproject.toml, the same sources):
# built as a wheel, then checked (no model, an import without side effects).
lib-wheel: $(STAMP)
	rm -rf build/lib-wheel
	$(PIP) wheel --no-build-isolation --no-deps ./dist-lib -w build/lib-wheel

test-lib: lib-wheel
	$(PY) dist-lib/check_wheel.py build/lib-wheel/torch_diode_lib-*.whl

clean:
	rm -rf build $(VENV)
