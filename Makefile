# Two entry points (see README): `make demo` and `make test`. Both set up what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# A second environment with Spark 4.0 and its Spark Connect server: the Spark tests run there too.
SPARK4_VENV ?= .venv-spark4
SPARK4_STAMP := $(SPARK4_VENV)/.installed-stamp
SPARK4_TESTS := tests/test_spark_planned.py tests/test_spark_executors.py

.PHONY: demo test setup browser clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

$(SPARK4_STAMP): pyproject.toml
	$(PYTHON) -m venv $(SPARK4_VENV)
	$(SPARK4_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SPARK4_VENV)/bin/python -m pip install --quiet -e ".[spark4]"
	touch $(SPARK4_STAMP)

# Headless Chromium for the browser tests (Debian's package; needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP)
	$(PY) -m puffin_explorer.demo

test: $(STAMP) $(SPARK4_STAMP) browser
	$(PY) -m pytest -p no:cacheprovider --nbval tests notebooks
	$(SPARK4_VENV)/bin/python -m pytest -p no:cacheprovider $(SPARK4_TESTS)

clean:
	rm -rf $(VENV) $(SPARK4_VENV) out build *.egg-info
