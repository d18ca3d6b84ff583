# Two entry points (see README): `make demo` and `make test`. Both set up what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test setup browser clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Headless Chromium for the browser tests (Debian's package; needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP)
	$(PY) -m puffin_explorer.demo

test: $(STAMP) browser
	$(PY) -m pytest -p no:cacheprovider --nbval tests notebooks

clean:
	rm -rf $(VENV) out build *.egg-info
