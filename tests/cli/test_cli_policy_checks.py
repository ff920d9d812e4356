"""A policy is checked against the suite it gates: no rule passes on nothing, no threshold is
read as something it does not say, and a policy that cannot block says so.

Each mistake below used to change the gate silently: an observed-count rule over a metric
whose every case was excluded read `PASS · 0 failures ≤ max 0`; `min: 70` on a pass rate
blocked for ever and `max: 5` allowed for ever; `.inf` printed `Gate: ALLOW` and then crashed
(exit 5, but exit 0 with `--json`, stored as ALLOW); `.nan` printed BLOCK, crashed, and broke
every later `gate` on the run; `min: "0.95"`, `version: true` and `trials: true` were read as
numbers. Each is now exit 2 before any system call, naming the file and line and saying what
to write (see docs/configuration.md#how-oloproof-fails-closed).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest


@pytest.fixture
def project(marked_starter: Path) -> Path:
    return marked_starter


def _policy(project: Path, *rules: str, head: str = "version: 1", name: str = "release.yaml"
            ) -> Path:
    """A policy of these rules (flow mappings), one a line from line 3."""
    path = project / name
    path.write_text(f"{head}\nrules:\n" + "".join(f"  - {r}\n" for r in rules),
                    encoding="utf-8")
    return path


def _config_error(cli, project: Path, *args: str) -> str:
    code, out, err = cli(*args, cwd=project)
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    message = err.strip()
    assert message.startswith("Configuration error:") and "\n" not in message, message
    return message


# ---- no rule passes on nothing -------------------------------------------------------------------

def test_an_observed_count_rule_over_excluded_cases_is_insufficient_not_a_pass(cli, project):
    """The issue's reproduction: a typo in `expected_field` excludes all 33 cases."""
    suite = project / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "expected_field: answer}", "expected_field: answr}"), encoding="utf-8")
    _policy(project, "{id: all-right, metric: answer_correct, kind: observed_count, "
                     "max_failures: 0}")

    code, out, err = cli("run", cwd=project)

    assert code == 3, (out, err)  # BLOCK on INSUFFICIENT_EVIDENCE only
    assert "Gate: BLOCK (exit 3)" in out
    assert "INSUFFICIENT_EVIDENCE · no observed case" in out
    assert "0 failures ≤ max 0" not in out

    code, out, _ = cli("gate", "--json", cwd=project)
    assert code == 3
    decision = json.loads(out)["decisions"][0]
    assert (decision["state"], decision["reasons"]) == ("INSUFFICIENT_EVIDENCE",
                                                        ["no_observations"])
    metric = next(m for m in json.loads(out)["metrics"] if m["id"] == "answer_correct")
    assert (metric["observed"], metric["excluded"]) == (0, 33)


# ---- thresholds checked against what they bound --------------------------------------------------

@pytest.mark.parametrize(("rule", "says"), [
    ("{id: answers, metric: answer_correct, min: 70}",
     "rule 'answers': min: 70 cannot bound 'answer_correct', a pass rate: a rate is between 0 "
     "and 1: write 0.70"),
    ("{id: answers, metric: answer_correct, max: 5}",
     "max: 5 cannot bound 'answer_correct', a pass rate: a rate is between 0 and 1: write 0.05"),
    ("{id: answers, metric: answer_correct, min: -5}",
     "min: -5 cannot bound 'answer_correct', a pass rate: a rate is between 0 and 1: write it "
     "as a fraction (min: 0.95 is 95%)"),
    ("{id: answers, metric: answer_correct, min: 1.5}", "a rate is between 0 and 1: write 0.015"),
    ("{id: answers, metric: answer_correct, min: .inf}",
     "rules[0].min: must be a finite number (got .inf); write a number, e.g. min: 0.95"),
    ("{id: answers, metric: answer_correct, min: -.inf}",
     "rules[0].min: must be a finite number (got -.inf)"),
    ("{id: answers, metric: answer_correct, min: .nan}",
     "rules[0].min: must be a finite number (got .nan)"),
    ("{id: answers, metric: answer_correct, min: \"0.95\"}",
     "rules[0].min: must be a number, unquoted: write min: 0.95 (got '0.95')"),
    ("{id: answers, metric: answer_correct, min: true}",
     "rules[0].min: must be a number, not true or false (got true)"),
    ("{id: short, metric: steps_p50, max: .inf}",
     "rules[0].max: must be a finite number (got .inf)"),
    ("{id: short, metric: steps_p50, max: \"8\"}",
     "rules[0].max: must be a number, unquoted: write max: 8 (got '8')"),
    ("{id: ok, metric: agent_constraints_satisfied, kind: observed_count, max_failures: true}",
     "rules[0].max_failures: must be a whole number, not true or false (got true)"),
    ("{id: ok, metric: agent_constraints_satisfied, kind: observed_count, max_failures: 1.5}",
     "rules[0].max_failures: must be a whole number (got 1.5)"),
    ("{id: ok, metric: agent_constraints_satisfied, kind: observed_count, max_failures: \"0\"}",
     "rules[0].max_failures: must be a whole number, unquoted: write max_failures: 0"),
    ("{id: ok, metric: agent_constraints_satisfied, kind: observed_count, max_failures: -1}",
     "rules[0].max_failures: must be at least 0"),
], ids=["min 70", "max 5", "min -5", "min 1.5", "inf", "-inf", "nan", "quoted", "true",
        "quantile inf", "quantile quoted", "max_failures true", "max_failures 1.5",
        "max_failures quoted", "max_failures negative"])
