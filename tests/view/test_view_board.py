"""The board in the view (docs/board.md): `/board` is the page `oloproof board --html` writes
(the table and the cost–success chart, inline SVG, no script), `/api/board` the JSON
`oloproof board --json` prints, for the same runs; a variant's run report ends with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from view_support import ViewServer

import oloproof

SUITE = """\
version: 1
project: desk
dataset: cases.jsonl
system:
  name: desk
  version: "1"
  callable: app:run
  records: [usage/v1]
  variants:
    model: [base, cheap, dear]
evaluators:
  - {type: exact_match, criterion: answer_correct, field: answer, expected_field: answer}
"""
POLICY = """\
version: 1
cost_cap: 1
baseline: variant:model=base
rules:
  - {id: no_worse, kind: non_inferiority, metric: answer_correct, margin: 0.05}
"""


def _desk(root: Path) -> Path:
    (root / "app.py").write_text(
        "from oloproof import current_case\n"
        "RIGHT = {'base': 90, 'cheap': 70, 'dear': 60}\n"
        "PRICE = {'base': 0.1, 'cheap': 0.01, 'dear': 0.5}\n"
        "def run(input):\n"
        "    model = current_case().variant['model']\n"
        "    current_case().usage(cost=PRICE[model])\n"
        "    return {'answer': 1 if input['n'] < RIGHT[model] else 0}\n", encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{n}", "input": {"n": n}, "expected": {"answer": 1}}) + "\n"
        for n in range(100)), encoding="utf-8")
    (root / "first.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    (root / "release.yaml").write_text(POLICY, encoding="utf-8")
    config = root / "oloproof.yaml"
    config.write_text(SUITE, encoding="utf-8")
    return config


def test_the_view_serves_the_board_and_its_chart(tmp_path: Path) -> None:
    config = _desk(tmp_path)
    store = tmp_path / "store.sqlite"
    oloproof.run(config, policy=tmp_path / "first.yaml", variant="model=base", store=store)
    for model in ("cheap", "dear"):
        oloproof.run(config, policy=tmp_path / "release.yaml", variant=f"model={model}",
                     store=store)
    expected = oloproof.board(config=config, store=store).to_json()
    assert [c["variant"] for c in expected["candidates"]] == [
        "model=base", "model=cheap", "model=dear"]
    assert expected["candidates"][2]["dominated_by"] == [expected["baseline"]]
    # The report of a variant's run ends with the same board, its chart drawn.
    report = oloproof.api.write_html_report("variant:model=cheap", tmp_path / "cheap.html",
                                            config, store).read_text()
    section = report[report.index('<section class="wrap" id="board">'):]
    for candidate in expected["candidates"]:
        success = candidate["metrics"]["answer_correct"]["estimate"]
        assert f'data-run-id="{candidate["run_id"]}" data-success="{success!r}"' in section
    server = ViewServer(store)
    try:
        assert server.json("/api/board") == expected
        status, headers, body = server.get("/board")
        assert status == 200
        page = body.decode()
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "<script" not in page
        assert not re.search(r"https?://|\bsrc=|\bhref=",
                             page.replace('xmlns="http://www.w3.org/2000/svg"', ""))
        for candidate in expected["candidates"]:
            assert f'data-run-id="{candidate["run_id"]}"' in page
        # Two runs named: that board, the baseline joining them.
        two = server.json("/api/board?run=variant:model=dear")
        assert [c["variant"] for c in two["candidates"]] == ["model=base", "model=dear"]
        status, _, body = server.get("/board?run=nope")
        assert status >= 400 and b"no run matches" in body
    finally:
        server.close()
