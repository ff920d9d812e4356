"""One marked test's trials (docs/pytest.md#how-a-marked-test-decides): its body run again and
again, each trial with fresh function-scoped fixtures, the outcome of each fed to
`oloproof.stats.sequential.SequentialRate` until the rule decides; the test then reported once,
passed or failed with the decision.

A trial is pytest's own setup → call → teardown of the item, with the teardown going only as far
as the item itself (`_NextTrial`): its function-scoped fixtures are torn down and made afresh,
the module's, class's and session's fixtures stay until pytest's own teardown after the last
trial. What a trial was is read from the exceptions pytest caught (the plugin's
`pytest_runtest_makereport` keeps them): none in setup and call is a pass, an `AssertionError`
(or `pytest.fail`) in the call a failure, anything else in setup or call an errored trial. A
teardown that raises leaves the trial's outcome as it was and is reported on the test's
teardown, as pytest reports one.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from _pytest._code.code import (
    ReprEntryNative,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprTraceback,
)
from _pytest.runner import call_and_report

from oloproof.decisions.rules import sequential_row
from oloproof.pytest_plugin.plugin import MARKER_ERROR, RAISED
from oloproof.report.decision_words import sequential_parts
from oloproof.stats.sequential import SequentialDecision, SequentialRate
from oloproof.suite.config import MAX_TRIALS  # (the most a stored case holds, too)

#: The marker's arguments (docs/pytest.md#the-marker).
ARGUMENTS = ("trials", "min", "level")
DEFAULT_TRIALS = 50
#: The criterion a stored test's trials are judged as (docs/pytest.md#the-stored-run).
CRITERION = "passes"
#: Where a test's results travel to the process that stores the session (under pytest-xdist,
#: the controller): an attribute of the test's call report, which xdist sends as it is.
REPORT_KEY = "oloproof"
#: How much of an exception's text a trial keeps.
MESSAGE_LIMIT = 2_000
#: The failed and errored trials a failing test's report lists.
SHOWN_TRIALS = 5
#: pytest's own words for an `async def` test that no async plugin ran.
_NOT_RUN_ASYNC = "async def functions are not natively supported"

Outcome = Literal["passed", "failed", "errored"]


@dataclass(frozen=True)
class Settings:
    """A marked test's `min`, `trials` and `level`."""

    minimum: float
    trials: int
    level: float


@dataclass
class Trial:
    """One run of a marked test: its outcome, what it raised (`message`: the exception as pytest
    words it, its type first, cut at `MESSAGE_LIMIT` characters; `phase`: `setup` or `call`;
    `where`: the file and line it was raised at) and how long setup, call and teardown took."""

    outcome: Outcome
    duration_s: float
    message: str | None = None
    phase: str | None = None
    where: str | None = None


@dataclass
class MarkedTestTrials:
    """What a marked test sends to the process that stores the session: its settings, its
    trials in order and the decision they made."""

    nodeid: str
    minimum: float
    trials: int
    level: float
    outcomes: list[Trial] = field(default_factory=list)
    state: str = ""
    lower: float | None = None
    upper: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MarkedTestTrials:
        return cls(**{**data, "outcomes": [Trial(**t) for t in data["outcomes"]]})


class MarkerError(Exception):
    """The marker's arguments cannot be used (the message says what to write)."""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def settings_of(marker: pytest.Mark, project_level: float) -> Settings:
    """The marker's settings, checked; `level` defaults to the project's confidence level."""
    if marker.args:
        raise MarkerError("@pytest.mark.oloproof takes keyword arguments only: "
                          "@pytest.mark.oloproof(trials=50, min=0.8)")
    unknown = sorted(set(marker.kwargs) - set(ARGUMENTS))
    if unknown:
        raise MarkerError(f"@pytest.mark.oloproof has no argument {unknown[0]!r}; it takes "
                          "trials (the most trials, default 50), min (the pass rate to show) "
                          "and level (the confidence level)")
    if "min" not in marker.kwargs:
        raise MarkerError("@pytest.mark.oloproof needs min, the pass rate the test must show: "
                          "@pytest.mark.oloproof(trials=50, min=0.8)")
    minimum = marker.kwargs["min"]
    if not _number(minimum) or not 0 < minimum < 1:
        raise MarkerError(f"@pytest.mark.oloproof: min is a pass rate strictly between 0 and 1 "
                          f"(min=0.8 is 80%), not {minimum!r}")
    trials = marker.kwargs.get("trials", DEFAULT_TRIALS)
    if not (isinstance(trials, int) and not isinstance(trials, bool)
            and 1 <= trials <= MAX_TRIALS):
        raise MarkerError(f"@pytest.mark.oloproof: trials is a whole number from 1 to "
                          f"{MAX_TRIALS:,} (the most times the body runs), not {trials!r}")
    level = marker.kwargs.get("level", project_level)
    if not _number(level) or not 0.5 < level < 1:
        raise MarkerError(f"@pytest.mark.oloproof: level is a confidence level strictly between "
                          f"0.5 and 1 (level=0.95), not {level!r}")
    return Settings(float(minimum), trials, float(level))


