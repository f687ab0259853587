# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv/ (seeing the system's packages, so an installed torch is reused, never
# downloaded again), install torch==2.13.0 from this machine's wheel only where no torch is
# importable, build and install the package with its C++ core, then run.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.diode-installed
SOURCES := $(shell find src csrc -type f \( -name '*.py' -o -name '*.cpp' -o -name '*.h' -o -name '*.json' -o -name '*.diode' \)) CMakeLists.txt pyproject.toml

.PHONY: install demo test test-python test-cpp test-lib lib-wheel clean

$(PY):
	$(PYTHON) -m venv --system-site-packages $(VENV)

$(STAMP): $(PY) $(SOURCES)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install "torch==2.13.0"
	$(PIP) install "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.24" "msgpack>=1.0" "tqdm>=4.60" "matplotlib>=3.6" "pytest>=7" "tensorboard>=2.10"
	$(PIP) install --no-build-isolation --no-deps .
	$(PY) -c "import torch_diode._C"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) workflows/demo.py

test: test-python test-cpp test-lib

test-python: $(STAMP)
	$(PY) -m pytest tests

# C++ unit tests under AddressSanitizer and UBSan: GoogleTest from Debian's libgtest-dev,
# installed here where it is missing.
test-cpp:
	@test -f /usr/include/gtest/gtest.h || { \
	  command -v apt-get >/dev/null || { echo "libgtest-dev is missing and apt-get is unavailable" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libgtest-dev; }
	cmake -S . -B build/cpp-tests -DDIODE_BUILD_TESTS=ON -DDIODE_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
	cmake --build build/cpp-tests -j 2
	ctest --test-dir build/cpp-tests --output-on-failure

# The library-only distribution torch-diode-lib (dist-lib/pyproject.toml, the same sources):
# built as a wheel, then checked (no model, an import without side effects).
lib-wheel: $(STAMP)
	rm -rf build/lib-wheel
	$(PIP) wheel --no-build-isolation --no-deps ./dist-lib -w build/lib-wheel

test-lib: lib-wheel
	$(PY) dist-lib/check_wheel.py build/lib-wheel/torch_diode_lib-*.whl

clean:
	rm -rf build $(VENV)
