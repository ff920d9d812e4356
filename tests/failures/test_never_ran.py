"""A run that never ran (docs/failures.md#what-broke): every execution errored, so nothing was
measured.

Before, such a run -- `no_trace` on every case because the instrumentation was not installed,
or a system that raised on every call -- was `complete` and exited 3 with INSUFFICIENT_EVIDENCE
("more cases needed", the wrong advice), its errors listed once per trial. Now it is `failed`
and exits 5 in every output mode and when decided again; "What broke" comes first, leading
with the commonest error and a hint for the known kinds, and names each case once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case

# Four cases that raise, two that time out: each in both of its trials.
CASES = [case(f"c{i:03d}", "raise") for i in range(1, 5)] + [
    case("c005", "slow_first", fails=9, sleep=3), case("c006", "slow_first", fails=9, sleep=3)]


@pytest.fixture(scope="module")
def never_ran(tmp_path_factory: pytest.TempPathFactory) -> FailingProject:
    project = FailingProject(tmp_path_factory.mktemp("never") / "p")
    project.suite["trials"] = 2
    return project.set_system(timeout_s=0.5).write(CASES)


def test_it_is_failed_and_exits_5_with_what_broke_first(never_ran: FailingProject,
                                                        cli: Any) -> None:
    code, out, err = cli("run", cwd=never_ran.path, timeout=60, env={"COLUMNS": "400"})

    assert code == 5, (out, err)
    assert out.startswith("Run run_")
    first, rest = out.split("\n", 1)
    assert "· failed (nothing was measured: every execution errored) ·" in first
    assert rest.startswith(
        "What broke: every execution errored (12 of 12), so nothing was measured; the commonest "
        "error is system_error: Undeclared: the order service is down. 6 case(s) errored "
        "(12 executions)"), rest
    assert out.index("What broke") < out.index("Gate: BLOCK (exit 5)") < out.index("Decisions")
    broke = out[out.index("What broke"):out.index("Gate:")]
    assert "  system_error × 8: Undeclared: the order service is down\n" \
        "    cases: c001, c002, c003, c004\n" in broke, broke
    assert "  timeout × 4: " in broke and "    cases: c005, c006\n" in broke
    assert "hint: raise system.timeout_s" in broke
    assert "more cases" not in out.lower()


def test_every_output_and_every_later_decision_agree(never_ran: FailingProject,
                                                     cli: Any) -> None:
    code, out, err = cli("run", "--json", cwd=never_ran.path, timeout=60)

    assert code == 5, err
    document = json.loads(out)
    assert document["status"] == "failed"
    assert document["gate"]["action"] == "BLOCK"
    assert document["executions"]["ran"] == 12
    assert document["executions"]["errored"] == {"system_error": 8, "timeout": 4}
    assert {(e["case"], e["trial"]) for e in document["errors"]} == {
        (f"c{i:03d}", t) for i in range(1, 7) for t in (1, 2)}

    code, out, err = cli("gate", cwd=never_ran.path)
    assert code == 5, (out, err)
    assert "failed" in out.splitlines()[0]


def test_a_run_whose_instrumentation_is_missing_says_so_first(tmp_path: Path, cli: Any) -> None:
    """The issue's case: `system.trace: otel` with no span ever reaching Oloproof."""
    pytest.importorskip("opentelemetry.sdk")
    project = FailingProject(tmp_path / "p")
    del project.suite["system"]["records"]
    project.suite["system"]["trace"] = "otel"
    (project.path / "quiet.py").write_text(
        "def run(case_input):\n    return {'answer': 'yes'}\n", encoding="utf-8")
    project.suite["system"]["callable"] = "quiet:run"
    project.write([case(f"c{i:03d}") for i in range(1, 4)])

    code, out, err = cli("run", cwd=project.path)

    assert code == 5, (out, err)
    lead = " ".join(out[out.index("What broke"):out.index("no_trace × 3")].split())
    assert lead.startswith("What broke: every execution errored (3 of 3), so nothing was "
                           "measured; the commonest error is no_trace: "), lead
    assert "(hint: the instrumentation is not installed, or tracing is disabled" in lead