class _NextTrial:
    """What an intermediate trial's teardown is told comes next: the same test again. Pytest
    tears down what the next item does not share, so only the item itself (its function-scoped
    fixtures) is torn down; every other attribute is the item's, for plugins that look."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item

    def listchain(self) -> list[Any]:
        return [*self._item.listchain()[:-1], self]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._item, name)


def _where(excinfo: pytest.ExceptionInfo[BaseException], rootdir: Path) -> str | None:
    """`tests/test_agent.py:14`: where the exception was raised (relative to the rootdir)."""
    try:
        entry = excinfo.traceback[-1]
    except IndexError:  # (an exception without a traceback)
        return None
    path = Path(entry.path)
    shown = path.relative_to(rootdir) if path.is_relative_to(rootdir) else path
    return f"{shown}:{entry.lineno + 1}"


def _message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    text = excinfo.exconly().strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


@dataclass
class _Run:
    """One trial as pytest runs it: its reports and the exceptions each phase raised."""

    item: pytest.Function
    reports: list[pytest.TestReport] = field(default_factory=list)
    raised: dict[str, pytest.ExceptionInfo[BaseException]] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def setup_and_call(self, first: bool) -> None:
        """Setup and call, logged nowhere: pytest's protocol for a run of the item
        (`runtestprotocol`), a re-run's fixtures made afresh as it makes them."""
        if not first:
            self.item._initrequest()
        self.item.stash[RAISED] = self.raised
        self.reports.append(call_and_report(self.item, "setup", log=False))
        if self.reports[0].passed:
            self.reports.append(call_and_report(self.item, "call", log=False))

    def teardown(self, nextitem: Any) -> pytest.TestReport:
        """The teardown, as far as `nextitem` says: the item alone before another trial,
        what the next test does not share after the last."""
        try:
            report = call_and_report(self.item, "teardown", log=False, nextitem=nextitem)
        finally:
            self.item._request = False  # type: ignore[assignment]
            self.item.funcargs = None  # type: ignore[assignment]
        self.reports.append(report)
        return report

    def trial(self) -> Trial | None:
        """The trial's outcome, from its setup and call (None when it was skipped)."""
        duration = time.perf_counter() - self.started
        for phase in ("setup", "call"):
            excinfo = self.raised.get(phase)
            if excinfo is None:
                continue
            if excinfo.errisinstance(pytest.skip.Exception):
                return None
            failed = phase == "call" and excinfo.errisinstance(
                (AssertionError, pytest.fail.Exception))
            return Trial("failed" if failed else "errored", duration, _message(excinfo),
                         phase, _where(excinfo, self.item.config.rootpath))
        return Trial("passed", duration)

    def async_unrun(self) -> bool:
        """pytest refused an `async def` test that no async plugin ran."""
        excinfo = self.raised.get("call")
        function = getattr(self.item, "obj", None)
        return (excinfo is not None and excinfo.errisinstance(pytest.fail.Exception)
                and str(excinfo.value).startswith(_NOT_RUN_ASYNC)
                and (inspect.iscoroutinefunction(function)
                     or inspect.isasyncgenfunction(function)))


def _log(item: pytest.Item, reports: list[pytest.TestReport]) -> None:
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)


def _keywords(item: pytest.Item) -> dict[str, Literal[1]]:
    return dict.fromkeys(item.keywords, 1)


def decision_lines(decision: SequentialDecision, nodeid: str) -> list[str]:
    """The decision as the test's report says it, in the words of the stored run's
    (`report.numbers.sequential_parts`): for INSUFFICIENT_EVIDENCE first about how many more
    trials would decide, then the state with the bounds, then the trials."""
    row = sequential_row(nodeid, CRITERION, nodeid, decision)
    compared, trials, more = sequential_parts(row)
    lines = [f"INSUFFICIENT_EVIDENCE: {more}"] if more else []
    return [*lines, f"oloproof: {row.state} · {compared}", f"after {trials}"]


