"""The record in words (docs/limits.md#re-runs-and-re-drawn-samples): which of several complete
runs of one suite and version a run is (`run 3 of desk 1.4`), whether it re-sampled its cases
with --no-cache, and which run a comparison took as its baseline and why. One wording for the
terminal, the Markdown summary and the HTML report; the text is plain (the terminal escapes it,
Markdown escapes it, the page sets it as text).
"""

from __future__ import annotations

from collections.abc import Sequence

from oloproof.document import BaselineTaken, RunRecord, SystemRef

#: Run ids listed on each side of "this run" before the rest are counted.
IDS_SHOWN = 4


def _listed(ids: Sequence[str], newest: bool) -> list[str]:
    """At most IDS_SHOWN ids: the newest of `ids` (those nearest this run) when `newest`."""
    if len(ids) <= IDS_SHOWN:
        return list(ids)
    more = f"{len(ids) - IDS_SHOWN} more"
    return [more, *ids[-IDS_SHOWN:]] if newest else [*ids[:IDS_SHOWN], more]


def record_lines(run_id: str, system: SystemRef, record: RunRecord) -> list[str]:
    """A run's place among the complete runs of its suite and version: `Record: run 3 of desk
    1.4` (with `re-sample 2` when --no-cache drew its cases again), then the runs oldest
    first, the re-samples, and what re-sampling means."""
    head = f"Record: run {record.run} of {system.name} {system.version}"
    if record.variant is not None:
        head += f" ({record.variant})"
    if record.runs > record.run:
        head += f", of {record.runs} complete runs so far"
    if record.resample:
        head += (f", re-sample {record.resampled.index(run_id) + 1} (made with --no-cache: "
                 "its cases drawn again)")
    runs = [*_listed(record.earlier, newest=True), "this run",
            *_listed(record.later, newest=False)]
    lines = [head, "complete runs of this suite and version, oldest first: " + ", ".join(runs)]
    if record.resampled:
        if record.resampled != [run_id]:
            lines.append(f"re-sampled with --no-cache ({len(record.resampled)}): " + ", ".join(
                _listed(["this run" if r == run_id else r for r in record.resampled],
                        newest=False)))
        lines.append("the best of several samples passes a rule more often than its "
                     "confidence level says: report them all "
                     "(docs/limits.md#re-runs-and-re-drawn-samples)")
    return lines


def taken_text(baseline: str, system: SystemRef | None, taken: BaselineTaken) -> str:
    """Which of several runs of its version the baseline is, and why: `the latest` (as a
    `version:V` reference takes it) or `named`, with the latest when it is another."""
    version = "its version" if system is None else f"{system.name} {system.version}"
    text = (f"Baseline {baseline} is run {taken.run} of {taken.runs} complete runs of "
            f"{version} (this suite): ")
    if taken.why == "latest":
        text += "the latest of them" + (f" ({taken.reference} takes the latest)"
                                        if taken.reference else "")
    else:
        text += "named" + (f" ({taken.reference})" if taken.reference else " by its id")
        text += (", and it is the latest of them" if taken.latest == baseline
                 else f"; the latest is {taken.latest}")
    return text
