"""`oloproof labels`: people's labels — `sample` (a run's cases as their judge was shown them),
`review` (label them in the terminal) and `export` (a transform's pairs to label)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from oloproof.cli.exits import fail, guard
from oloproof.cli.group import cli
from oloproof.cli.options import config_option, store_option
from oloproof.errors import UsageError


@cli.group()
def labels() -> None:
    """People's labels: of judge criteria and of metamorphic pairs."""


@labels.command("sample")
@click.option("--criterion", required=True, help="The judge criterion to label.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None,
              help="How many cases to sample (not needed to add to an existing file).")
@click.option("--seed", default=None, help="The seed of the draw (default: a new one, "
              "recorded in the file; an existing file's own).")
@click.option("--output", "-o", required=True, help="The labels file to write.")
@click.option("--run", "run_ref", default="latest", show_default=True,
              help="The run whose shown text to sample.")
@config_option
@store_option
def labels_sample(criterion: str, n: int | None, seed: str | None, output: str,
                  run_ref: str, config: str, store: str | None) -> None:
    """Draw a uniform sample of a run's cases for people to label (docs/judges.md).

    Each sampled case is written as the judge was shown it, never with its verdict, `label`
    left empty. With a file that already holds the sample, only the sampled cases whose shown
    text changed are added: the labels of unchanged text still apply.
    """
    from oloproof import api

    chosen_seed: int | str | None = None if seed is None else \
        (int(seed) if seed.lstrip("-").isdigit() else seed)
    made = guard(False, lambda: api.sample_labels(criterion, output, run_ref, config, store,
                                                  n=n, seed=chosen_seed))
    sample = made.labels.sample
    if not made.extended:
        click.echo(f"Sampled {len(made.added)} of {sample['cases']} cases of {made.run_id} for "
                   f"{criterion} (seed {sample['seed']}); wrote {output}. Label them with "
                   f"`oloproof labels review {output}`.")
    elif not made.added:
        click.echo(f"No sampled case of {made.run_id} showed new text: the rows of {output} "
                   f"still apply to all {made.kept}.")
    else:
        click.echo(f"{len(made.added)} sampled case(s) of {made.run_id} showed new text, "
                   f"added to {output} to label ({made.kept} unchanged, their labels still "
                   "apply):")
        for row in made.added:
            click.echo(f"  {row.case}" + (f" trial {row.trial}" if row.trial else ""))
    for case_id, why in sorted(made.unshown.items()):
        click.echo(f"  {case_id}: the judge was shown nothing ({why}); it stays unlabelled "
                   "and counts as missing", err=True)
    for note in made.notes:
        click.echo(f"Note: {note}", err=True)
    for warning in made.warnings:
        click.echo(f"Warning: {warning}", err=True)


@labels.command("review")
@click.argument("file", type=click.Path(dir_okay=False))
def labels_review(file: str) -> None:
    """Label a sample in the terminal: one case at a time, p pass, f fail, s skip, q quit;
    saved after every key. The judge's verdict is never shown."""
    from oloproof.cli.review import run_review

    done = guard(False, lambda: run_review(Path(file)))
    click.echo(f"\nLabelled {done.labelled}, skipped {done.skipped}; {done.left} left "
               f"unlabelled. Saved {file}.")


@labels.command("export")
@click.option("--transform", "transform", required=True, help="The transform's name.")
@click.option("--config", default="oloproof.yaml", show_default=True)
@click.option("--output", "-o", default=None, help="File to write (default: stdout).")
@click.option("--force", is_flag=True, help="Replace an output file that already holds labels.")
def labels_export(transform: str, config: str, output: str | None, force: bool) -> None:
    """Write the current pairs of a transform (both texts and the digest) to label.

    An output file that already holds something is never replaced without --force: it may be
    people's labels.
    """
    from oloproof.report.output_files import check_output_path, write_output
    from oloproof.suite.pairs import export_pairs

    if output:
        target = guard(False, lambda: check_output_path(output))
        if not force and target.is_file() and target.stat().st_size > 0:
            fail(UsageError(f"{output} already holds {_count_lines(target)} line(s), perhaps "
                             "people's labels, and exporting would replace them; write to "
                             "another file, or pass --force to replace it"), False)
    rows = guard(False, lambda: export_pairs(Path(config), transform))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if output:
        guard(False, lambda: write_output(output, text))
        click.echo(f"Wrote {len(rows)} pairs to {output}; fill in each `kept` and save it as "
                   "the transform's validity_labels file.", err=True)
    else:
        click.echo(text, nl=False)


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
