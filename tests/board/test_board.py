"""`oloproof board` (docs/board.md): many stored runs against one baseline, every interval a
rule reads (and success and cost per case, which the front reads) holding together; can_ship
decided on those intervals; the cost–success front; the JSON, terminal, Markdown and HTML
showing the same figures; and its errors, exit 2 with what to do.

The project: one model variant per candidate, each answering the first RIGHT[model] of 200
cases right (so every count is known) at a fixed cost per case."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from variant_suite import RECORDED

import oloproof
from oloproof.errors import UsageError
from oloproof.stats import MeanInterval, rate_interval
from oloproof.stats.simultaneous import dominated_by, each_level

RIGHT = {"base": 190, "near": 191, "strong": 196, "cheap": 150, "bloated": 160}
PRICE = {"base": 0.03, "near": 0.03, "strong": 0.03, "cheap": 0.002, "bloated": 0.06}
CASES = 200

SUITE = RECORDED.format(variants="    model: [base, near, strong, cheap, bloated]")
POLICY = """\
version: 1
confidence_level: 0.95
baseline: variant:model=base
cost_cap: 0.2
rules:
  - id: no_worse
    kind: non_inferiority
    metric: answer_correct
    margin: 0.05
  - id: floor
    metric: answer_correct
    min: 0.9
"""


def _project(root: Path) -> Path:
    (root / "app.py").write_text(
        "from oloproof import current_case\n"
        f"RIGHT = {RIGHT!r}\nPRICE = {PRICE!r}\n"
        "def run(input):\n"
        "    model = current_case().variant['model']\n"
        "    current_case().usage(cost=PRICE[model])\n"
        "    return {'answer': input['n'] if input['n'] < RIGHT[model] else -1}\n",
        encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{n:03d}", "input": {"n": n}, "expected": {"answer": n}}) + "\n"
        for n in range(CASES)), encoding="utf-8")
    (root / "run.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    (root / "release.yaml").write_text(POLICY, encoding="utf-8")
    config = root / "oloproof.yaml"
    config.write_text(SUITE, encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The project with one run of each model (made one at a time with --variant)."""
    root = tmp_path_factory.mktemp("board")
    config = _project(root)
    runs = {model: oloproof.run(config, policy=root / "run.yaml", variant=f"model={model}",
                                store=root / "store.sqlite").run_id for model in RIGHT}
    return {"root": root, "config": config, "store": root / "store.sqlite", "runs": runs}


def _board(project: dict[str, Any], *runs: str, **options: Any) -> Any:
    return oloproof.board(runs, config=project["config"], store=project["store"],
                          policy=options.pop("policy", project["root"] / "release.yaml"),
                          **options)


def test_the_json_has_the_documented_fields_and_the_exact_figures(
        project: dict[str, Any]) -> None:
    board = _board(project).to_json()
    assert set(board) == {"baseline", "level", "familywise", "method", "family_size",
                          "each_level", "criterion", "cost_cap", "candidates", "warnings"}
    assert (board["level"], board["familywise"], board["method"], board["criterion"]) == (
        0.95, True, "bonferroni", "answer_correct")
    assert board["baseline"] == project["runs"]["base"]
    # The default candidates: the newest run of every variant, in the order first run.
    assert [c["run_id"] for c in board["candidates"]] == list(project["runs"].values())
    assert [c["variant"] for c in board["candidates"]] == [f"model={m}" for m in RIGHT]
    for candidate in board["candidates"]:
        assert set(candidate) == {"run_id", "variant", "metrics", "difference",
                                  "cost_per_case", "cost_per_success", "latency_p50",
                                  "latency_p95", "can_ship", "blocked_by", "dominated_by"}
    # The family: 5 candidates' success rate and cost per case, 4 differences.
    assert board["family_size"] == 5 * 2 + 4
    assert board["each_level"] == each_level(0.95, 14)
    by_model = dict(zip(RIGHT, board["candidates"], strict=True))
    for model, candidate in by_model.items():
        own = oloproof.load_run(candidate["run_id"], project["config"], project["store"])
        row = own.metric("answer_correct")
        assert (row.passed, row.observed) == (RIGHT[model], CASES)
        exact = rate_interval(row.passed, row.observed, 0, board["each_level"])
        assert candidate["metrics"]["answer_correct"] == {
            "estimate": exact.estimate, "lower": exact.lower, "upper": exact.upper}
        # Wider than the run's own interval at 95%: it holds with the others.
        assert exact.lower < row.lower and exact.upper >= row.upper
        cost = candidate["cost_per_case"]
        assert math.isclose(cost["estimate"], PRICE[model])
        assert cost["lower"] <= PRICE[model] <= cost["upper"] <= 0.2
        success = candidate["metrics"]["answer_correct"]
        assert candidate["cost_per_success"] == {
            "estimate": cost["estimate"] / success["estimate"],
            "lower": cost["lower"] / success["upper"], "upper": cost["upper"] / success["lower"]}
        latency = candidate["latency_p50"]
        assert latency["lower"] <= latency["estimate"] <= latency["upper"]
    assert by_model["base"]["difference"] == {}
    near = by_model["near"]["difference"]["answer_correct"]
    assert math.isclose(near["estimate"], 1 / CASES)
    assert near["lower"] < 0 < near["upper"]


