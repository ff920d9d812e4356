"""The flaky_agent example (docs/reliability.md): its figures come out of the real engine, and they
are the ones its README prints and explains."""

from __future__ import annotations

import json
import re
from math import comb

import pytest
from _run_example import EXAMPLES, example_fixtures, run_cli
from terminal_text import row

import oloproof
from oloproof.stats import percent, rate_interval

project, terminal, document, every_slice = example_fixtures("flaky_agent", exit_code=1)

README = (EXAMPLES / "flaky_agent" / "README.md").read_text(encoding="utf-8")


def _blocks() -> list[str]:
    return re.findall(r"```\n(.*?)```", README, flags=re.S)


def _without_run_ids(text: str) -> str:
    return re.sub(r"run_[0-9A-Z]{26}", "run_…", text)


def test_the_readmes_decisions_and_metrics_are_what_the_run_prints(terminal: str) -> None:
    printed = next(b for b in _blocks() if b.startswith("Decisions"))

    assert printed in terminal, "the README pastes the real output"


def test_the_readmes_flaky_list_is_what_inspect_prints(project, terminal: str) -> None:
    done = run_cli(project, "inspect", "latest", "--flaky")
    assert done.returncode == 0, done.stderr
    shown = next(b for b in _blocks() if b.startswith("Flaky cases"))

    # The README shows the head of the list (the run id varies from run to run).
    assert _without_run_ids(done.stdout).startswith(shown)


def test_the_readmes_case_panel_lines_are_what_inspect_prints(project, terminal: str) -> None:
    done = run_cli(project, "inspect", "latest", "--case", "req-004")
    assert done.returncode == 0, done.stderr
    shown = next(b for b in _blocks() if b.startswith("Trials side by side"))

    for piece in shown.split("…\n"):
        assert piece.strip() in done.stdout


def test_pass_one_looks_healthy_and_pass_five_does_not(document: dict) -> None:
    metrics = {m["id"]: m for m in document["metrics"]}
    decisions = {d["rule"]: d["state"] for d in document["decisions"]}

    assert decisions == {"answer-floor": "PASS", "answer-every-time": "FAIL"}
    assert document["gate"] == {"action": "BLOCK", "exit_code": 1}
    assert metrics["answer_correct"]["estimate"] > 0.85 > 0.5 > \
        metrics["answer_pass_hat_5"]["estimate"]
    assert metrics["answer_correct"]["method"] == "bentkus"
    assert metrics["answer_pass_hat_5"]["method"] == "clopper_pearson"
    assert document["trials"] == 5 and document["cases"] == 60


def test_the_figures_follow_from_each_requests_trials(project, document: dict) -> None:
    cases = oloproof.load_case_trials("latest", project / "oloproof.yaml")
    passed = [c.counts[0].passed for c in cases]
    metrics = {m["id"]: m for m in document["metrics"]}

    assert len(cases) == 60 and all(c.counts[0].counted == 5 for c in cases)
    # The README's account: 28 requests right every time, 24 four times, 7 three, 1 twice.
    assert sorted(passed, reverse=True) == [5] * 28 + [4] * 24 + [3] * 7 + [2]
    # The mean of the requests' values (a float mean of 60 fractions: equal to 1e-12).
    assert metrics["answer_correct"]["estimate"] == pytest.approx(sum(passed) / 300, abs=1e-12)
    assert metrics["answer_pass_hat_2"]["estimate"] == pytest.approx(
        sum(comb(c, 2) / comb(5, 2) for c in passed) / 60, abs=1e-12)
    exact = rate_interval(28, 60, 0, 0.95)
    assert (metrics["answer_pass_hat_5"]["lower"], metrics["answer_pass_hat_5"]["upper"]) == (
        exact.lower, exact.upper)
    assert metrics["answer_pass_at_5"]["passed"] == 60
    for figure in ("86.3%", "46.7%", "74.3%", "259 of 300", "28 of the 60", "44 requests"):
        assert figure in README
    assert percent(metrics["answer_pass_hat_5"]["estimate"]) == "46.7%"


def test_a_second_run_is_served_from_the_cache_and_more_trials_run_only_the_new_ones(
        project, terminal: str) -> None:
    again = run_cli(project, "run", "--json")
    assert json.loads(again.stdout)["cache"]["execution"] == {"hit": 300, "miss": 0}

    more = run_cli(project, "run", "--json", "--trials", "7")

    assert more.returncode in (0, 1, 3), more.stderr
    assert json.loads(more.stdout)["cache"]["execution"] == {"hit": 300, "miss": 120}


def test_the_metrics_table_reads_cases_times_trials(terminal: str) -> None:
    shown = row(terminal, "Metrics", Metric="answer_correct")

    assert shown["N"] == "60 cases × 5 trials · 0 missing trials · 0 excluded"
