"""The paired difference over clusters (issue 26 acceptance 3): cases that share a cluster are
paired as one value per cluster — each cluster's mean difference — with the betting interval
over clusters in the order of their ids' digests, and a `non_inferiority` rule on it follows
the clustered metrics' rules (`allow_approximate_methods`, at least 20 clusters). A case's own
trials alone never make the difference clustered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from compare_desk import Desk

import oloproof
from oloproof.analysis.ordering import digest_order
from oloproof.stats import paired_difference_interval


def _clustered_desk(root: Any, clusters: int, size: int) -> Desk:
    desk = Desk(root, n=clusters * size)
    for i, case in enumerate(desk.cases):
        case["cluster"] = f"k{i // size + 1}"
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    return desk


def _ni(margin: float = 0.3, **policy: Any) -> dict[str, Any]:
    return {"version": 1, "baseline": "latest~1", **policy, "rules": [
        {"id": "no-regression", "metric": "answer_correct", "kind": "non_inferiority",
         "margin": margin}]}


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """24 clusters of 3 cases; the candidate breaks every case of k1–k3 (a cluster's cases
    change together) and fixes nothing."""
    desk = _clustered_desk(tmp_path_factory.mktemp("clustered"), 24, 3)
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong(*[f"c{i}" for i in range(1, 10)])
    assert cli("run", cwd=desk.root)[0] == 0
    return desk


def test_the_difference_is_over_clusters(clustered: Desk) -> None:
    comparison = oloproof.compare("latest~1", "latest", clustered.config)
    row = comparison.criterion("answer_correct")
    assert (row.paired, row.broken, row.approximate, row.clusters, row.method) == (
        72, 9, True, 24, "betting")
    # By hand: each cluster's mean difference, clusters in the order of their ids' digests.
    order = digest_order([f"k{i}" for i in range(1, 25)])
    means = [-1.0 if key in ("k1", "k2", "k3") else 0.0 for key in order]
    expected = paired_difference_interval(means, means, 0.95)
    assert (row.difference, row.lower, row.upper) == (expected.estimate, expected.lower,
                                                      expected.upper)
    assert row.difference == pytest.approx(-3 / 24, abs=1e-15)
    # The tool criterion never changes: still one value per cluster.
    tools = comparison.criterion("agent_tool_lookup_called")
    assert (tools.approximate, tools.clusters) == (True, 24)


def test_a_rule_on_it_needs_allow_approximate_methods(clustered: Desk, cli: Any) -> None:
    policy = clustered.write_policy("ni.yaml", _ni())
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json",
                         cwd=clustered.root)
    assert code == 4, err  # MANUAL_REVIEW
    decision = json.loads(out)["decisions"][0]
    assert (decision["state"], decision["reasons"]) == (
        "MANUAL_REVIEW", ["approximate_method_not_permitted"])
    code, out, err = cli("gate", "latest", "--policy", policy.name, cwd=clustered.root,
                         env={"COLUMNS": "100"})
    assert "the difference over clusters is approximate; allow_approximate_methods is off" \
        in " ".join(out.split())
    assert "over 24 clusters" in out
    policy = clustered.write_policy("allowed.yaml", _ni(allow_approximate_methods=True))
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json",
                         cwd=clustered.root)
    decision = json.loads(out)["decisions"][0]
    assert decision["reasons"] == ["difference_interval_overlaps_margin"], decision
    assert code == 3


def test_fewer_than_20_clusters_is_insufficient(tmp_path: Any, cli: Any) -> None:
    desk = _clustered_desk(tmp_path / "few", 10, 3)
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    assert cli("run", cwd=desk.root)[0] == 0
    policy = desk.write_policy("ni.yaml", _ni(allow_approximate_methods=True))
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json", cwd=desk.root)
    assert code == 3, err
    decision = json.loads(out)["decisions"][0]
    assert (decision["state"], decision["reasons"]) == (
        "INSUFFICIENT_EVIDENCE", ["insufficient_clusters"])


def test_trials_alone_do_not_make_the_difference_clustered(tmp_path: Any, cli: Any) -> None:
    desk = Desk(tmp_path / "trials", n=30)
    desk.suite["trials"] = 3
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong_trials("c1#2")
    assert cli("run", cwd=desk.root)[0] == 0
    row = oloproof.compare("latest~1", "latest", desk.config).criterion("answer_correct")
    assert (row.approximate, row.clusters, row.method) == (False, None, "betting")
    policy = desk.write_policy("ni.yaml", _ni(margin=0.5))
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json", cwd=desk.root)
    assert code in (0, 3), err
    decision = json.loads(out)["decisions"][0]
    assert decision["state"] != "MANUAL_REVIEW" and "insufficient_clusters" not in \
        decision["reasons"], decision
