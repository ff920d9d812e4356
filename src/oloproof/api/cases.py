"""A stored run's cases, as the commands that show them read them: listed one line each
(`list_cases`: `oloproof cases`, the summary of `inspect --failures`), one whole (`case_view`:
`inspect --case`), several whole (`case_views`: `inspect --failures`), those whose trials
disagree (`flaky_cases`: `inspect --flaky`), and a sample of them for people to label
(`sample_labels`: `oloproof labels sample`).

Each opens the project's store read-only, reads, and closes it; only `sample_labels` writes:
the labels file it is given, and the sample drawn in the store's record. The report's modules
are imported when a function is called, so importing the API does not load them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.errors import UsageError
from oloproof.store.location import open_existing_store

if TYPE_CHECKING:
    from oloproof.report.case_list import CaseSelection, CaseVerdicts
    from oloproof.report.flaky import FlakyCase
    from oloproof.report.labelling import Sampled


@dataclass(frozen=True)
class CaseList:
    """The cases of a run that `list_cases` chose: each with its verdict code per criterion
    (`P`, `F`, `M`, `X`), in case-id order; `total` is how many cases the run has."""

    run_id: str
    criteria: list[str]
    cases: list[CaseVerdicts]
    total: int
    selection: CaseSelection

    def to_json(self) -> dict[str, Any]:
        """What `oloproof cases --json` prints."""
        return {"run_id": self.run_id, "criteria": self.criteria,
                "cases": [c.to_json(self.criteria) for c in self.cases]}


@dataclass(frozen=True)
class FlakyCases:
    """The cases of a run whose trials disagree on a criterion, most divided first
    (docs/reliability.md); `total` is how many cases the run has."""

    run_id: str
    criteria: list[str]
    trials: int
    total: int
    cases: list[FlakyCase]

    def to_json(self) -> dict[str, Any]:
        """What `oloproof inspect --flaky --json` prints."""
        return {"run_id": self.run_id, "trials": self.trials, "criteria": self.criteria,
                "cases": self.total, "flaky": [f.to_json(self.criteria) for f in self.cases]}


def list_cases(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None,
    *, failures: bool = False, criterion: str | None = None, verdict: str | None = None,
) -> CaseList:
    """The cases of a stored run, as `oloproof cases` lists them: every case, or with
    `failures` those failed, errored or missing; `criterion` keeps those failed or missing on
    that criterion, and `verdict` (`"failed"` or `"missing"`) those with a verdict of that kind.
    Reads only the stored outcomes: no output, trajectory or state.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run; the run has no criterion `criterion`; or
            `verdict` is neither "failed" nor "missing".
    """
    from oloproof.report.case_list import CaseSelection, select_cases

    if verdict not in (None, "failed", "missing"):
        raise UsageError(f"a verdict to list cases by is 'failed' or 'missing', not {verdict!r}")
    selection = CaseSelection(failures=failures, criterion=criterion,
                              verdict="failed" if verdict == "failed" else
                              "missing" if verdict == "missing" else None)
    with open_existing_store(config, store) as db:
        run_id = db.resolve_run(ref)
        criteria, chosen, total = select_cases(db, run_id, selection)
    return CaseList(run_id, criteria, chosen, total, selection)


def case_view(
    case_id: str, ref: str = "latest", config: str | Path = "oloproof.yaml",
    store: str | Path | None = None, *, trial: int | None = None,
) -> dict[str, Any]:
    """One case of a stored run whole, as `oloproof inspect --case` shows it (its `--json` is
    this dict): input, expected, states, trajectory, verdicts and errors. With repeated trials
    it is trial 1, with every trial side by side under `trials`; with `trial`, that trial
    whole. `case_id` may be written as the terminal shows it (`a\\u2028b`).

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run, the run has no case `case_id`, or no trial
            `trial` of it.
    """
    from oloproof.report.case_view import case_view as view_of

    with open_existing_store(config, store) as db:
        return view_of(db, db.resolve_run(ref), case_id, trial)


def case_views(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None,
    *, cases: list[str] | None = None, failures: bool = False,
) -> list[dict[str, Any]]:
    """Several cases of a stored run whole, each as `case_view` gives it: every case, or with
    `failures` each failed, errored or missing one, in stored order; with `cases`, those
    cases in that order (an id the run does not have is left out).

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run.
    """
    from oloproof.report.case_view import iter_case_views

    with open_existing_store(config, store) as db:
        return iter_case_views(db, db.resolve_run(ref), only_failures=failures, cases=cases)


def flaky_cases(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None,
) -> FlakyCases:
    """The cases of a stored run whose trials disagree, as `oloproof inspect --flaky` lists
    them: per criterion the passed / failed / missing / excluded trials, most divided first
    (docs/reliability.md). A run of one trial per case has none.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run.
    """
    from oloproof.report.flaky import flaky_cases as flaky_of_run

    with open_existing_store(config, store) as db:
        run_id = db.resolve_run(ref)
        criteria, trials, total, found = flaky_of_run(db, run_id)
    return FlakyCases(run_id, criteria, trials, total, found)


def sample_labels(
    criterion: str, output: str | Path, ref: str = "latest",
    config: str | Path = "oloproof.yaml", store: str | Path | None = None, *,
    n: int | None = None, seed: int | str | None = None,
) -> Sampled:
    """Draw a uniform sample of `n` cases of a stored run for people to label, and write it to
    `output`, as `oloproof labels sample` does (docs/judges.md#labelling): each sampled case as
    the judge of `criterion` was shown it, never with its verdict. The seed (a new one when
    None) is recorded in the file. When `output` already holds the sample, `n` and `seed` may
    be left out: only the sampled cases whose shown text changed are added, and the labels of
    unchanged text still apply. Every sample drawn is recorded in the store first (criterion,
    seed, n, the digest of the cases drawn from, when); `warnings` names the criterion's
    earlier samples of another seed or n (docs/limits.md#re-runs-and-re-drawn-samples).
    Returns what was added, kept and not shown.

    Raises:
        UsageError: `output` cannot be written as a file; `criterion` is not a judge criterion
            of the run; `n` is missing, or `n` or `seed` differ from the file's sample; or the
            file was sampled from another set of cases. Checked before anything is written.
        ConfigError: `output` holds something that is not a labels file.
        StoreError: no store, or no run stored yet; or the store cannot be written (the
            sample is not recorded, and no file is written).
        OloproofError: writing `output` failed (its message says why).
    """
    from oloproof.report.labelling import sample_labels as draw
    from oloproof.report.output_files import check_output_path, write_output
    from oloproof.suite.judge_labels import read_labels_file

    target = check_output_path(output)
    existing = read_labels_file(target) \
        if target.is_file() and target.stat().st_size > 0 else None
    # (Opened to write: the sample is recorded before its file is written, so no sample
    # drawn goes unrecorded; docs/limits.md#re-runs-and-re-drawn-samples.)
    with open_existing_store(config, store, writing=True) as db:
        made = draw(db, ref, criterion, n, seed, existing, Path(output), Path(config).parent)
        if made.drawn is not None:
            db.record_label_sample(made.project, made.drawn)
    write_output(output, made.labels.text())
    return made
