# Two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs Oloproof from this checkout, scaffolds ./demo and runs it
#   make test   creates .venv, installs Oloproof with its test extras and Ray (the ray
#               executor's tests), and Debian's chromium for the browser tests, and runs the
#               whole test suite on two worker processes (docs/architecture.md#tests)
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# `make test` runs the suite on this many processes (pytest-xdist); 2 is the CI machine's cores
TEST_WORKERS ?= 2

.PHONY: demo test install browser bench clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.created
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.created
	$(PY) -m pip install -q -e '.[test,ray]'
	touch $@

install: $(VENV)/.installed

demo: install
	rm -rf demo
	$(VENV)/bin/oloproof init demo
	cd demo && ../$(VENV)/bin/oloproof run
	cd demo && ../$(VENV)/bin/oloproof run | grep -E '^(Gate|Cache):'

browser:
	bash scripts/install-browser.sh

test: $(VENV)/.installed-test browser
	$(PY) -m pytest -q -n $(TEST_WORKERS)

bench: install
	$(PY) benchmarks/startup.py
	$(PY) benchmarks/engine_scale.py
	$(PY) benchmarks/case_overhead.py
	$(PY) benchmarks/command_timeline.py
	$(PY) benchmarks/command_floor.py
	$(PY) benchmarks/concurrency.py
	$(PY) benchmarks/support_agent_scale.py
	$(PY) benchmarks/state_scale.py
	$(PY) benchmarks/betting.py
	$(PY) benchmarks/plan.py
	$(PY) benchmarks/coverage.py
	$(PY) benchmarks/compare_scale.py

clean:
	rm -rf $(VENV) demo .pytest_cache
