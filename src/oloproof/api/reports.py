"""Reports of stored runs written to files: the HTML report (`write_html_report`) and the
results where CI systems read them (`write_ci_reports`: JUnit XML, Markdown). They read the
store, never run anything, and import the report's modules only when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oloproof.api.deciding import compare_stored_runs
from oloproof.api.result import RunResult, VariantRuns
from oloproof.api.stored import document_of_record
from oloproof.store.location import open_existing_store
from oloproof.suite.policy import Policy

if TYPE_CHECKING:
    from oloproof.document import Comparison


def write_html_report(
    run_ref: str,
    path: str | Path,
    config: str | Path = "oloproof.yaml",
    store: str | Path | None = None,
    *,
    compress: bool | None = None,
    baseline: str | None = None,
) -> Path:
    """Write the HTML report of a stored run to `path`; returns the path written.

    `compress` forces (True) or forbids (False) gzip-compressed case details; by default only
    large runs are compressed. The report of a variant's run ends with the board
    (docs/board.md) of it and the newest run of every other variant, its cost–success chart
    drawn. `baseline` (a run reference) adds the comparison with that run
    (docs/compare.md#both-runs-side-by-side-the-html-report): the broken cases first, each opening
    both runs' case panels side by side; a reference naming the run itself means the newest run
    before it.

    Raises:
        UsageError: `path` cannot be written as a file (checked before the store is read), or
            `run_ref` or `baseline` names no stored run.
        StoreError: no store, or no run stored yet.
        OloproofError: writing `path` failed (its message says why).
    """
    # Imported here: the report's modules are not needed by a run.
    from oloproof.report.html import render_page
    from oloproof.report.html_data import build_report_data
    from oloproof.report.output_files import check_output_path, write_output

    check_output_path(path)  # before the store is read: a FIFO or a missing folder is exit 2

    with open_existing_store(config, store) as db:
        record = db.run_record(db.resolve_run(run_ref))
        document = document_of_record(db, record)
        comparison = None
        if baseline is not None:
            baseline_id = db.resolve_baseline(baseline, record["run_id"], record["project"])
            comparison = compare_stored_runs(db, baseline_id, record["run_id"],
                                         document.confidence_level)
        data = build_report_data(db, record["run_id"], document, compress=compress,
                                 comparison=comparison)
        variant, _ = db.run_marks(record["run_id"])
        others = [r for r, v in db.latest_variant_runs(record["project"]) if v != variant]
    extra = () if variant is None else (_board_of(record["run_id"], others, config, store),)
    return write_output(path, render_page(data, extra=extra))


def _board_of(run_id: str, others: list[str], config: str | Path,
              store: str | Path | None) -> str:
    """A variant's run report's board (docs/board.md): the run with the newest run of every
    other variant, under the newest one's policy against its baseline; or, when no board can
    be made (no baseline, runs of other cases), a note that says why."""
    import html

    from oloproof.api.candidates import board
    from oloproof.errors import OloproofError
    from oloproof.report.board import board_section

    try:
        return board_section(board([run_id, *others], config=config, store=store))
    except OloproofError as error:
        return (f'<section class="wrap" id="board"><p class="note">No board of the variants: '
                f"{html.escape(error.message)} (`oloproof board` makes one)</p></section>")


def write_ci_reports(
    target: RunResult | VariantRuns | Comparison, *, junit: str | Path | None = None,
    markdown: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None,
) -> list[Path]:
    """Write a run's (or a comparison's) results where CI systems read them (docs/ci.md): JUnit
    XML to `junit`, GitHub-flavoured Markdown to `markdown`. A run's cases are read from the
    store, like every report. The runs of a suite's variants (`VariantRuns`) give every run's
    results in one file each, in the runs' order (docs/board.md#running-every-variant). Returns
    the paths written.

    Raises:
        UsageError: a path cannot be written as a file (both are checked before either is
            written).
        StoreError: a run's cases cannot be read from the store.
        OloproofError: writing a file failed (its message says why).
    """
    from oloproof.document import Comparison
    from oloproof.report.junit import (
        case_records,
        comparison_junit,
        run_junit,
        variant_runs_junit,
    )
    from oloproof.report.markdown import comparison_markdown, run_markdown
    from oloproof.report.output_files import check_output_path, write_output

    for path in (junit, markdown):  # both checked before either is written
        if path is not None:
            check_output_path(path)
    written = []
    if junit is not None:
        if isinstance(target, Comparison):
            xml = comparison_junit(target)
        else:
            runs = target.runs if isinstance(target, VariantRuns) else [target]
            with open_existing_store(config, store) as db:
                parts = [(r.document, case_records(db, r.run_id),
                          (r.policy or Policy()).block_on) for r in runs]
            xml = run_junit(*parts[0]) if isinstance(target, RunResult) else \
                variant_runs_junit(parts)
        written.append(write_output(junit, xml))
    if markdown is not None:
        if isinstance(target, Comparison):
            text = comparison_markdown(target)
        elif isinstance(target, VariantRuns):
            text = "\n".join(run_markdown(r.document) for r in target)
        else:
            text = run_markdown(target.document)
        written.append(write_output(markdown, text))
    return written