def test_the_front_equals_a_brute_force_reading_of_the_json(project: dict[str, Any]) -> None:
    board = _board(project).to_json()
    rows = board["candidates"]

    def beats(b: dict[str, Any], a: dict[str, Any]) -> bool:
        s_b, s_a = b["metrics"]["answer_correct"], a["metrics"]["answer_correct"]
        return s_b["lower"] > s_a["upper"] and \
            b["cost_per_case"]["upper"] < a["cost_per_case"]["lower"]

    for a in rows:
        assert a["dominated_by"] == [b["run_id"] for b in rows if b is not a and beats(b, a)]
    by_model = dict(zip(RIGHT, rows, strict=True))
    # Bloated costs twice as much and answers worse than base, near and strong: off the
    # front. Cheap answers worse but costs less: on it.
    assert set(by_model["bloated"]["dominated_by"]) == {
        project["runs"][m] for m in ("base", "near", "strong")}
    assert by_model["cheap"]["dominated_by"] == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 0.5), st.floats(0, 10),
                          st.floats(0, 5)), min_size=1, max_size=8))
def test_dominated_by_is_the_definition_read_pairwise(
        points: list[tuple[float, float, float, float]]) -> None:
    made = [(f"c{i}", MeanInterval(s, max(0.0, s - w), min(1.0, s + w), ""),
             MeanInterval(c, c - v, c + v, "")) for i, (s, w, c, v) in enumerate(points)]
    found = dominated_by(made)
    for name, success, cost in made:
        assert found[name] == tuple(
            other for other, s, c in made if other != name
            and s.lower > success.upper and c.upper < cost.lower)  # type: ignore[operator]


def test_a_candidate_the_gate_allows_may_not_ship_under_simultaneous_intervals(
        project: dict[str, Any]) -> None:
    near = project["runs"]["near"]
    # The policy's own gate on the same run, against the same baseline: ALLOW (191 of 200
    # right: the 95% lower bound is above the 0.9 floor, and the difference is +0.5 points).
    plain = oloproof.redecide(near, project["root"] / "release.yaml", project["config"],
                              project["store"])
    assert str(plain.gate.action) == "ALLOW"
    floor = next(d for d in plain.document.decisions if d.rule == "floor")
    assert floor.bound is not None and floor.bound >= 0.9
    # On the board, among 5 candidates, the floor is read on an interval at 1 − 0.05/14:
    # its lower bound falls below 0.9, so near cannot ship; strong (196 of 200) can.
    board = _board(project).to_json()
    row = next(c for c in board["candidates"] if c["run_id"] == near)
    assert row["metrics"]["answer_correct"]["lower"] < 0.9
    assert (row["can_ship"], row["blocked_by"]) == (False, ["floor"])
    ships = {c["variant"]: c["can_ship"] for c in board["candidates"]}
    assert ships == {"model=base": False, "model=near": False, "model=strong": True,
                     "model=cheap": False, "model=bloated": False}
    # Two candidates alone hold a smaller family: near then ships.
    two = _board(project, "variant:model=near").to_json()
    assert two["family_size"] == 2 * 2 + 1
    assert [c["can_ship"] for c in two["candidates"]] == [False, True]


