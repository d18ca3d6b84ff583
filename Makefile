# Two entry points (see README): `make demo` and `make test`. Both set up what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# A second environment with Spark 4.0 and its Spark Connect server: the Spark tests run there too, on
# Python 3.12 (the Python the Spark 4 runtimes pair with) when the machine has it.
SPARK4_VENV ?= .venv-spark4
SPARK4_PYTHON ?= $(shell .ci/find-python 3.12)
SPARK4_BASE := $(or $(SPARK4_PYTHON),$(PYTHON))
# named after the interpreter, so a venv made from another one is made again
SPARK4_STAMP := $(SPARK4_VENV)/.installed-$(notdir $(SPARK4_BASE))
SPARK4_TESTS := tests/test_spark_planned.py tests/test_spark_executors.py
# The tests that need neither Spark nor a browser also run on these Pythons, each in .venv-pyXY (.ci/test-python):
# the oldest and the newest supported (3.11 is .venv's; 3.12 runs the Spark 4 tests in .venv-spark4).
OTHER_PYTHONS ?= 3.10 3.13
# How each is installed (.ci/test-python --install): the oldest Python with the lowest versions pyproject.toml
# allows; the newest as a user installs (the wheel with [all], the newest versions, the test tools beside it
# without changing them; the tests of what depends on the install, then the card's ratio to PyIceberg at 100,000
# files).
PYTHON_INSTALL_3.10 ?= lowest
PYTHON_INSTALL_3.13 ?= user
install_of = $(or $(PYTHON_INSTALL_$(1)),test)
# The Spark 3.5 tests run a second time against Iceberg 1.10.2's runtime: snowpark-connect-deps-iceberg 1.0.3
# installed into this folder, put first on PYTHONPATH (the .venv keeps 1.0.1, which ships Iceberg 1.9.2).
# That jar lacks Iceberg's relocated Jackson: the tests that need Iceberg skip saying so (README, "Supported").
ICEBERG_NEXT := 1.10.2
ICEBERG_NEXT_DIR ?= .iceberg-$(ICEBERG_NEXT)
ICEBERG_NEXT_STAMP := $(ICEBERG_NEXT_DIR)/.installed-stamp
# Every test that starts Spark 3.5 with the Iceberg runtime (catalog names, position_deletes, the demo warehouse)
# or checks which runtime jar is found.
ICEBERG_NEXT_TESTS := tests/test_spark_setup.py tests/test_warehouse_spark.py tests/test_spark_pipeline.py \
	tests/test_spark_planned.py tests/test_cli_spark.py

.PHONY: demo docs test test-envs test-main test-spark4 test-iceberg-next test-pythons setup browser clean guards

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

$(SPARK4_STAMP): pyproject.toml
	@[ -n "$(SPARK4_PYTHON)" ] || echo "make test: no Python 3.12 here: $(SPARK4_VENV) (Spark 4.0) uses $(PYTHON) instead"
	$(SPARK4_BASE) -m venv --clear $(SPARK4_VENV)
	$(SPARK4_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SPARK4_VENV)/bin/python -m pip install --quiet -e ".[spark4]"
	touch $(SPARK4_STAMP)

$(ICEBERG_NEXT_STAMP): $(STAMP)
	rm -rf $(ICEBERG_NEXT_DIR)
	$(PY) -m pip install --quiet --no-deps --target $(ICEBERG_NEXT_DIR) "snowpark-connect-deps-iceberg==1.0.3"
	touch $(ICEBERG_NEXT_STAMP)

# Headless Chromium for the browser tests (Debian's package; needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP)
	$(PY) -m puffin_explorer.demo

# The documentation site (mkdocs.yml, docs/) into site/, offline; make test builds it strictly (tests/test_docs.py).
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

# The ratio guards (benchmarks/guards.py, docs/guards.md): the speed earlier issues promised, each ratio against
# its peer printed next to its floor; exits non-zero when a floor is missed. Not part of make test (no test
# asserts on time): run it before a change is called done. Ours runs in GUARDS_VENV, made as a user installs:
# `pip install ".[all]"` and nothing else (this checkout installed again, without its dependencies, whenever a
# source file changed); the peers (PyIceberg 0.12, pyroaring) in PEERS_VENV, installed with what GUARDS_VENV
# resolved as pip constraints (the same numpy, pyarrow and pyroaring on both sides).
GUARDS_VENV ?= .venv-user
PEERS_VENV ?= .venv-peers
GUARDS_ENV_STAMP := $(GUARDS_VENV)/.installed-stamp
GUARDS_PKG_STAMP := $(GUARDS_VENV)/.package-stamp
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp
PACKAGE_SOURCES := $(shell find puffin_explorer -name '*.py' -o -name '*.css')

$(GUARDS_ENV_STAMP): pyproject.toml
	$(PYTHON) -m venv --clear $(GUARDS_VENV)
	$(GUARDS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GUARDS_VENV)/bin/python -m pip install --quiet ".[all]"
	$(GUARDS_VENV)/bin/python -m pip freeze --exclude puffin-explorer > $(GUARDS_VENV)/constraints.txt
	touch $(GUARDS_ENV_STAMP) $(GUARDS_PKG_STAMP)

