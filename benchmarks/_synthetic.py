"""Synthetic projects for the benchmarks: N cases, a trivial system, three output evaluators."""

from __future__ import annotations

import json
from pathlib import Path

SYNC_APP = '''
from oloproof import system

@system(name="bench", version="v1")
def run(case_input):
    return {"answer": case_input["q"].upper(), "n": len(case_input["q"])}
'''

ASYNC_APP = '''
import asyncio
from oloproof import system

@system(name="bench", version="v1")
async def run(case_input):
    await asyncio.sleep({sleep})
    return {{"answer": case_input["q"].upper(), "n": len(case_input["q"])}}
'''

SUITE = """version: 1
project: bench
dataset: data/cases.jsonl
system: {{name: bench, version: v1, callable: "app:run", concurrency: {concurrency}}}
evaluators:
  - {{type: exact_match, field: answer}}
  - {{type: contains, criterion: mentions_word, field: answer, expected_field: word}}
  - {{type: regex, field: answer, pattern: "^[A-Z0-9 -]+$"}}
slices: [metadata.group]
min_slice_support: 5
"""

POLICY = """version: 1
rules:
  - {id: exact, metric: exact_match, min: 0.9}
"""


def make_project(root: Path, cases: int, *, async_sleep: float | None = None,
                 concurrency: int = 8) -> Path:
    """Write a project with `cases` cases into `root` (replacing what is there)."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    app = SYNC_APP if async_sleep is None else ASYNC_APP.format(sleep=async_sleep)
    (root / "app.py").write_text(app)
    (root / "oloproof.yaml").write_text(SUITE.format(concurrency=concurrency))
    (root / "release.yaml").write_text(POLICY)
    with (root / "data" / "cases.jsonl").open("w") as out:
        for i in range(cases):
            q = f"question {i} about order ord-{i % 977}"
            case = {"id": f"case-{i:06d}", "input": {"q": q},
                    "expected": {"answer": q.upper(), "word": f"ORD-{i % 977}"},
                    "metadata": {"group": f"g{i % 7}"}}
            out.write(json.dumps(case) + "\n")
    return root