def test_terminal_markdown_and_html_show_the_json_figures(project: dict[str, Any], cli: Any
                                                          ) -> None:
    root = project["root"]
    code, out, err = cli("board", "--policy", "release.yaml", "--json", "--store",
                         "store.sqlite", cwd=root)
    assert code == 0, err
    board = json.loads(out)
    code, text, err = cli("board", "--policy", "release.yaml", "--markdown", "out/board.md",
                          "--html", "out/board.html", "--store", "store.sqlite", cwd=root,
                          env={"COLUMNS": "400"})
    assert code == 0, err
    markdown = (root / "out" / "board.md").read_text()
    page = (root / "out" / "board.html").read_text()
    for candidate in board["candidates"]:
        rate = candidate["metrics"]["answer_correct"]
        shown = (f"{100 * rate['estimate']:.1f}% [{100 * rate['lower']:.1f}, "
                 f"{100 * rate['upper']:.1f}]")
        cost = candidate["cost_per_case"]
        spent = f"{cost['estimate']:.4g} [{cost['lower']:.4g}, {cost['upper']:.4g}]"
        for where in (text, markdown, page):
            assert shown in where and spent in where
    assert "14 intervals hold together at 95% (bonferroni" in " ".join(text.split())
    # The chart: inline, nothing fetched; each point's figures are the JSON's, and it is
    # drawn where those figures fall on the axes.
    assert not re.search(r"https?://|\bsrc=|\bhref=",
                             page.replace('xmlns="http://www.w3.org/2000/svg"', ""))
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    x0, x1, y0, y1 = (float(svg.get(k)) for k in ("data-x0", "data-x1", "data-y0", "data-y1"))
    margin, width, height = float(svg.get("data-margin")), float(svg.get("width")), \
        float(svg.get("height"))
    ns = "{http://www.w3.org/2000/svg}"
    points = {g.get("data-run-id"): g for g in svg.iter(f"{ns}g")}
    assert set(points) == {c["run_id"] for c in board["candidates"]}
    for candidate in board["candidates"]:
        g = points[candidate["run_id"]]
        rate, cost = candidate["metrics"]["answer_correct"], candidate["cost_per_case"]
        assert float(g.get("data-success")) == rate["estimate"]
        assert float(g.get("data-success-lower")) == rate["lower"]
        assert float(g.get("data-cost-upper")) == cost["upper"]
        assert g.get("data-front") == ("yes" if not candidate["dominated_by"] else "no")
        circle = g.find(f"{ns}circle")
        assert circle is not None
        at_cost = x0 + (float(circle.get("cx")) - margin) / (width - 2 * margin) * (x1 - x0)
        at_rate = y0 + (height - margin - float(circle.get("cy"))) / (height - 2 * margin) \
            * (y1 - y0)
        assert math.isclose(at_cost, cost["estimate"], abs_tol=(x1 - x0) * 1e-3)
        assert math.isclose(at_rate, rate["estimate"], abs_tol=(y1 - y0) * 1e-3)
    front = svg.find(f"{ns}polyline")
    assert front is not None and len(front.get("points").split()) == sum(
        1 for c in board["candidates"] if not c["dominated_by"])


