"""The options several commands share, defined once: --config, --store, --baseline, --junit,
--markdown, --slices, --criterion, --verdict (the cases the last two choose are
`oloproof.list_cases`'s)."""

from __future__ import annotations

import click

store_option = click.option("--store", default=None, help="Path to the store (default: the "
                            "project's .oloproof/store.sqlite).")
baseline_option = click.option(
    "--baseline", "baseline", default=None, metavar="REF",
    help="The baseline run non_inferiority rules compare with (latest, latest~N, an id "
    "prefix or suffix, tag:NAME, version:V), instead of `baseline:` in the policy.")
junit_option = click.option("--junit", "junit", default=None, metavar="FILE",
                            help="Also write the results as JUnit XML (for CI).")
markdown_option = click.option("--markdown", "markdown", default=None, metavar="FILE",
                               help="Also write a GitHub-flavoured Markdown summary "
                               "(a pull-request comment, $GITHUB_STEP_SUMMARY).")


slices_option = click.option(
    "--slices", "slices", type=click.Choice(["differing", "all"]), default="differing",
    show_default=True,
    help="Slice rows to show: those that differ from the rest of the suite (marked *), or all.")


config_option = click.option("--config", default="oloproof.yaml", show_default=True,
                             help="The suite file (to find the project's store).")


criterion_option = click.option("--criterion", default=None,
                                help="Only cases failed or missing on this criterion.")
verdict_option = click.option("--verdict", type=click.Choice(["failed", "missing"]),
                              default=None, help="Only cases with a verdict of this kind.")

