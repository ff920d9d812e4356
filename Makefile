# Two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs Oloproof from this checkout, scaffolds ./demo and runs it
#   make test   creates .venv, installs Oloproof with its test extras and Ray (the ray
#               executor's tests), and Debian's chromium for the browser tests, runs the
#               whole test suite on three worker processes (docs/architecture.md#tests) and,
#               beside it, the type check (mypy, strict: pyproject.toml's [tool.mypy])
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# `make test` runs the suite on this many processes (pytest-xdist): one more than the CI
# machine's two cores, as much of the suite waits (docs/architecture.md#tests)
TEST_WORKERS ?= 3

.PHONY: demo test install browser bench bench-check clean

# uv installs into the venv what pip would (the same resolution from PyPI), for less CPU: on a
# fresh clone `pip install -e '.[test,ray]'` took 78 s (53 s of CPU, most of it compiling every
# installed package's bytecode); uv 24 s (4.6 s) before it compiled, and its compiling about
# 33 s of CPU more, on both cores. The venv's own pip stays, for what runs pip
# (benchmarks/_versions.py).
UV := $(VENV)/bin/uv pip install -q --python $(PY)

# The venv is made without pip and uv put into it by the interpreter's own pip (`--python`,
# pip 22.3 and later), then uv installs the venv's pip: 3.6 s in all, where `venv` seeding pip
# (ensurepip compiles it) and that pip installing uv took 8.1 s. Where the interpreter has no
# pip, or one too old for `--python`, the venv's pip is seeded as before.
$(VENV)/.created:
	$(PYTHON) -m venv --without-pip $(VENV)
	if $(PYTHON) -m pip --python $(PY) install -q uv; then :; else \
	  $(PY) -m ensurepip >/dev/null && $(PY) -m pip install -q uv; fi
	$(UV) pip
	touch $@

# Compiled when installed, as pip does: where PYTHONDONTWRITEBYTECODE is set, every command
# would otherwise compile what it imports each time it starts (the demo's run: 2.1 s of CPU
# against 1.15 s), and a benchmark would time the compiling.
$(VENV)/.installed: pyproject.toml $(VENV)/.created
	$(UV) --compile-bytecode -e .
	touch $@

# The test install is not compiled: `make test` writes the bytecode of what the suite imports
# as it imports it (below), about 5,100 of the 12,800 modules installed, 14 s of CPU spread over
# the run, where compiling all of them when installed took 29 s of CPU on the run's critical
# path (uv's 34.6 s against 7.9 s without). The benchmarks compile it all first
# ($(VENV)/.compiled-test), so no scenario times the compiling.
$(VENV)/.installed-test: pyproject.toml $(VENV)/.created
	$(UV) -e '.[test,ray]'
	touch $@

$(VENV)/.compiled-test: $(VENV)/.installed-test
	$(PY) -m compileall -q -j0 $$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') > /dev/null
	touch $@

install: $(VENV)/.installed

demo: install
	rm -rf demo
	$(VENV)/bin/oloproof init demo
	cd demo && ../$(VENV)/bin/oloproof run
	cd demo && ../$(VENV)/bin/oloproof run | grep -E '^(Gate|Cache):'

browser:
	bash scripts/install-browser.sh

# The test run writes bytecode even where PYTHONDONTWRITEBYTECODE is set: it starts many fresh
# interpreters that import the engine (the commands, the `processes` executor's and Ray's
# workers, the pytest plugin's sessions) and every pytest process rewrites the asserts of the
# test modules it collects; with nothing written, each compiled src/ again (a fifth of the CPU
# of tests/scale/test_processes.py) and each of pytest's processes spent 22 s of CPU
# collecting the suite, against 10 s once its rewritten modules were cached. What is written
# is __pycache__/, which git ignores.
#
# The install and Debian's Chromium are fetched side by side (-j2): one from PyPI, one from
# Debian's mirrors, each mostly waiting on the network (on a fresh machine uv took 24 s
# before it compiled; `apt-get update` 10 s and Chromium's 81 MB download 10 s more before
# it unpacks).
#
# The type check runs beside the tests, its output shown once they end: alone after them it
# held one core for about 20 s while the other stood idle. `make test` fails if either fails.
test:
	$(MAKE) --no-print-directory -j2 $(VENV)/.installed-test browser
	@echo "$(PY) -m mypy src > $(VENV)/mypy.log &"; \
	$(PY) -m mypy src > $(VENV)/mypy.log 2>&1 & typecheck=$$!; \
	echo "env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n $(TEST_WORKERS)"; \
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n $(TEST_WORKERS); tests=$$?; \
	wait $$typecheck; typed=$$?; \
	echo "$(PY) -m mypy src"; cat $(VENV)/mypy.log; \
	exit $$(( tests ? tests : typed ))

# The benchmarks (benchmarks/README.md): every scenario but those it says are left out, each
# saved as JSON under benchmarks/results/, then benchmarks/RESULTS.md written from them.
# Exits 1 when a target is missed.
bench: $(VENV)/.compiled-test browser
	$(PY) -m benchmarks --all; status=$$?; $(PY) -m benchmarks --summary; exit $$status

# The fast scenarios with targets (start-up, the dataset scan, comparing two 20,000-case runs,
# the plan, and the quick validity ones): those declaring QUICK, at those arguments, saving
# nothing; exits 1 when a target is missed
bench-check: install
	$(PY) -m benchmarks --quick

clean:
	rm -rf $(VENV) demo .pytest_cache
