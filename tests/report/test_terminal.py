"""The terminal report fits the terminal and says what to read next (issue 10 §1-§2).

Each project is run once; its report is read back at 80, 120 and 200 columns. At every width
no line is wider than the width, and every value reads the same as in the widest layout —
stacked or drawn as a table, nothing is dropped or cut.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from terminal_text import row, table

import oloproof

EXAMPLES = Path(oloproof.__file__).parent / "examples"
WIDTHS = (80, 120)
BIDI_ID = "trip-\u202egnp.exe"

BRITTLE = '''\
"""A custom check that breaks on every case (an evaluator bug)."""

import oloproof


@oloproof.evaluator(name="brittle")
def brittle(case, output, artifacts):
    raise ValueError("the check broke on " + case["id"])
'''


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("terminal")
    made = {}
    for name in ("support_agent", "triage_agents"):
        project = root / name
        shutil.copytree(EXAMPLES / name, project,
                        ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
        code, _, err = cli("run", cwd=project)
        assert code == 1, err
        made[name] = project
    return made


@pytest.fixture(scope="module")
def brittle(new_probe: Any, cli: Any) -> Any:
    """Twenty cases, a custom check that raises on every one, a latency quantile, a case id
    with a right-to-left override, and fifteen wrong answers among twenty cases."""
    probe = new_probe()
    cases = probe.plain_cases(20)
    for case in cases[:15]:
        case["input"]["answer"] = "no"
    cases[0]["id"] = BIDI_ID
    probe.write_cases(cases)
    (probe.path / "checks.py").write_text(BRITTLE, encoding="utf-8")
    probe.suite["evaluators"].append({"type": "custom", "name": "brittle",
                                      "callable": "checks:brittle"})
    probe.suite["metrics"].append({"id": "latency_p50", "type": "quantile",
                                   "source": "latency_ms", "quantile": 0.5})
    probe.write_suite()
    code, _, err = cli("run", cwd=probe.path)
    assert code == 1, err
    return probe


def _report(cli: Any, project: Path, width: int, *args: str) -> str:
    code, out, err = cli("inspect", "latest", *args, cwd=project, env={"COLUMNS": str(width)})
    assert code == 0, err
    return out


def _too_wide(output: str, width: int) -> list[str]:
    return [line for line in output.splitlines() if cell_len(line) > width]


SECTIONS = ("Decisions", "Metrics", "Slices")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["support_agent", "triage_agents"])
def test_every_table_fits_and_keeps_every_value(examples: dict[str, Path], cli: Any,
                                                name: str, width: int) -> None:
    wide = _report(cli, examples[name], 250, "--slices", "all")
    narrow = _report(cli, examples[name], width, "--slices", "all")

    assert _too_wide(narrow, width) == []
    assert "…" not in narrow, "nothing is cut short"
    for title in SECTIONS:
        assert table(narrow, title) == table(wide, title), title
    assert "┏" in wide and "┏" not in narrow.split("Decisions")[1].split("Metrics")[0], \
        "at this width the Decisions table is stacked"


def test_at_120_columns_a_table_that_fits_is_drawn_as_a_table(examples: dict[str, Path],
                                                              cli: Any) -> None:
    out = _report(cli, examples["support_agent"], 120)

    metrics = out[out.index("Metrics"):out.index("Missing and excluded")]
    assert metrics.splitlines()[1].startswith("┏")
    assert max(cell_len(line) for line in metrics.splitlines()) <= 120


def test_piped_output_is_80_columns_unless_columns_says_otherwise(examples: dict[str, Path],
                                                                   cli: Any) -> None:
    default = cli("inspect", "latest", cwd=examples["support_agent"],
                  env={"COLUMNS": None}).out
    wide = cli("inspect", "latest", cwd=examples["support_agent"], env={"COLUMNS": "160"}).out

    assert max(cell_len(line) for line in default.splitlines()) <= 80
    assert max(cell_len(line) for line in wide.splitlines()) > 120


def test_decisions_show_the_numbers_they_compared(examples: dict[str, Path], cli: Any) -> None:
    out = _report(cli, examples["triage_agents"], 80)

    assert row(out, "Decisions", Rule="answer-floor")["State"] == \
        "PASS · lower 82.7% ≥ min 80.0%"
    assert row(out, "Decisions", Rule="routing-floor")["State"] == \
        "INSUFFICIENT_EVIDENCE · lower 69.2% < min 70.0% ≤ upper 96.3%"
    assert row(out, "Decisions", Rule="no-overreach")["State"] == "FAIL · 2 failures > max 0"


def test_limits_are_only_those_that_apply_to_the_suite(examples: dict[str, Path],
                                                       cli: Any) -> None:
    support = _report(cli, examples["support_agent"], 200)
    triage = _report(cli, examples["triage_agents"], 200)

    assert "Which agent is to blame" in triage and "Which agent is to blame" not in support
    for out in (support, triage):
        assert "nobody declared" not in out, "neither declares faults or transforms"
        assert "Whether the sandbox behaves like production" not in out, "no sandbox"


def test_the_report_names_the_failing_cases_and_the_commands_that_show_more(
        examples: dict[str, Path], cli: Any) -> None:
    out = _report(cli, examples["support_agent"], 80)
    run_id = out.split()[1]

    section = out[out.index("Failing cases"):out.index("Cache:")]
    assert section.splitlines()[0] == \
        "Failing cases: 16 failed a criterion or errored (the first 10 by case id)"
    assert "  case_003: failed agent_no_tool_loop, agent_tool_sequence" in section
    assert len(re.findall(r"^  case_\d+:", section, flags=re.M)) == 10
    assert f"    oloproof inspect {run_id} --failures\n" in section
    assert f"    oloproof cases {run_id}\n" in section


def test_missing_cases_by_reason_with_the_first_error(brittle: Any, cli: Any) -> None:
    out = _report(cli, brittle.path, 80)

    assert row(out, "Metrics", Metric="brittle")["N"] == \
        "0 / 0 observed · 20 missing · 0 excluded"
    section = out[out.index("Missing and excluded cases, by reason"):]
    assert ("brittle: 20 missing: evaluator_error 20 (first: c002: ValueError: the check "
            "broke on c002)") in " ".join(section.split())


def test_latency_is_rounded_like_the_rest(brittle: Any, cli: Any) -> None:
    out = _report(cli, brittle.path, 200)
    document = json.loads(_report(cli, brittle.path, 200, "--json"))
    latency = next(m for m in document["metrics"] if m["id"] == "latency_p50")

    shown = row(out, "Metrics", Metric="latency_p50")
    estimate, interval = shown["Estimate"], shown["Interval"]
    numbers = [float(x) for x in re.findall(r"[\d.]+", estimate + " " + interval)]
    assert estimate.endswith(" ms") and interval.endswith("] ms")
    for text in re.findall(r"\d+\.\d+", estimate + interval):
        digits = text.replace(".", "").lstrip("0")
        assert len(digits) <= 3, f"{text}: three significant digits at most"
    # rounded outward: the printed interval contains the computed one
    assert numbers[1] <= latency["lower"] and numbers[2] >= latency["upper"]


def test_a_bidi_control_in_a_case_id_is_shown_escaped(brittle: Any, cli: Any) -> None:
    listed = cli("cases", "latest", cwd=brittle.path).out
    failures = cli("inspect", "latest", "--failures", cwd=brittle.path).out
    panel = cli("inspect", "latest", "--case", BIDI_ID, cwd=brittle.path).out

    for text in (listed, failures, panel):
        assert "\u202e" not in text
        assert "trip-\\u202egnp.exe" in text


def test_cases_lists_every_case_with_its_verdicts(brittle: Any, cli: Any) -> None:
    code, out, _ = cli("cases", "latest", cwd=brittle.path)
    data = json.loads(cli("cases", "latest", "--json", cwd=brittle.path).out)

    assert code == 0
    assert out.splitlines()[0].startswith("20 cases of run run_")
    assert len(data["cases"]) == 20
    assert data["criteria"] == ["answer_correct", "agent_tool_lookup_called", "brittle"]
    assert data["cases"][0] == {"case": "c002", "verdicts": {
        "answer_correct": "failed", "agent_tool_lookup_called": "passed",
        "brittle": "missing"}}
    assert re.search(r"^  c016 +PPM  missing brittle$", out, flags=re.M)


def test_inspect_failures_starts_with_one_line_per_case_and_filters(brittle: Any,
                                                                    cli: Any) -> None:
    failed = cli("inspect", "latest", "--failures", "--verdict", "failed", cwd=brittle.path).out
    missing = cli("cases", "latest", "--criterion", "brittle", "--verdict", "missing",
                  "--json", cwd=brittle.path).out
    none = cli("inspect", "latest", "--criterion", "agent_tool_lookup_called", "--verdict",
               "failed", cwd=brittle.path).out
    wrong = cli("inspect", "latest", "--criterion", "nope", cwd=brittle.path)

    head = failed.split("\nCase ")[0]
    assert head.splitlines()[0].startswith("15 of 20 cases of run run_")
    assert head.splitlines()[0].endswith("failed")
    assert len(re.findall(r"^  \S+ +FPM  failed answer_correct; missing brittle$", head,
                          flags=re.M)) == 15
    assert failed.count("\nCase ") == 15, "then each case whole"
    assert len(json.loads(missing)["cases"]) == 20
    assert " ".join(none.split()).startswith(
        "No case failed on agent_tool_lookup_called in run run_")
    assert wrong.code == 2 and "criteria: answer_correct, agent_tool_lookup_called, brittle" \
        in wrong.err


def test_an_unknown_case_points_to_the_command_that_lists_case_ids(brittle: Any,
                                                                    cli: Any) -> None:
    code, _, err = cli("inspect", "latest", "--case", "nope", cwd=brittle.path)

    assert code == 2
    assert "has no case 'nope'" in err and "`oloproof cases run_" in err


@pytest.mark.parametrize("width", WIDTHS)
def test_the_case_panel_stacks_its_criteria_and_never_splits_a_name(examples: dict[str, Path],
                                                                     cli: Any,
                                                                     width: int) -> None:
    project = examples["support_agent"]
    summary = _report(cli, project, 250, "--failures").split("\nCase ")[0]
    case_id = re.findall(r"^  (\S+) +[PFMX]+  failed", summary, flags=re.M)[0]
    wide = _report(cli, project, 250, "--case", case_id)
    narrow = _report(cli, project, width, "--case", case_id)

    assert _too_wide(narrow, width) == []
    criteria = _words(table(narrow, "Criteria"))
    assert criteria == _words(table(wide, "Criteria")), "every value, only wrapped"
    names = [row["Criterion"] for row in criteria]
    assert "agent_tool_lookup_order_called" in names and len(names) == 6
    body = narrow[narrow.index("\nCriteria\n"):]
    for name in names:  # each name whole on one line, beside its verdict
        assert re.search(rf"^  {name} +(passed|failed|missing|excluded)$", body, flags=re.M)
    assert any(row["Verdict"] == "failed" and row["Reason"] for row in criteria)


def _words(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: " ".join(v.split()) for k, v in r.items()} for r in rows]
