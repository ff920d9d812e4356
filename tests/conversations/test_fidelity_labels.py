"""The fidelity judge checked against people's labels
(docs/conversations.md#unfaithful-a-judge-not-a-pattern) as any judge criterion is: `labels
sample --criterion simulator_fidelity` draws the simulated conversations as the judge was
shown them, people label them, and the criterion is checked; a conversation the judge fails is
`unfaithful` for the agent's criteria."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conversation_project import ConversationProject, customers
from test_audit import FIDELITY_JUDGE

from oloproof.stats.verdict_strata import STRATIFIED_METHOD
from oloproof.suite.judge_labels import read_labels_file

STRAY = {3, 7}


def _run(cli: Any, root: Path) -> dict[str, Any]:
    code, out, err = cli("run", "--json", cwd=root)
    assert code in (0, 3), err
    return dict(json.loads(out))


def test_the_fidelity_judge_is_checked_against_peoples_labels(tmp_path: Path,
                                                              cli: Any) -> None:
    project = ConversationProject(tmp_path / "fidelity")
    (project.root / "fidelity_judge.py").write_text(FIDELITY_JUDGE, encoding="utf-8")
    project.suite["judges"] = [{"name": "checker", "callable": "fidelity_judge:fidelity"}]
    # (ten labels agreeing every time show an agreement of at least 69%, at 95%)
    project.suite["simulator_fidelity"] = {"judge": "checker", "minimum_agreement": 0.6,
                                           "labels": "labels/fidelity.jsonl"}
    project.policy["rules"] = [{"id": "fidelity", "metric": "simulator_fidelity", "min": 0.5}]
    project.write()
    project.write_cases(customers(12, stray=STRAY))
    document = _run(cli, project.root)
    row = next(m for m in document["metrics"] if m["id"] == "simulator_fidelity")
    assert row["judge"]["status"] == "uncalibrated"
    assert document["decisions"][0]["reasons"] == ["judge_not_checked"]
    assert any("labels sample --criterion simulator_fidelity" in w
               for w in document["warnings"])
    refunded = next(m for m in document["metrics"] if m["id"] == "refunded")
    assert refunded["missing_by_reason"] == {"simulator:unfaithful": len(STRAY)}

    (project.root / "labels").mkdir()
    code, out, err = cli("labels", "sample", "--criterion", "simulator_fidelity", "--n", "10",
                         "--seed", "5", "-o", "labels/fidelity.jsonl", cwd=project.root)
    assert code == 0, err
    assert "Sampled 10 of 12 cases" in out
    path = project.root / "labels" / "fidelity.jsonl"
    labels = read_labels_file(path)
    assert all(set(r.shown) == {"user", "conversation"} for r in labels.rows)
    assert all(str(r.shown["conversation"]).startswith("user: ") for r in labels.rows)
    # people read each conversation: the stray customers invented a fact
    for r in labels.rows:
        r.label = "fail" if "[stray]" in r.shown["user"]["goal"] else "pass"
    path.write_text(labels.text(), encoding="utf-8")

    document = _run(cli, project.root)
    row = next(m for m in document["metrics"] if m["id"] == "simulator_fidelity")
    judge = row["judge"]
    assert judge["status"] == "checked" and judge["labelled"] == 10
    assert judge["agreement"] == 1.0 and judge["judge_only"] == judge["person_only"] == 0
    assert row["method"] == STRATIFIED_METHOD  # corrected as any judged rate is
    assert row["estimate"] == 10 / 12
    assert document["decisions"][0]["reasons"] != ["judge_not_checked"]
    assert document["cache"]["execution"]["miss"] == 0  # labels decide; nothing ran again
