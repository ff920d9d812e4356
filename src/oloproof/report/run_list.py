"""The runs of a project as a list reads them: `oloproof runs` and the view's runs page.

One definition of what a run's gate says in words, and of the fields a listed run shows, so
the terminal and the browser agree.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

NOT_DECIDED = "not decided: the run did not complete"
RUNNING = "running, not decided"


def utc_text(timestamp: float | None) -> str:
    """A stored time as every report shows it: UTC, to the second (`2025-12-03 09:21:07 UTC`)."""
    if timestamp is None:
        return "—"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def gate_words(status: str, gate: dict[str, Any] | None) -> str:
    """`BLOCK (exit 1)`; a run without a gate is running, or did not complete."""
    if gate:
        return f"{gate['action']} (exit {gate['exit_code']})"
    return RUNNING if status == "running" else NOT_DECIDED


def kind_words(row: dict[str, Any]) -> str:
    """What kind of run a listed run is, in words: `subset 1 of 33`, `rescored`, both, or
    nothing for a run of the whole suite (docs/cli.md#running-part-of-the-suite)."""
    subset = row.get("subset")
    parts = []
    if row.get("rescored_from"):
        parts.append("rescored")
    if subset:
        parts.append(f"subset {subset['cases']} of {subset['of']}")
    return " · ".join(parts)


def run_list(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs page's rows (and `/api/runs`), newest first, from `Store.run_rows()`:
    `{run_id, status, gate, gate_words, system, version, variant, tags, trials, cases,
    failing, errored, started, finished, kind_words, subset, rescored_from}` (`variant`: a
    run's combination of system.variants, docs/board.md, or None). `cases` is what a
    finished run decided on, and for a run that has not finished, the cases it plans."""
    out = []
    for row in rows:
        cases = row["n_cases"] if row["n_cases"] is not None else row.get("planned_cases")
        out.append({
            "run_id": row["run_id"],
            "status": row["status"],
            "gate": row.get("gate"),
            "gate_words": gate_words(row["status"], row.get("gate")),
            "system": row["system_name"],
            "version": row["system_version"],
            "variant": row.get("variant"),
            "tags": list(row.get("tags") or []),
            "trials": row.get("trials", 1),
            "cases": cases,
            "failing": row.get("failing"),
            "errored": row.get("errored"),
            "started": row["started_at"],
            "finished": row["finished_at"],
            "project": row["project"],
            "kind_words": kind_words(row),
            "subset": row.get("subset"),
            "rescored_from": row.get("rescored_from"),
        })
    return out