$(GUARDS_PKG_STAMP): $(GUARDS_ENV_STAMP) $(PACKAGE_SOURCES)
	$(GUARDS_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall .
	touch $(GUARDS_PKG_STAMP)

$(PEERS_STAMP): $(GUARDS_ENV_STAMP)
	$(PYTHON) -m venv --clear $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -c $(GUARDS_VENV)/constraints.txt "pyiceberg[pyarrow]==0.12.*" pyroaring numpy
	touch $(PEERS_STAMP)

guards: $(GUARDS_PKG_STAMP) $(PEERS_STAMP)
	$(GUARDS_VENV)/bin/python benchmarks/guards.py --peers-python $(PEERS_VENV)/bin/python

# The PNGs in docs/images: each notebook view in JupyterLab's light and dark themes, drawn by headless
# Chromium (needs `make browser` and the demo warehouse: python -m puffin_explorer.demo ./demo-warehouse).
.PHONY: screenshots
screenshots: $(STAMP)
	$(PY) docs/screenshots.py --out docs/images --warehouse ./demo-warehouse

# Two lanes at once, one per core. The .venv and Chromium are made first; then lane 1 runs test-main (every
# test of .venv and both notebooks) while lane 2 makes the other environments (one pip at a time) and runs
# Spark 4, the next Iceberg runtime and the other Pythons, into out/test-lane2.log, printed when both lanes
# are done. Every part runs even when an earlier one failed; make test fails if any did. Ctrl-C stops both.
# Lane 2 runs at a lower priority (nice 10): lane 1 is the longer, so a core both want goes to it first and
# lane 2 takes what lane 1 leaves (at equal priority each slowed the other and lane 1 ended last, alone).
LANE1 := test-main
LANE2 := test-spark4 test-iceberg-next $(addprefix test-python-,$(OTHER_PYTHONS))

test: $(STAMP) browser
	@mkdir -p out; rm -f out/test-lane2.log out/.test-lane2-failed; \
	setsid nice -n 10 bash -c 'failed=; $(MAKE) --no-print-directory test-envs || failed=" test-envs"; \
	  for part in $(LANE2); do $(MAKE) --no-print-directory $$part || failed="$$failed $$part"; \
	  done; echo "$$failed" > out/.test-lane2-failed' > out/test-lane2.log 2>&1 & lane2=$$!; \
	trap 'kill -- -$$lane2 2>/dev/null; exit 130' INT TERM; \
	echo "make test: $(LANE1) here; the environments, then $(LANE2) beside it (out/test-lane2.log)"; \
	failed=; for part in $(LANE1); do $(MAKE) --no-print-directory $$part || failed="$$failed $$part"; done; \
	wait $$lane2; echo "== make test, second lane: test-envs $(LANE2)"; cat out/test-lane2.log; \
	failed="$$failed$$(cat out/.test-lane2-failed 2>/dev/null || echo ' lane2')"; \
	if [ -n "$$(echo $$failed)" ]; then echo "make test: failed:$$failed"; exit 1; fi

# Every environment the test lanes use, made one after another.
test-envs: $(STAMP) browser $(SPARK4_STAMP) $(ICEBERG_NEXT_STAMP)
	@failed=; $(foreach v,$(OTHER_PYTHONS),.ci/test-python --prepare --install $(call install_of,$(v)) $(v) || failed=1;) \
	[ -z "$$failed" ]

test-main: $(STAMP) browser
	$(PY) -m pytest -p no:cacheprovider --durations=20 --nbval tests notebooks

test-spark4: $(SPARK4_STAMP)
	$(SPARK4_VENV)/bin/python -m pytest -p no:cacheprovider $(SPARK4_TESTS)

test-iceberg-next: $(ICEBERG_NEXT_STAMP)
	PYTHONPATH=$(abspath $(ICEBERG_NEXT_DIR))$${PYTHONPATH:+:$$PYTHONPATH} PUFFIN_EXPLORER_TEST_ICEBERG=$(ICEBERG_NEXT) \
	  $(PY) -m pytest -p no:cacheprovider $(ICEBERG_NEXT_TESTS)

test-pythons:
	@failed=; $(foreach v,$(OTHER_PYTHONS),.ci/test-python --install $(call install_of,$(v)) $(v) || failed="$$failed $(v)";) \
	if [ -n "$$failed" ]; then echo "make test: failed on Python$$failed"; exit 1; fi

# One of OTHER_PYTHONS: test-python-3.12 runs .ci/test-python 3.12, installed as PYTHON_INSTALL_3.12 says
test-python-%:
	@.ci/test-python --install $(call install_of,$*) $*

clean:
	rm -rf $(VENV) $(SPARK4_VENV) .venv-py3* $(GUARDS_VENV) $(PEERS_VENV) $(ICEBERG_NEXT_DIR) out build *.egg-info