def test_errors_are_exit_2_with_what_to_do(project: dict[str, Any], cli: Any,
                                           tmp_path: Path) -> None:
    root = project["root"]
    code, _, err = cli("board", "nope", "--store", "store.sqlite", cwd=root)
    assert code == 2 and "no run matches 'nope'" in err and "oloproof runs" in err
    # A store with no variant's run: nothing to put on the board by default.
    plain = tmp_path / "plain"
    plain.mkdir()
    config = _project(plain)
    config.write_text(SUITE.replace("  variants:\n    model: [base, near, strong, cheap, "
                                    "bloated]\n", "").replace("current_case().variant", "x"))
    (plain / "app.py").write_text("def run(input):\n    return {'answer': input['n']}\n")
    oloproof.run(config, policy=plain / "run.yaml")
    code, _, err = cli("board", "--policy", "release.yaml", cwd=plain)
    assert code == 2 and "no complete run of a variant is stored" in err
    assert "oloproof run --variant" in err
    # A candidate run on other cases: the board pairs every candidate with the baseline, so
    # it is refused, naming the cases.
    subset = oloproof.run(project["config"], policy=root / "run.yaml", variant="model=near",
                          store=project["store"], limit=150)
    code, _, err = cli("board", subset.run_id, "--policy", "release.yaml", "--store",
                       "store.sqlite", cwd=root)
    assert code == 2, err
    assert f"run {subset.run_id} does not hold the cases of the baseline run" in err
    assert "50 of the baseline's cases missing (first c150)" in " ".join(err.split())
    # A cost above the declared cap is refused, never clipped.
    code, _, err = cli("board", "--policy", "release.yaml", "--cost-cap", "0.04", "--store",
                       "store.sqlite", cwd=root)
    assert code == 2 and re.search(r"run \S+: case 'c\d+' cost 0.06, above the cost cap 0.04",
                                   err), err
    # A success criterion the runs do not have: name theirs.
    code, _, err = cli("board", "--policy", "release.yaml", "--criterion", "nope", "--store",
                       "store.sqlite", cwd=root)
    assert code == 2 and "--criterion nope: the runs have no such criterion (theirs: " \
        "answer_correct)" in err
    # No baseline: say how to name one.
    (root / "nobase.yaml").write_text(POLICY.replace("baseline: variant:model=base\n", ""))
    with pytest.raises(UsageError, match="the board needs a baseline"):
        _board(project, policy=root / "nobase.yaml")
    # Without a cap, cost has no interval and nothing is shown dominated, and it says so.
    (root / "nocap.yaml").write_text(POLICY.replace("cost_cap: 0.2\n", ""))
    uncapped = _board(project, policy=root / "nocap.yaml").to_json()
    assert all(c["dominated_by"] == [] and c["cost_per_case"]["lower"] is None
               for c in uncapped["candidates"])
    assert uncapped["family_size"] == 5 + 4
    assert any("no cost cap is declared" in w for w in uncapped["warnings"])


def test_imported_runs_can_be_candidates(tmp_path: Path) -> None:
    """Two imports of one Harbor job (a reward passed at 1.0, then at 0.5) are two runs of the
    same cases: the board pairs them; their latency (the time the import took to play them
    back, not the agent's) is not shown."""
    from oloproof.api.imports import import_harbor

    job = Path(__file__).parents[1] / "data" / "harnesses" / "harbor-job"
    store = tmp_path / "store.sqlite"
    strict = import_harbor(job, pass_at=1.0, store=store)[0].run_id
    lenient = import_harbor(job, pass_at=0.5, store=store)[0].run_id
    (tmp_path / "choose.yaml").write_text(
        "version: 1\ncost_cap: 10\nrules:\n"
        "  - {id: no_worse, kind: non_inferiority, metric: reward, margin: 0.1}\n")
    board = oloproof.board([lenient], baseline=strict, policy=tmp_path / "choose.yaml",
                           store=store, config=tmp_path / "none.yaml").to_json()
    assert [c["run_id"] for c in board["candidates"]] == [strict, lenient]
    assert board["criterion"] == "reward" and board["family_size"] == 2 * 2 + 1
    for candidate in board["candidates"]:
        assert candidate["latency_p50"] == {"estimate": None, "lower": None, "upper": None}
        # The agent's own cost, as the run recorded it (each case the mean of its trials').
        own = oloproof.load_run(candidate["run_id"], store=store,
                                config=tmp_path / "none.yaml").document.usage
        assert own is not None and own.cost is not None
        cost = candidate["cost_per_case"]
        assert 0 <= cost["lower"] <= cost["estimate"] <= cost["upper"] <= 10
        assert 0.5 * own.cost / own.cases < cost["estimate"] < 2 * own.cost / own.cases
    assert set(board["candidates"][1]["difference"]) == {"reward"}


def test_a_variants_report_says_why_it_has_no_board(project: dict[str, Any]) -> None:
    """The runs were made under a policy with no baseline: the report of one says so where
    the board would be, and how to make one."""
    page = oloproof.api.write_html_report("variant:model=near", project["root"] / "near.html",
                                          project["config"], project["store"]).read_text()
    section = page[page.index('<section class="wrap" id="board">'):]
    assert "No board of the variants: the board needs a baseline" in section
    assert "<svg" not in section