def _failure_text(decision: SequentialDecision, nodeid: str, trials: list[Trial],
                  first_failure: pytest.TestReport | None) -> str:
    """What a test that did not pass says: the decision, its failed and errored trials (the
    first few, each with the first line of what it raised), the first failure whole."""
    lines = decision_lines(decision, nodeid)
    for outcome, what in (("failed", "Failed trials: {}"),
                          ("errored", "Errored trials: {} (counted as missing: a failure for "
                                      "PASS, a pass for FAIL)")):
        numbered = [(n, t) for n, t in enumerate(trials, 1) if t.outcome == outcome]
        if not numbered:
            continue
        lines.append(what.format(len(numbered)))
        for n, trial in numbered[:SHOWN_TRIALS]:
            at = f" ({trial.where})" if trial.where else ""
            phase = " in setup" if trial.phase == "setup" else ""
            first_line = (trial.message or "").split("\n", 1)[0]
            lines.append(f"  trial {n}{phase}: {first_line}{at}")
        if len(numbered) > SHOWN_TRIALS:
            lines.append(f"  … and {len(numbered) - SHOWN_TRIALS} more")
    if first_failure is not None and first_failure.longrepr is not None:
        number = next(n for n, t in enumerate(trials, 1) if t.outcome == "failed")
        lines += ["", f"The first failed trial (trial {number}):", str(first_failure.longrepr)]
    return "\n".join(lines)


def _failure(item: pytest.Item, text: str) -> ReprExceptionInfo:
    """`text` as pytest shows a failure: whole in the test's section, its first line after the
    test's name in the short summary (as an exception's message is; under CI too) and in a
    JUnit file's failure message. Sent by xdist as it sends any failure."""
    path, line, _ = item.location
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback([ReprEntryNative([text + "\n"])], None, "native"),
        reprcrash=ReprFileLocation(path, (line or 0) + 1, text.split("\n", 1)[0]))


def run_marked(item: pytest.Function, nextitem: pytest.Item | None, marker: pytest.Mark,
               project_level: float | str) -> bool:
    """Run a marked test's trials and report it once (the runtest protocol of a marked test).
    `project_level` is the project's confidence level, or why it could not be read. False when
    the marker cannot be used: then nothing ran, and the test is to error at its setup with
    the reason (kept under `MARKER_ERROR`)."""
    try:
        if isinstance(project_level, str):
            raise MarkerError(project_level)
        if item.get_closest_marker("xfail") is not None:
            raise MarkerError("a marked test's outcome is its decision: it cannot also be "
                              "marked xfail; remove one of the two markers")
        settings = settings_of(marker, project_level)
    except MarkerError as exc:
        item.stash[MARKER_ERROR] = str(exc)
        return False
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    rate = SequentialRate(settings.minimum, settings.trials, settings.level)
    trials: list[Trial] = []
    runs: list[_Run] = []
    first_failure: pytest.TestReport | None = None
    teardown_errors: list[str] = []
    started = time.time()
    while not rate.decided:
        run = _Run(item)
        run.setup_and_call(first=not runs)
        runs.append(run)
        trial = run.trial()
        if trial is None or run.async_unrun():
            # Skipped, or an async test no plugin ran: reported as pytest reported this trial,
            # with nothing decided or stored.
            run.teardown(nextitem)
            _log(item, run.reports)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            return True
        trials.append(trial)
        rate = rate.add(trial.outcome)
        # After the last trial pytest's own teardown: what the next test does not share.
        teardown = run.teardown(nextitem if rate.decided else _NextTrial(item))
        if "teardown" in run.raised and not rate.decided:
            teardown_errors.append(f"trial {len(runs)}: {_message(run.raised['teardown'])}")
        if trial.outcome == "failed" and first_failure is None:
            first_failure = next(r for r in run.reports if r.when == "call")
    decision = rate.decision()
    stopped = time.time()
    result = MarkedTestTrials(item.nodeid, settings.minimum, settings.trials, settings.level,
                              trials, decision.state, decision.lower, decision.upper)
    sections = [s for r in runs[-1].reports if r.when == "call" for s in r.sections]
    passed = decision.state == "PASS"
    call = pytest.TestReport(
        item.nodeid, item.location, _keywords(item), "passed" if passed else "failed",
        None if passed else _failure(item, _failure_text(decision, item.nodeid, trials,
                                                         first_failure)),
        "call", sections, sum(t.duration_s for t in trials), started, stopped,
        item.user_properties, **{REPORT_KEY: result.to_json()})
    setup = pytest.TestReport(item.nodeid, item.location, _keywords(item), "passed", None,
                              "setup", (), 0.0, started, started)
    if teardown_errors:  # (the last trial's teardown is pytest's own, reported as it is)
        text = "oloproof: the test's teardown raised in " + "; ".join(teardown_errors)
        if teardown.failed:
            text += f"\n\nand after the last trial:\n{teardown.longrepr}"
        teardown = pytest.TestReport(
            item.nodeid, item.location, _keywords(item), "failed", text, "teardown",
            teardown.sections, teardown.duration, teardown.start, teardown.stop)
    _log(item, [setup, call, teardown])
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True

