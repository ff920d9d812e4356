"""The options several commands share, defined once: --config, --store, --baseline, --junit,
--markdown, --slices, --criterion, --verdict (and the cases the last two choose)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from oloproof.report.case_list import CaseSelection

_store_option = click.option("--store", default=None, help="Path to the store (default: the "
                             "project's .oloproof/store.sqlite).")
_baseline_option = click.option(
    "--baseline", "baseline", default=None, metavar="REF",
    help="The baseline run non_inferiority rules compare with (latest, latest~N, an id "
    "prefix or suffix, tag:NAME, version:V), instead of `baseline:` in the policy.")
_junit_option = click.option("--junit", "junit", default=None, metavar="FILE",
                             help="Also write the results as JUnit XML (for CI).")
_markdown_option = click.option("--markdown", "markdown", default=None, metavar="FILE",
                                help="Also write a GitHub-flavoured Markdown summary "
                                "(a pull-request comment, $GITHUB_STEP_SUMMARY).")


_slices_option = click.option(
    "--slices", "slices", type=click.Choice(["differing", "all"]), default="differing",
    show_default=True,
    help="Slice rows to show: those that differ from the rest of the suite (marked *), or all.")


_config_option = click.option("--config", default="oloproof.yaml", show_default=True,
                              help="The suite file (to find the project's store).")


_criterion_option = click.option("--criterion", default=None,
                                 help="Only cases failed or missing on this criterion.")
_verdict_option = click.option("--verdict", type=click.Choice(["failed", "missing"]),
                               default=None, help="Only cases with a verdict of this kind.")


def _case_selection(failures: bool, criterion: str | None, verdict: str | None) -> CaseSelection:
    """The cases --failures, --criterion and --verdict choose (`inspect`, `cases`)."""
    from oloproof.report.case_list import CaseSelection

    return CaseSelection(failures=failures, criterion=criterion,
                         verdict="failed" if verdict == "failed" else
                         "missing" if verdict == "missing" else None)