def test_a_threshold_that_cannot_bound_its_metric_is_a_configuration_error(cli, project, rule,
                                                                          says):
    _policy(project, rule)

    message = _config_error(cli, project, "run")

    assert "release.yaml:3: " in message and says in message
    assert not (project / "calls.log").exists(), "the run never starts"

    code, out, err = cli("run", "--json", cwd=project)  # the same exit code in either mode
    assert code == 2 and err == ""
    error = json.loads(out)["error"]
    assert (error["kind"], Path(error["file"]).name, error["line"]) == (
        "configuration", "release.yaml", 3)
    assert says in error["message"]


def test_a_quantile_threshold_is_in_the_metric_s_unit_not_a_fraction(cli, project):
    """`max: 70` is a fine bound on a number of steps (only rates are fractions)."""
    _policy(project, "{id: short, metric: steps_p50, max: 70}",
            "{id: answers, metric: answer_correct, min: 0}",
            "{id: right-tools, metric: agent_tool_sequence, max: 1}")

    code, out, err = cli("run", cwd=project)

    assert code == 0, (out, err)


@pytest.mark.parametrize(("head", "line", "says"), [
    ("version: true", 1, "version: must be 1, not true: write version: 1"),
    ("version: 1.0", 1, "version: must be 1, not 1.0: write version: 1"),
    ("version: 1\nconfidence_level: \"0.9\"", 2,
     "confidence_level: must be a number, unquoted: write confidence_level: 0.9"),
    ("version: 1\nconfidence_level: .nan", 2,
     "confidence_level: must be a finite number (got .nan); write a number, e.g. "
     "confidence_level: 0.95"),
    ("version: 1\nconfidence_level: true", 2,
     "confidence_level: must be a number, not true or false (got true)"),
    # a percentage meant as the probability it names
    ("version: 1\nconfidence_level: 95", 2,
     "confidence_level: is a probability between 0.5 and 1: write 0.95"),
    ("version: 1\nconfidence_level: 99.5", 2,
     "confidence_level: is a probability between 0.5 and 1: write 0.995"),
    ("version: 1\nconfidence_level: 1.5", 2, "confidence_level: must be less than 1.0"),
])
def test_policy_settings_are_read_as_written(cli, project, head, line, says):
    _policy(project, "{id: answers, metric: answer_correct, min: 0.85}", head=head)

    message = _config_error(cli, project, "run")

    assert f"release.yaml:{line}: {says}" in message


def test_a_margin_written_as_text_is_an_error(cli, project):
    _policy(project, "{id: no-worse, metric: answer_correct, kind: non_inferiority, "
                     "margin: \"0.02\"}", head="version: 1\nbaseline: latest~1")

    message = _config_error(cli, project, "run")

    assert "release.yaml:4: rules[0].margin: must be a number, unquoted: write margin: 0.02" \
        in message


