"""The hooks pytest calls (docs/pytest.md): loaded in every pytest session of an environment
Oloproof is installed in (entry point `pytest11`, name `oloproof`; `-p no:oloproof` leaves it
out), so this module imports only pytest and the standard library. A marked test imports what
deciding it needs (`trials`: the statistics) when it runs; a session that ran one stores it
(`session_run`) when it ends. A session with no marked test imports nothing else and writes
nothing.

Under pytest-xdist a test's trials all run on the worker that runs the test; its call report
carries them to the controller, which alone stores the session, once.
"""

from __future__ import annotations

from typing import Any

import pytest

MARKER = "oloproof"
#: What each phase of a marked test's trial raised, as pytest caught it (`trials` reads it).
RAISED: pytest.StashKey[dict[str, pytest.ExceptionInfo[BaseException]]] = pytest.StashKey()
#: Why a marked test cannot be run as trials: raised at its setup, which pytest then reports
#: as an error of the test.
MARKER_ERROR: pytest.StashKey[str] = pytest.StashKey()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(trials=50, min=0.8, level=None): run the test's body up to `trials` times, "
        "until the exact bounds of its pass rate decide it against `min`; it passes on PASS "
        "and fails on FAIL or INSUFFICIENT_EVIDENCE (docs/pytest.md)")
    config.pluginmanager.register(MarkedTests(config), "oloproof-marked-tests")


class MarkedTests:
    """The session's marked tests: each run as trials, each result kept, the session stored
    when it ends (by the process that is not an xdist worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[dict[str, Any]] = []  # as the tests' call reports carried them
        self.level: float | str | None = None  # the project's, read at the first marked test
        self.summary: list[str] = []  # the terminal's lines about the stored run

    def project_level(self) -> float | str:
        """The confidence level of the project at pytest's rootdir (`session_run.project_of`:
        its release.yaml's `confidence_level`, else 0.95), read at the first marked test, so a
        project whose files cannot be read stops the marked tests before they run; or what
        cannot be read, in words."""
        if self.level is None:
            from oloproof.errors import OloproofError
            from oloproof.pytest_plugin.session_run import problem, project_of

            try:
                self.level = project_of(self.config.rootpath)[2]
            except OloproofError as exc:
                self.level = f"the project at pytest's rootdir cannot be read: {problem(exc)}"
        return self.level

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> bool | None:
        marker = item.get_closest_marker(MARKER)
        if marker is None or self.config.getoption("setuponly", False) \
                or self.config.getoption("setupplan", False):
            return None
        if not isinstance(item, pytest.Function):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.oloproof marks test "
                                    "functions only")
        from oloproof.pytest_plugin.trials import run_marked

        return run_marked(item, nextitem, marker, self.project_level()) or None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A marked test whose marker cannot be used errors here, with the reason."""
        problem = item.stash.get(MARKER_ERROR, None)
        if problem is not None:
            raise pytest.UsageError(f"oloproof: {problem}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Keeps what each phase of a marked test's trial raised, as pytest caught it (a
        report alone may have been rewritten by another plugin)."""
        raised = item.stash.get(RAISED, None) if call.excinfo is not None else None
        if raised is not None and call.excinfo is not None:
            raised[call.when] = call.excinfo
        return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "oloproof", None)
        if report.when == "call" and isinstance(data, dict):
            self.results.append(data)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.results or hasattr(self.config, "workerinput"):  # (a worker: not here)
            return
        from oloproof.pytest_plugin.session_run import store_session

        self.summary, stored = store_session(self.config.rootpath, self.results)
        if not stored and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary:
            terminalreporter.section(MARKER)
            for line in self.summary:
                terminalreporter.line(line)
