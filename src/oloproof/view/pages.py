"""What the view answers, from an open store: each page and each API document, made by the
code that makes the report (`report.html`, `report.html_data`), the run document
(`api.stored_document`) and the comparison (`comparison.stored.compare_in`) — the view adds
no figure of its own.

The data a list or a progress shows is read in one place each: `Store.run_rows` (the runs)
and `Store.run_progress` (how far a run has got).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from oloproof.api import stored_document
from oloproof.comparison.stored import compare_in
from oloproof.report import html_data
from oloproof.report.html import (
    render_message_page,
    render_page,
    render_runs_page,
    served_policy,
)
from oloproof.report.run_list import run_list
from oloproof.store.store import Store

#: Where the view's runs page is.
HOME = "/"


def runs_list(db: Store) -> list[dict[str, Any]]:
    """`/api/runs`: every run, newest first (`report.run_list.run_list`)."""
    return run_list(db.run_rows())


def runs_page(db: Store | None, api: str) -> str:
    """The runs page, with the list embedded (it polls `api` to stay current); `db` None:
    there is no store yet, and the page waits for the first run."""
    runs = runs_list(db) if db is not None else []
    project = runs[0]["project"] if runs else ""
    return render_runs_page(project, runs, served=api)


def run_document(db: Store, run_id: str) -> dict[str, Any]:
    """`/api/runs/RUN`: the run document (`oloproof inspect RUN --json`); for a run still
    running, its figures so far."""
    return stored_document(db, run_id).to_json()


def progress(db: Store, run_id: str, now: float) -> dict[str, Any]:
    """`/api/runs/RUN/progress`: `Store.run_progress`, with how long the run has been going
    and, while it runs, a time to finish at its pace so far (None until a case is done)."""
    found = db.run_progress(run_id)
    elapsed = max(0.0, (found["finished"] or now) - found["started"])
    done, total = found["executions"]["done"], found["executions"]["total"]
    eta = None
    if found["status"] == "running" and done and total is not None:
        eta = elapsed / done * max(total - done, 0)
    found["elapsed_seconds"] = elapsed
    found["eta_seconds"] = eta
    return found


def report_data(db: Store, run_id: str) -> dict[str, Any]:
    """`/api/runs/RUN/report`: what the run's page embeds (its summary, with the display
    strings of the report, and its case list); a page of a running run reads it again as
    the run goes."""
    data = html_data.build_report_data(db, run_id, stored_document(db, run_id), served=True)
    return {"summary": data.summary, "index": data.index, "baseline_index": data.baseline_index}


def case_detail(db: Store, run_id: str, case_id: str) -> str:
    """`/api/runs/RUN/cases?id=ID`: one case's details, as JSON text."""
    return html_data.case_detail(db, run_id, case_id)


def comparison(db: Store, baseline: str, candidate: str) -> dict[str, Any]:
    """`/api/compare`: the `oloproof compare --json` document."""
    return compare_in(db, baseline, candidate).to_json()


def run_page(db: Store, run_id: str, api: str) -> str:
    """A run's page: its report, as `report --html` draws it, live while it runs."""
    data = html_data.build_report_data(db, run_id, stored_document(db, run_id), served=True)
    return render_page(data, served=api, home=HOME, live=True)


def compare_page(db: Store, baseline: str, candidate: str, api: str) -> str:
    """Two runs compared: the candidate's report with the comparison (broken cases first,
    each opening both runs' panels), as `report --html --baseline` draws it."""
    found = compare_in(db, baseline, candidate)
    data = html_data.build_report_data(db, candidate, stored_document(db, candidate),
                                       comparison=found, served=True)
    return render_page(data, served=api, home=HOME, focus="comparison")


def message_page(title: str, message: str, hint: str = "") -> str:
    """A page that says one thing: what went wrong, and what to do."""
    return render_message_page(title, message, hint)


@cache
def page_policy() -> str:
    """The Content-Security-Policy header of every HTML answer."""
    return served_policy()


def board_document(store: Path, runs: list[str], baseline: str | None) -> dict[str, Any]:
    """The board's JSON (`oloproof board --json`) of the store's runs."""
    from oloproof.api import board

    return board(runs, baseline, store=store).to_json()


def board_page(store: Path, runs: list[str], baseline: str | None) -> str:
    """The board's page (`oloproof board --html`): its table and the cost–success chart."""
    from oloproof.api import board
    from oloproof.report.board import board_html

    return board_html(board(runs, baseline, store=store))