@pytest.mark.parametrize(("old", "new", "says"), [
    ("version: 1\n", "version: true\n", ":2: version: must be 1, not true: write version: 1"),
    ("min_slice_support: 5", "trials: true",
     "trials: must be a whole number, not true or false (got true); write a whole number, "
     "e.g. trials: 5"),
    ("min_slice_support: 5", "trials: 2.0", "trials: must be a whole number: write trials: 2"),
    ("concurrency: 8", "concurrency: \"8\"",
     "system.concurrency: must be a whole number, unquoted: write concurrency: 8 (got '8')"),
    ("timeout_s: 30", "timeout_s: .inf",
     "system.timeout_s: must be a finite number (got .inf); write a number, e.g. timeout_s: 60"),
    ("quantile: 0.5}", "quantile: .nan}", "metrics[0].quantile: must be a finite number"),
    ("{type: agent_tool_sequence}", "{type: agent_max_steps, max_steps: \"20\"}",
     "evaluators[2].max_steps: must be a whole number, unquoted: write max_steps: 20"),
], ids=["version true", "trials true", "trials 2.0", "concurrency quoted", "timeout inf",
        "quantile nan", "evaluator field quoted"])
def test_suite_numbers_are_read_as_written(cli, project, old, new, says):
    suite = project / "oloproof.yaml"
    text = suite.read_text(encoding="utf-8")
    assert old in text
    suite.write_text(text.replace(old, new, 1), encoding="utf-8")
    if "agent_max_steps" in new:
        _policy(project, "{id: answers, metric: answer_correct, min: 0.85}")

    message = _config_error(cli, project, "run")

    assert "oloproof.yaml:" in message and says in message
    assert not (project / "calls.log").exists()


def test_gate_and_plan_check_another_policy_against_the_stored_suite(cli, project):
    assert cli("run", cwd=project).code == 0
    _policy(project, "{id: answers, metric: answer_correct, min: 85}", name="strict.yaml")
    says = "strict.yaml:3: rule 'answers': min: 85 cannot bound 'answer_correct', a pass rate: " \
        "a rate is between 0 and 1: write 0.85"

    assert says in _config_error(cli, project, "gate", "--policy", "strict.yaml")
    assert says in _config_error(cli, project, "plan", "--policy", "strict.yaml")
    code, out, _ = cli("gate", "latest", "--policy", "strict.yaml", "--json", cwd=project)
    assert code == 2 and "write 0.85" in json.loads(out)["error"]["message"]


def test_a_stored_policy_refused_now_is_a_configuration_error_not_a_crash(cli, project):
    """A run stored with a NaN threshold (as earlier versions let through) re-decided."""
    assert cli("run", cwd=project).code == 0
    store = sqlite3.connect(project / ".oloproof" / "store.sqlite")
    with store:
        (policy,) = store.execute("SELECT policy FROM runs").fetchone()
        stored = json.loads(policy)
        stored["rules"][0]["min"] = float("nan")
        store.execute("UPDATE runs SET policy = ?", (json.dumps(stored),))
    store.close()

    for command in ("gate", "plan"):
        message = _config_error(cli, project, command)
        assert "was decided under a policy that is not valid now: rules[0].min: must be a " \
            "finite number (got .nan)" in message
        assert "--policy release.yaml" in message
    assert cli("gate", "--policy", "release.yaml", cwd=project).code == 0


# ---- a policy that cannot block ------------------------------------------------------------------

NOTHING_BLOCKS = "the policy blocks on nothing (`block_on: []`)"


def test_block_on_nothing_warns(cli, project):
    suite = project / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "expected_field: answer}", "expected_field: answr}"), encoding="utf-8")
    _policy(project, "{id: answers, metric: answer_correct, min: 0.85}",
            head="version: 1\nblock_on: []")

    code, out, err = cli("run", cwd=project)

    assert code == 0, (out, err)  # what the policy says: nothing blocks
    assert NOTHING_BLOCKS in out
    assert "INSUFFICIENT_EVIDENCE" in out

    code, out, err = cli("run", "--json", cwd=project)
    assert code == 0
    document = json.loads(out)  # stdout is the JSON document and nothing else
    assert any(NOTHING_BLOCKS in w for w in document["warnings"])
    code, out, _ = cli("gate", "--json", cwd=project)
    assert any(NOTHING_BLOCKS in w for w in json.loads(out)["warnings"])


def test_the_default_block_on_does_not_warn(cli, project):
    code, out, _ = cli("run", "--json", cwd=project)

    assert code == 0
    assert not any(NOTHING_BLOCKS in w for w in json.loads(out)["warnings"])
