"""The library surface the command line is a thin layer over
(docs/getting-started.md#the-same-from-python): every command is one of these calls, in the
same words.

`run()` does everything `oloproof run` does and returns a RunResult; `load_run()` reads a stored
run; `redecide()` decides a stored run under another policy without running anything;
`list_runs()` is `oloproof runs`, and `list_cases()`, `case_view()`, `case_views()` and
`flaky_cases()` are what `oloproof cases` and `oloproof inspect` show of a run's cases.

The package is in parts, each importing only the ones below it: `result` (`RunResult`),
`deciding` (a run document from an analysis), `run_job` (`RunJob`: one load of a suite and
its runs), `running` (`run`, `run_async`, `rescore`: a run from a stored run's executions),
`stored` (stored runs: `list_runs`, `load_run`, `tag`, `redecide`, `plan`), `candidates`
(`board`: many stored runs against one baseline, docs/board.md), `cases` (a stored run's cases:
`list_cases`, `case_view`, `case_views`, `flaky_cases`, `sample_labels`) and `reports`
(`write_html_report`, `write_ci_reports`). Importing it imports what a run needs to start its
first cases, no more.

Example: the starter project `oloproof init` makes, copied into a new folder, run, then read
back as `oloproof runs`, `oloproof cases` and `oloproof inspect` read it (a few seconds).

>>> import shutil, tempfile
>>> from importlib.resources import files
>>> import oloproof
>>> folder = tempfile.mkdtemp()
>>> _ = shutil.copytree(files("oloproof") / "examples" / "starter", folder, dirs_exist_ok=True)
>>> config = f"{folder}/oloproof.yaml"
>>> result = oloproof.run(config, policy=f"{folder}/release.yaml")
>>> result.status, str(result.gate.action), int(result.gate.exit_code)
('complete', 'ALLOW', 0)
>>> [run["run_id"] for run in oloproof.list_runs(config=config)] == [result.run_id]
True
>>> answer = oloproof.load_run("latest", config).metric("answer_correct")
>>> answer.passed, answer.observed, f"{answer.lower:.3f}"
(33, 33, '0.894')
>>> cases = oloproof.list_cases(config=config)
>>> cases.total, cases.criteria[0], cases.cases[0].case, cases.cases[0].codes
(33, 'answer_correct', 'req-001', 'PPPP')
>>> oloproof.list_cases(config=config, failures=True).cases
[]
>>> view = oloproof.case_view("req-001", config=config)
>>> [(c["criterion"], c["verdict"]) for c in view["criteria"]][:2]
[('answer_correct', 'passed'), ('agent_tool_lookup_order_called', 'passed')]
>>> oloproof.case_view("req-999", config=config)
Traceback (most recent call last):
  ...
oloproof.errors.UsageError: run run_... has no case 'req-999'; ...lists its case ids
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oloproof.api.cases import (
    CaseList,
    FlakyCases,
    case_view,
    case_views,
    flaky_cases,
    list_cases,
    sample_labels,
)
from oloproof.api.reports import write_ci_reports, write_html_report
from oloproof.api.result import RunResult, VariantRuns
from oloproof.api.run_job import new_run_id as new_run_id
from oloproof.api.run_job import open_store as open_store
from oloproof.api.running import rescore, run, run_async
from oloproof.api.stored import (
    Tagged,
    list_runs,
    load_case_trials,
    load_run,
    plan,
    redecide,
    tag,
)
from oloproof.api.stored import stored_document as stored_document
from oloproof.api.stored import stored_metric_kinds as stored_metric_kinds
from oloproof.errors import ConfigError
from oloproof.store.location import find_store

if TYPE_CHECKING:
    from oloproof.api.candidates import board
    from oloproof.comparison.stored import compare
    from oloproof.document import Comparison, Plan, RunDocument


def __getattr__(name: str) -> Any:
    """`compare` (comparing two stored runs), `board` (many of them against one baseline)
    and the run document's models (`RunDocument`,
    `Comparison`, `Plan`) are imported on first use: they need not be loaded before a run's
    first case starts."""
    if name == "compare":
        from oloproof.comparison.stored import compare

        return compare
    if name == "board":
        from oloproof.api.candidates import board

        return board
    if name in ("RunDocument", "Comparison", "Plan"):
        from oloproof import document

        return getattr(document, name)
    raise AttributeError(f"module 'oloproof.api' has no attribute {name!r}")


__all__ = [
    "CaseList", "Comparison", "ConfigError", "FlakyCases", "Plan", "RunDocument", "RunResult",
    "Tagged", "VariantRuns", "board", "case_view", "case_views", "compare", "find_store",
    "flaky_cases", "list_cases", "list_runs", "load_case_trials", "load_run", "plan", "redecide",
    "rescore", "run", "run_async", "sample_labels", "tag", "write_ci_reports",
    "write_html_report",
]
