"""The examples in the docstrings of `oloproof.stats` and `oloproof.api` run, and print what
they say (`>>>` lines, as scipy's docstrings do).

Each module of the two packages is one test. The statistics modules named in `EXAMPLES` must
hold examples, so one cannot be dropped unnoticed; `oloproof.api`'s worked example runs the
starter project in a temporary folder. `pytest --doctest-modules src/oloproof/stats` runs the
same examples.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import oloproof.api
import oloproof.stats

MODULES = sorted(
    name for package in (oloproof.stats, oloproof.api)
    for name in [package.__name__] + [f"{package.__name__}.{m.name}"
                                      for m in pkgutil.iter_modules(package.__path__)]
) + ["oloproof.placeholders"]

# The modules that must hold at least one example.
EXAMPLES = {
    "oloproof.stats", "oloproof.stats.agreement", "oloproof.stats.assurance",
    "oloproof.stats.bentkus", "oloproof.stats.cluster_ratio",
    "oloproof.stats.betting", "oloproof.stats.binomial", "oloproof.stats.clustered_quantile",
    "oloproof.stats.display", "oloproof.stats.melded", "oloproof.stats.multiplicity",
    "oloproof.stats.paired", "oloproof.stats.prediction_powered", "oloproof.stats.projection",
    "oloproof.stats.quantile", "oloproof.stats.verdict_strata", "oloproof.stats.ppi_plus",
    "oloproof.stats.error_spending", "oloproof.stats.sequential", "oloproof.stats.simultaneous",
    "oloproof.api", "oloproof.placeholders",
}


def test_the_modules_with_examples_exist() -> None:
    assert sorted(EXAMPLES - set(MODULES)) == []


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_print_what_they_say(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out = io.StringIO()
    examples = 0
    # The finder keeps the module's own objects: what it imports is tested where it is defined.
    for test in finder.find(module, name):
        examples += len(test.examples)
        runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()
    if name in EXAMPLES:
        assert examples > 0, f"{name} has lost its examples"
