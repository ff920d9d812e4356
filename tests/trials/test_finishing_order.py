"""No figure depends on the order cases finish in (issue 26, defect 2).

One suite — repeated trials, declared clusters beside unclustered cases, pass^k below and at
`trials`, a quantile over trials, slices — run through the real engine with an async system
whose cases sleep for a seeded random time, so they finish in a different order each run while
every verdict and step count stays the same. The run documents (metrics, slices, decisions)
must be identical, and so must `gate` re-deciding each stored run; each run also has its
dataset's lines in another order, so no figure may depend on a row number either. Before, an
unclustered case stood in for its cluster as `case:{row}`, the row filled in finishing order,
and the betting interval over clusters moved with it.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import yaml

import oloproof

DESK = '''
import asyncio, os, random
from oloproof import current_case, system


@system(name="ordered", version="v1", records=("agent_trajectory/v1",))
async def run(case_input):
    case = current_case()
    # The verdicts and steps depend on the case and the trial only; the time taken on the run's
    # seed too, so each run finishes its cases in another order.
    delay = random.Random(f"{os.environ['ORDER_SEED']}:{case.case_id}:{case.trial}")
    await asyncio.sleep(delay.uniform(0.0, 0.004))
    with open(os.environ["ORDER_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{case.case_id}:{case.trial}\\n")
    outcome = random.Random(f"{case.case_id}:{case.trial}")
    steps = case.steps()
    steps.message({"text": "hello"})
    for _ in range(outcome.randint(0, 3)):
        steps.call_tool("lookup", {"n": case_input["n"]}, lambda n: {"n": n})
    steps.final({"answer": "yes"})
    steps.finish("success")
    right = outcome.random() < case_input["skill"]
    return {"answer": "yes" if right else "no", "tone": outcome.choice(["warm", "terse"])}
'''


def _project(root: Path, seed: int) -> Path:
    """The suite, its dataset's lines shuffled by `seed` (seed 0 keeps them in order), so
    that the rows cases are stored in differ too."""
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(DESK, encoding="utf-8")
    suite: dict[str, Any] = {
        "version": 1, "project": "order", "dataset": "data/cases.jsonl",
        "system": {"name": "ordered", "version": "v1", "callable": "app:run",
                   "records": ["agent_trajectory/v1"], "concurrency": 8},
        "trials": 3,
        "evaluators": [
            {"type": "exact_match", "criterion": "answer_correct", "field": "answer",
             "expected_field": "answer"},
            {"type": "exact_match", "criterion": "warm", "field": "tone",
             "expected_field": "tone"}],
        "metrics": [
            {"id": "answer_pass_hat_3", "type": "pass_hat_k", "criterion": "answer_correct",
             "k": 3},
            {"id": "answer_pass_hat_2", "type": "pass_hat_k", "criterion": "answer_correct",
             "k": 2},
            {"id": "steps_p75", "type": "quantile", "source": "agent_steps",
             "quantile": 0.75}],
        "slices": ["first_tool", "metadata.kind"],
        "min_slice_support": 3,
    }
    policy = {"version": 1, "allow_approximate_methods": True, "rules": [
        {"id": "answers", "metric": "answer_correct", "min": 0.45},
        {"id": "every-time", "metric": "answer_pass_hat_3", "min": 0.3},
        {"id": "steps", "metric": "steps_p75", "max": 4}]}
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False),
                                        encoding="utf-8")
    (root / "release.yaml").write_text(yaml.safe_dump(policy, sort_keys=False),
                                       encoding="utf-8")
    lines = []
    for i in range(40):
        case: dict[str, Any] = {"id": f"case-{i:02d}", "input": {"n": i, "skill": 0.3 + i / 80},
                                "expected": {"answer": "yes", "tone": "warm"},
                                "metadata": {"kind": "ab"[i % 2]}}
        if i < 24:  # 8 clusters of three; 16 cases outside any
            case["cluster"] = f"customer-{i // 3}"
        lines.append(json.dumps(case))
    if seed:
        random.Random(seed).shuffle(lines)
    (root / "data" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "oloproof.yaml"


def _figures(document: dict[str, Any]) -> str:
    return json.dumps({key: document[key] for key in ("metrics", "slices", "decisions", "gate")},
                      sort_keys=True)


def test_every_figure_is_the_same_whatever_order_the_cases_finish_in(tmp_path: Path,
                                                                     monkeypatch) -> None:
    runs, orders = [], set()
    for seed in range(4):
        config = _project(tmp_path / f"project-{seed}", seed)
        log = tmp_path / f"finished-{seed}.log"
        monkeypatch.setitem(os.environ, "ORDER_SEED", str(seed))
        monkeypatch.setitem(os.environ, "ORDER_LOG", str(log))
        result = oloproof.run(config, no_cache=True)
        document = result.to_json()
        runs.append(_figures(document))
        orders.add(log.read_text(encoding="utf-8"))
        again = oloproof.redecide(result.run_id, config=config)
        assert _figures(again.to_json()) == runs[-1], "gate re-decides alike"

    assert len(orders) > 1, "the cases did finish in different orders"
    assert len(set(runs)) == 1
    document = json.loads(runs[0])
    rates = {m["id"]: m for m in document["metrics"]}
    # The paths this covers: a criterion over clusters (declared clusters: approximate), a
    # pass^2 over clusters, and a quantile over trials (never approximate).
    assert rates["answer_correct"]["clusters"] == 8 + 16
    assert rates["answer_pass_hat_2"]["method"] == "bentkus_ratio"  # clusters of 1 and more
    assert not rates["steps_p75"].get("approximate")
    assert any(s.get("trials") for s in document["slices"])
