"""A comparison does not depend on the order cases came in (issue 26 acceptance 2, the
comparison's part): one pair of runs' outcomes, made with the cases in several orders — the
dataset's lines in that order (the order a run stores its rows in), and finishing in it —
gives identical comparison documents, with one trial (the melded interval), with trials (the
betting interval over pairs, which depends on the order it takes values in) and with declared
clusters (the betting interval over clusters)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk

import oloproof
from oloproof.document import Comparison

N = 40
ORDERS = ("forward", "reverse", "shuffled")


def _ordered(order: str) -> list[str]:
    ids = [f"c{i}" for i in range(1, N + 1)]
    if order == "reverse":
        ids.reverse()
    elif order == "shuffled":
        random.Random(26).shuffle(ids)
    return ids


def _in_order(desk: Desk, ids: list[str]) -> None:
    """The dataset's lines in this order, and the cases finishing in it: the case ranked r
    takes r × 3 ms, and every case is in flight at once."""
    at = {case_id: rank for rank, case_id in enumerate(ids)}
    desk.cases.sort(key=lambda case: at[case["id"]])
    desk.write()
    desk.delays({case_id: 0.003 * rank for case_id, rank in at.items()})


def _project(root: Path, shape: str) -> Desk:
    desk = Desk(root, n=N)
    desk.policy = {"version": 1, "rules": []}
    if shape == "trials":
        desk.suite["trials"] = 3
    if shape == "clusters":
        for i, case in enumerate(desk.cases):
            case["cluster"] = f"k{i // 2 + 1}"
    desk.write()
    return desk


def _compared(root: Path, shape: str, order: str) -> tuple[dict[str, Any], list[str]]:
    """The baseline made with its cases in `order`, the candidate in the reverse of it; the
    comparison document with the run ids replaced, and the order the candidate stored its
    cases in."""
    desk = _project(root, shape)
    _in_order(desk, _ordered(order))
    desk.wrong("c3", "c4", "c17", "c30")
    if shape == "trials":
        desk.wrong_trials("c5#2", "c8#1", "c8#3")
    oloproof.run(desk.config, concurrency=N)
    _in_order(desk, _ordered(order)[::-1])
    desk.version("v2")
    desk.wrong("c3", "c9", "c10", "c11", "c12", "c22", "c23", "c30")
    if shape == "trials":
        desk.wrong_trials("c5#1", "c5#3", "c8#1", "c31#2")
    candidate = oloproof.run(desk.config, concurrency=N)
    comparison = oloproof.compare("latest~1", "latest", desk.config)
    text = comparison.model_dump_json()
    text = text.replace(comparison.baseline, "BASELINE").replace(comparison.candidate,
                                                                 "CANDIDATE")
    stored = [c.case_id for c in oloproof.load_case_trials(candidate.run_id, desk.config)]
    return {"document": text}, stored


@pytest.mark.parametrize("shape", ["one_trial", "trials", "clusters"])
def test_every_finishing_order_gives_the_same_comparison(tmp_path: Path, shape: str) -> None:
    documents, stored = {}, {}
    for order in ORDERS:
        documents[order], stored[order] = _compared(tmp_path / order, shape, order)
    # The cases really were stored in different orders...
    assert len({tuple(s) for s in stored.values()}) == len(ORDERS), stored
    # ...and the comparisons are the same document.
    assert documents["reverse"] == documents["forward"]
    assert documents["shuffled"] == documents["forward"]
    row = Comparison.model_validate_json(documents["forward"]["document"]).criterion(
        "answer_correct")
    expected = {"one_trial": "melded_mcnemar", "trials": "betting", "clusters": "betting"}
    assert row.method == expected[shape] and row.approximate == (shape == "clusters")
