"""`oloproof labels sample` (docs/judges.md#labelling): a uniform sample of a stored run's cases
for people to label, each as the judge was shown it — never with the judge's verdict.

The sample is drawn from the run's cases by the seed (`suite.judge_labels.draw_sample`), and
its first line records the seed, the size and the digest of the cases it was drawn from. Asked
again with the same seed for a file that already holds the sample, it adds only the sampled
cases whose shown text has no row yet — the labels of unchanged text still apply.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oloproof.analysis.judged import MIN_LABELLED
from oloproof.errors import UsageError
from oloproof.report.run_list import utc_text
from oloproof.store.reruns import LabelSample, distinct_samples
from oloproof.store.store import Store
from oloproof.suite.judge_labels import (
    LabelRow,
    LabelsFile,
    draw_sample,
    suite_digest,
)


@dataclass
class Sampled:
    """What `labels sample` made: the file to write, the rows it added, and the sampled cases
    the judge was shown nothing for (errored, or a shown field absent), with why."""

    labels: LabelsFile
    added: list[LabelRow]
    kept: int  # sampled cases whose shown text already has its row

    unshown: dict[str, str] = field(default_factory=dict)
    run_id: str = ""
    #: whether the file already held the sample (the rows were added to it), or was new
    extended: bool = False
    #: what the user may not expect: a sample too small to ever check the judge, a file the
    #: criterion does not read
    notes: list[str] = field(default_factory=list)
    #: the earlier samples of the criterion drawn with another seed or size, named
    #: (docs/judges.md#labelling)
    warnings: list[str] = field(default_factory=list)
    #: the sample drawn, as the store records it (`Store.record_label_sample`)
    drawn: LabelSample | None = None
    project: str = ""


def sample_labels(db: Store, run_ref: str, criterion: str, n: int | None,
                  seed: int | str | None, existing: LabelsFile | None,
                  output: Path, project_dir: Path | None = None) -> Sampled:
    """The labels file of `criterion` for the run `run_ref` (see the module docstring);
    `project_dir` (the suite file's folder) resolves the criterion's own `labels:` path."""
    run_id = db.resolve_run(run_ref)
    record = db.run_record(run_id)
    suite = record["suite"]
    judges = suite.get("judges") or {}
    criteria = list(suite["criteria"])
    if criterion not in judges:
        named = ", ".join(judges) or "none"
        raise UsageError(f"{criterion!r} is not a judge criterion of run {run_id}; its judge "
                         f"criteria: {named}")
    at = criteria.index(criterion)
    if existing is not None:
        sample = existing.sample
        if seed is not None and str(seed) != str(sample["seed"]):
            raise UsageError(
                f"{output} holds the sample drawn with seed {sample['seed']!r}, perhaps with "
                f"people's labels; write the sample of seed {seed!r} to another file, or leave "
                "--seed out to add to this one")
        if n is not None and n != int(sample["n"]):
            raise UsageError(f"{output} holds a sample of {sample['n']} cases; write a sample "
                             f"of {n} to another file, or leave --n out to add to this one")
        seed, n = sample["seed"], int(sample["n"])
    if n is None:
        raise UsageError("give --n, how many cases to sample")
    if seed is None:
        seed = secrets.randbelow(2**31)  # recorded in the file's first line
    trials = int(suite.get("trials", 1))
    population: list[str] = []
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for case_id, _digest, _key, outcome in db.iter_run_cases(run_id):
        if outcome.get("src") is not None:
            continue
        if case_id not in outcomes:
            population.append(case_id)
            outcomes[case_id] = []
        outcomes[case_id].append(outcome)
    if existing is not None and existing.sample["suite"] != suite_digest(population):
        raise UsageError(f"{output} was sampled from another set of cases than run {run_id}'s; "
                         "draw a new sample into another file")
    drawn = draw_sample(population, seed, n)
    shown, unshown = _shown_texts(db, suite, at, {c: outcomes[c] for c in drawn})
    rubric = _rubric(suite, criterion)
    sample = {"criterion": criterion, "seed": seed, "n": n, "suite": suite_digest(population),
              "cases": len(population), **({"rubric": rubric} if rubric else {})}
    rows = list(existing.rows) if existing is not None else []
    have = {(row.case, row.digest) for row in rows}
    added = []
    for case_id in drawn:
        for trial, (shown_digest, text) in sorted(shown.get(case_id, {}).items()):
            if (case_id, shown_digest) in have:
                continue
            have.add((case_id, shown_digest))
            row = LabelRow(0, case_id, shown_digest, None, trial if trials > 1 else None, text)
            added.append(row)
    rows.extend(added)
    # the sampled cases whose text the file already holds
    kept = sum(1 for case_id in drawn if case_id in shown) - len({r.case for r in added})
    recorded = LabelSample(criterion, str(seed), n, sample["suite"], run_id, str(output),
                           time.time())
    project = str(record["project"])
    made = Sampled(LabelsFile(output, existing.sample if existing else sample, rows), added,
                   kept, unshown, run_id, extended=existing is not None, drawn=recorded,
                   project=project,
                   warnings=_redrawn(db.label_samples(project, criterion), recorded))
    if existing is None and len(drawn) < MIN_LABELLED:
        made.notes.append(
            f"a judge is checked against people once at least {MIN_LABELLED} sampled cases "
            f"carry a label: a sample of {len(drawn)} leaves {criterion} uncalibrated however "
            f"it is labelled; draw --n {MIN_LABELLED} or more into another file (30 or more "
            "narrows the corrected interval)")
    reads = _option(suite, criterion, "labels")
    if project_dir is not None and (
            reads is None or (project_dir / reads).resolve() != output.resolve()):
        made.notes.append(
            f"{criterion} reads no labels file (labels:), so these labels count nowhere yet; "
            f"give the criterion `labels: {output}` in the suite" if reads is None else
            f"{criterion} reads its labels from {reads}, not {output}: these labels count "
            f"only once the criterion's `labels:` names {output}")
    return made


def _redrawn(earlier: list[LabelSample], drawn: LabelSample) -> list[str]:
    """A warning naming the samples of the criterion drawn before with another seed or size
    (each seed and size once, the first drawn), if there are any."""
    others = [s for s in distinct_samples(earlier) if (s.seed, s.n) != (drawn.seed, drawn.n)]
    if not others:
        return []
    listed = "; ".join(f"seed {s.seed}, n {s.n}, {utc_text(s.drawn_at)} into {s.file}"
                       for s in others)
    return [f"{drawn.criterion} already had {len(others)} labels sample"
            f"{'s' if len(others) > 1 else ''} drawn with another seed or n ({listed}); this "
            f"one is seed {drawn.seed}, n {drawn.n}. Drawing samples until one suits makes "
            "the corrected rate look better than it is "
            "(docs/limits.md#re-runs-and-re-drawn-samples): every sample drawn is kept in the "
            "store, and the next run's warnings list them all"]


def _option(suite: dict[str, Any], criterion: str, key: str) -> str | None:
    """A key of the stored configuration of the judge criterion `criterion`."""
    for evaluator in suite.get("evaluators") or ():
        if evaluator.get("criterion") == criterion:
            value = evaluator.get(key)
            return str(value).strip() if value else None
    return None


def _rubric(suite: dict[str, Any], criterion: str) -> str | None:
    return _option(suite, criterion, "rubric") or _option(suite, criterion, "prompt")


def _shown_texts(db: Store, suite: dict[str, Any], at: int,
                 outcomes: dict[str, list[dict[str, Any]]]
                 ) -> tuple[dict[str, dict[int, tuple[str, Any]]], dict[str, str]]:
    """Per sampled case and trial, (shown digest, what the judge was shown), read back from
    the verdicts the judge gave; and the cases it was shown nothing for, with why."""
    evaluator_key = suite["evaluator_keys"][at]
    # (Cases of the same content share their judgments' key, and so their verdicts.)
    keys: dict[str, list[tuple[str, int]]] = {}
    unshown: dict[str, str] = {}
    for case_id, trials in outcomes.items():
        for outcome in trials:
            reason = outcome["r"][at] if outcome["c"][at] == "M" else None
            if outcome.get("k") is None or reason is not None:
                unshown.setdefault(case_id, reason or outcome.get("e") or "not judged")
                continue
            keys.setdefault(outcome["k"] + evaluator_key, []).append(
                (case_id, int(outcome.get("tr", 1))))
    judgments = db.load_judgments(list(keys))
    # (Cases shown the same text share a verdict: the judge's key is what it was shown.)
    verdict_keys: dict[str, list[tuple[str, int]]] = {}
    for key, places in keys.items():
        details = (judgments.get(key) or {}).get("details") or {}
        for where in places:
            if isinstance(details.get("verdict_key"), str):
                verdict_keys.setdefault(details["verdict_key"], []).append(where)
            else:
                unshown.setdefault(where[0], "no verdict stored")
    stored = db.lookup_judge_verdicts(list(verdict_keys))
    shown: dict[str, dict[int, tuple[str, Any]]] = {}
    for verdict_key, places in verdict_keys.items():
        record = stored.get(verdict_key)
        for case_id, trial in places:
            if record is None or not isinstance(record.get("shown_digest"), str):
                unshown.setdefault(case_id, "no verdict stored")
                continue
            shown.setdefault(case_id, {})[trial] = (record["shown_digest"],
                                                    record.get("shown"))
    for case_id in shown:
        unshown.pop(case_id, None)
    return shown, unshown
