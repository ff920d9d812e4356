"""Shared fixtures: a project on disk, and the `oloproof` command run as a real process.

`cli(*args, cwd=...)` runs the command line in its own process, with `CI=1`, and returns
`(code, out, err)`: a process forked from the fork server (`fork_server.py`: starting Python and
importing the engine costs most of a second per process, more than the hundreds of commands
the tests run can afford). Set `OLOPROOF_TEST_SPAWN=1` to start every command as
`python -m oloproof.cli.main` instead. Tests about signals or a killed process use
`spawn_oloproof(...)`, which always starts a fresh interpreter; a test that only needs a
command running beside it (a server to query, a run racing another, one writing to a
terminal) uses `forked_oloproof(...)`, a forked one.

The probe project (`probe`, `new_probe()`) wraps a system that does what each case's input says
(answer, sleep, raise, return a non-object, record a broken trajectory) and logs every call to
`calls.log`, so a test can check whether, how often and when the system was called.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import fork_server
import pytest
import shared_browser
import yaml
from fork_server import CliResult, ForkServer, cli_env, oloproof_argv
from hypothesis import settings

import oloproof

# Every Ray process a test starts listens on 127.0.0.1 only: unless this is 0 when Ray is
# imported, Ray 2.60 gives a node the machine's outward address and its servers listen on every
# interface (docs/scaling.md#two-nodes-on-one-machine). Set before anything imports Ray; the
# commands the tests start inherit it.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

# Property tests check what holds, not how fast: several test runs share this machine, and a
# per-example deadline turned a loaded moment into a failure.
settings.register_profile("oloproof", deadline=None)
settings.load_profile("oloproof")

STARTER = Path(oloproof.__file__).parent / "examples" / "starter"


def pytest_sessionfinish(session: pytest.Session) -> None:
    fork_server.shared().close()  # (the docs' sessions and the examples use it without `cli`)
    shared_browser.close()  # (open still if the session stopped in the middle of its tests)


@pytest.fixture(scope="session")
def _fork_server() -> Iterator[ForkServer]:
    server = fork_server.shared()
    yield server
    server.close()


@pytest.fixture(scope="session")
def cli(_fork_server: ForkServer) -> Callable[..., CliResult]:
    """`cli("run", "--json", cwd=project)` → (exit code, stdout, stderr) of a real process."""

    def run(*args: str, cwd: Path, env: dict[str, str | None] | None = None,
            timeout: float = 60.0) -> CliResult:
        full_env = cli_env(**(env or {}))
        if os.environ.get("OLOPROOF_TEST_SPAWN"):
            done = subprocess.run(oloproof_argv(*args), check=False, cwd=cwd, env=full_env,
                                  capture_output=True, text=True, encoding="utf-8",
                                  timeout=timeout, stdin=subprocess.DEVNULL)
            return CliResult(done.returncode, done.stdout, done.stderr)
        return _fork_server.run(list(args), cwd, full_env, timeout)

    return run


def _default_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def spawn_oloproof() -> Callable[..., subprocess.Popen[str]]:
    """`spawn_oloproof("run", cwd=project)` → the running `oloproof run` process (pipes, CI=1).

    For tests that signal, race or watch a process: it is a fresh interpreter, not a fork.
    Its Ctrl-C is the default one whatever pytest inherited: a shell without job control
    starts a background command (`pytest … &`) with SIGINT ignored, which a child inherits
    and Python then leaves alone, so a test's SIGINT would never reach the run.
    """

    def spawn(*args: str, cwd: Path, env: dict[str, str | None] | None = None,
              **popen: Any) -> subprocess.Popen[str]:
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        popen.setdefault("preexec_fn", _default_ctrl_c)
        return subprocess.Popen(oloproof_argv(*args), cwd=cwd, env=cli_env(**(env or {})),
                                stdin=subprocess.DEVNULL, text=True, encoding="utf-8", **popen)

    return spawn


@pytest.fixture(scope="session")
def forked_oloproof(_fork_server: ForkServer) -> Callable[..., subprocess.Popen[str]]:
    """`forked_oloproof("view", cwd=project)` → a running `oloproof` process as
    `spawn_oloproof` gives, but forked from the fork server (its `program`: a small process
    that forwards Ctrl-C and SIGTERM to the command and exits with its status), for a test
    that needs a command running beside it, not a fresh interpreter's start: it costs no
    interpreter start and engine import (about a second of CPU). Not for SIGKILL (it would
    kill the forwarding process only) nor for what a fresh interpreter's start does."""

    def fork(*args: str, cwd: Path, env: dict[str, str | None] | None = None,
             **popen: Any) -> subprocess.Popen[str]:
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        argv = [str(_fork_server.program), *args]
        return subprocess.Popen(argv, cwd=cwd, env=cli_env(**(env or {})),
                                stdin=subprocess.DEVNULL, text=True, encoding="utf-8", **popen)

    return fork


# ---- projects ---------------------------------------------------------------------------------

@pytest.fixture
def starter_project(tmp_path: Path) -> Path:
    """A fresh copy of the starter project `oloproof init` scaffolds."""
    project = tmp_path / "starter"
    shutil.copytree(STARTER, project, ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    return project


_MARK_CALLS = '''

# --- added by the test: every call of the system leaves a line in calls.log ---
import functools as _functools

_unmarked_run = run


@_functools.wraps(_unmarked_run)  # keeps the @system declaration (it lives in __dict__)
def run(case_input):
    with open(__file__.replace("app.py", "calls.log"), "a") as log:
        log.write("called\\n")
    return _unmarked_run(case_input)
'''


@pytest.fixture
def marked_starter(starter_project: Path) -> Path:
    """The starter project whose system leaves a line in `calls.log` at every call (so a test
    can tell that nothing was called)."""
    app = starter_project / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + _MARK_CALLS, encoding="utf-8")
    return starter_project


PROBE_SYSTEM = '''\
"""A system under test that does what each case's input says, and logs every call it gets."""

import asyncio
import os
import time
from pathlib import Path

from oloproof import AgentStep, AgentTrajectory, current_case, system

CALLS = Path(__file__).with_name("calls.log")


def _log(case_id: str) -> None:
    fd = os.open(CALLS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{case_id} {time.time():.6f}\\n".encode())
    finally:
        os.close(fd)


def _answer(case_input: dict):
    case = current_case()
    behave = case_input.get("behave", "ok")
    if behave == "raise":
        raise RuntimeError("the order service is down")
    if behave == "non_object":
        return ["not", "an", "object"]
    if behave == "gap":
        steps = [AgentStep(index=1, kind="message"), AgentStep(index=3, kind="final")]
    elif behave == "partly_named":
        steps = [AgentStep(index=1, kind="message", agent="triage"),
                 AgentStep(index=2, kind="message", agent="billing"),
                 AgentStep(index=3, kind="final")]
    else:
        steps = [AgentStep(index=1, kind="message", arguments={"text": "hello"}),
                 AgentStep(index=2, kind="tool_call", tool_name="lookup",
                           arguments={"id": case.case_id}),
                 AgentStep(index=3, kind="tool_result", tool_name="lookup", result={"ok": True}),
                 AgentStep(index=4, kind="final")]
    case.agent_trajectory(AgentTrajectory(steps=tuple(steps), terminal_status="success"))
    return {"answer": case_input.get("answer", "yes")}


def _wait_for(gate):
    """Wait until the file `gate` (beside this module) exists, at most a minute: a test holds
    the run at a point of its choosing, whatever the machine's load."""
    deadline = time.monotonic() + 60
    while gate and not CALLS.with_name(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


@system(name="probe", records=("agent_trajectory/v1",))
def run(case_input: dict):
    _log(current_case().case_id)
    time.sleep(case_input.get("sleep", 0))
    _wait_for(case_input.get("wait_for"))
    return _answer(case_input)


@system(name="probe", records=("agent_trajectory/v1",))
async def run_async(case_input: dict):
    _log(current_case().case_id)
    await asyncio.sleep(case_input.get("sleep", 0))
    return _answer(case_input)
'''


class Probe:
    """A project around PROBE_SYSTEM: cases, both YAML files, and a count of system calls."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        (root / "app.py").write_text(PROBE_SYSTEM, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1,
            "project": "probe",
            "dataset": "data/cases.jsonl",
            "system": {"name": "probe", "version": "v1", "callable": "app:run",
                       "records": ["agent_trajectory/v1"], "concurrency": 4, "timeout_s": 10},
            "evaluators": [
                {"type": "exact_match", "criterion": "answer_correct", "field": "answer",
                 "expected_field": "answer"},
                {"type": "agent_tool_called", "tool_name": "lookup"},
            ],
            "metrics": [{"id": "steps_p50", "type": "quantile", "source": "agent_steps",
                         "quantile": 0.5}],
        }
        self.policy: dict[str, Any] = {
            "version": 1,
            "rules": [{"id": "answers", "metric": "answer_correct", "min": 0.5}],
        }
        self.write_suite()
        self.write_policy()

    @property
    def path(self) -> Path:
        return self.root

    def write_suite(self) -> None:
        text = yaml.safe_dump(self.suite, sort_keys=False)
        (self.root / "oloproof.yaml").write_text(text, encoding="utf-8")

    def write_policy(
        self, name: str = "release.yaml", policy: dict[str, Any] | None = None
    ) -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(policy or self.policy, sort_keys=False), encoding="utf-8")
        return path

    def set_system(self, **fields: Any) -> None:
        self.suite["system"].update(fields)
        self.write_suite()

    def write_cases(self, cases: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(c) + "\n" for c in cases)
        (self.root / "data" / "cases.jsonl").write_text(text, encoding="utf-8")

    def calls(self) -> list[str]:
        """The case ids the system was called with, in call order."""
        return [line.split()[0] for line in self._log_lines()]

    def call_times(self) -> list[float]:
        """When each call began (time.time()), in call order."""
        return [float(line.split()[1]) for line in self._log_lines()]

    def _log_lines(self) -> list[str]:
        log = self.root / "calls.log"
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        return [line for line in text.splitlines() if line.count(" ") == 1]

    def forget_calls(self) -> None:
        (self.root / "calls.log").unlink(missing_ok=True)

    @property
    def store(self) -> Path:
        return self.root / ".oloproof" / "store.sqlite"

    def held_cases(self, n: int, held_from: int, **input_fields: Any) -> list[dict[str, Any]]:
        """`plain_cases(n)` whose calls from case number `held_from` on wait until
        `release()` (the sync system's calls): a run of them cannot end before that."""
        cases = self.plain_cases(n, **input_fields)
        for case in cases[held_from - 1:]:
            case["input"]["wait_for"] = "release"
        return cases

    def release(self) -> None:
        """Let the calls of `held_cases` go on."""
        (self.root / "release").touch()

    @staticmethod
    def plain_cases(n: int, **input_fields: Any) -> list[dict[str, Any]]:
        """`n` well-behaved cases `c001`, `c002`, ... (distinct inputs) the probe answers right."""
        return [{"id": f"c{i:03d}", "input": {"question": i, "answer": "yes", **input_fields},
                 "expected": {"answer": "yes"}} for i in range(1, n + 1)]


@pytest.fixture(scope="session")
def new_probe(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Probe]:
    """`new_probe()` → a new probe project (no cases yet) in a fresh directory."""
    return lambda: Probe(tmp_path_factory.mktemp("probe"))


@pytest.fixture
def probe(new_probe: Callable[[], Probe]) -> Probe:
    """A probe project with ten well-behaved cases."""
    project = new_probe()
    project.write_cases(Probe.plain_cases(10))
    return project


# ---- Ray ----------------------------------------------------------------------------------------

@pytest.fixture
def local_ray() -> Any:
    """The local Ray instance (`num_cpus=2`) the Ray tests share; skips where Ray is absent.

    Starting Ray costs several seconds, so the Ray tests share one: a run with `executor: ray`
    in this process finds Ray initialised and uses it, leaving it running. It is started by
    the first test that asks for it and stopped once the next test is not one of RAY_TESTS
    (`pytest_runtest_teardown` below): under `make test` they all run one after another on one
    worker, so once, and its processes (about 7% of a core while idle) do not run on through
    the rest of that worker's tests. A test of a run that starts and stops an instance of its
    own runs the command line in a process of its own.
    """
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level="WARNING")
    return ray


# ---- a browser ---------------------------------------------------------------------------------

@pytest.fixture
def browser() -> Any:
    """The headless Chromium (a Playwright `Browser`) the browser tests share; skips where
    /usr/bin/chromium or Playwright is missing.

    Launching one costs about 2 s of CPU, so it is launched by the first test that asks for it
    and closed, Playwright stopped with it, once the next test is not one of BROWSER_TESTS
    (`pytest_runtest_teardown` below), as `local_ray` is: under `make test` they all run one
    after another on one worker, so once. While it is open, Playwright's event loop counts as
    running on the test's thread: a browser test runs a project with
    `shared_browser.run_beside_the_browser`, and the tests after them find no loop left.
    """
    return shared_browser.shared()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Stops the shared Ray instance (`local_ray`) after the last of a run of Ray tests, and
    closes the shared browser (`browser`) after the last of a run of browser tests -- after the
    test's fixtures are torn down, so a module's pages close before their browser."""
    following = nextitem.nodeid if nextitem is not None else ""
    if not _runs_with_ray(following):
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()
    try:
        return (yield)
    finally:
        if not _opens_a_browser(following):
            shared_browser.close()


# ---- running on two workers (pytest-xdist) ------------------------------------------------------

#: The tests that start Ray (they use `local_ray`, or are marked `ray`): a test file, or one test
#: of a file. Under `make test` (`pytest -n 3`, scheduled by `_group` below) they all run
#: on one worker, one after another: one local Ray instance for them all, and never two Ray
#: instances or a cluster starting beside another. A test that starts Ray elsewhere is refused
#: at collection until it is named here.
RAY_TESTS = (
    "tests/scale/test_ray.py",
    "tests/scale/test_ray_cluster.py",
    "tests/scale/test_same_figures.py",
    "tests/failures/test_retries.py::test_retries_happen_where_the_case_runs_on_ray",
    "tests/failures/test_system_exit.py::test_on_ray_an_exiting_system_errors_its_case",
    "tests/judges/test_judge_executors.py::"
    "test_a_model_judge_judges_on_the_workers_as_on_local[ray]",
    "tests/judges/test_judge_executors.py::"
    "test_the_judge_is_called_in_the_process_the_case_ran_in[ray]",
    "tests/test_docs_output.py::test_scaling_shows_what_the_executors_print",
    "tests/conversations/test_simulator_executors.py::"
    "test_a_callable_simulator_plays_on_the_workers_as_on_local[ray]",
)


#: The test files that open pages in the shared browser (the `browser` fixture). Under `make test`
#: they all run on one worker, one after another (`_group`), so one Chromium serves them all;
#: a test that asks for `browser` elsewhere is refused at collection until its file is named here.
BROWSER_TESTS = (
    "tests/compare/test_html_compare.py",
    "tests/report/test_gate_baseline_in_reports.py",
    "tests/report/test_html.py",
    "tests/report/test_html_conversations.py",
    "tests/report/test_html_judges.py",
    "tests/report/test_html_reading.py",
    "tests/report/test_html_trials.py",
    "tests/view/test_view_browser.py",
)


#: The test files that read the session's Inspect logs (`harnesses/inspect_fixture.py`) with
#: Inspect's own log API: under `make test` they run on one worker, one after another
#: (`_group`), so that worker imports Inspect (2 s of CPU) once for them all, and makes the
#: logs it reads rather than wait for another worker to make them.
INSPECT_TESTS = (
    "tests/harnesses/test_eee.py",
    "tests/harnesses/test_import_command.py",
    "tests/harnesses/test_inspect_logs.py",
)


def _named(nodeid: str, names: tuple[str, ...]) -> bool:
    return any(nodeid == name or nodeid.startswith((name + "::", name + "["))
               for name in names)


def _runs_with_ray(nodeid: str) -> bool:
    return _named(nodeid, RAY_TESTS)


def _opens_a_browser(nodeid: str) -> bool:
    return _named(nodeid, BROWSER_TESTS)


def _group(nodeid: str) -> str:
    """The unit a worker runs whole: "ray" for the tests that start Ray, "browser" for the
    files that open pages, "inspect" for those that read the Inspect logs, else the test's
    file (so that a module-scoped fixture -- an example's runs, a server -- is made once)."""
    if _runs_with_ray(nodeid):
        return "ray"
    if _opens_a_browser(nodeid):
        return "browser"
    return "inspect" if _named(nodeid, INSPECT_TESTS) else nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        uses_ray = "local_ray" in fixtures or item.get_closest_marker("ray") is not None
        if uses_ray and not _runs_with_ray(item.nodeid):
            raise pytest.UsageError(
                f"{item.nodeid} starts Ray (it uses local_ray or is marked ray) but is not "
                "in RAY_TESTS in tests/conftest.py: add it there, so that the Ray tests run "
                "on one worker under `make test`")
        if "browser" in fixtures and not _opens_a_browser(item.nodeid):
            raise pytest.UsageError(
                f"{item.nodeid} opens pages in the shared browser but its file is not in "
                "BROWSER_TESTS in tests/conftest.py: add it there, so that the browser tests "
                "run on one worker, one after another, under `make test`")


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # pytest-xdist's hook: `make test` runs it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`pytest -n N` sends each worker whole groups (`_group`), the Ray tests first and the
    browser tests next: they are the longest groups, and starting one last would leave the
    other workers idle meanwhile.
    (xdist's own `loadgroup` would do the grouping, but with pytest 9.2 its marks no longer
    reach the scheduler: it renames node ids through an attribute pytest stopped reading.)"""
    if config.getvalue("dist") != "load":
        return None  # another --dist asked for explicitly
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for longest in ("browser", "ray"):  # (so "ray" first, then "browser")
                if longest in self.workqueue:
                    self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return ByGroup(config, log)


#: Under xdist, the file whose lock holds back every worker's collection but the first's
#: (`pytest_collection` below), named to the workers through their environment.
_FIRST_COLLECTION = "OLOPROOF_TEST_FIRST_COLLECTION"
_held_gate: list[IO[bytes]] = []


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, in the controller, before workers start
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    """One worker collects first; the others wait for it and import what it compiled.

    Collecting imports every test module and what it imports: on a fresh clone nothing is
    compiled yet, not the tests' rewritten asserts, the engine nor the installed libraries, and
    workers that collect side by side each compile all of it. With the first worker (gw0)
    collecting alone, the others find the bytecode written (docs/architecture.md#tests)."""
    # held from this hook to another, so not in a `with`; removed when closed
    gate = tempfile.NamedTemporaryFile(prefix="oloproof-collecting-")  # noqa: SIM115
    fcntl.flock(gate, fcntl.LOCK_EX)
    _held_gate.append(gate)
    os.environ[_FIRST_COLLECTION] = gate.name


def _let_workers_collect() -> None:
    os.environ.pop(_FIRST_COLLECTION, None)
    while _held_gate:
        _held_gate.pop().close()  # unlocks and removes the file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Any) -> None:
    _let_workers_collect()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    _let_workers_collect()  # (the first worker ended without collecting)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _let_workers_collect()
    # The process ends next. Python's teardown collects garbage several times over every
    # object left, 200,000 after collecting the suite and more after running it: frozen, they
    # are left to the process's end instead, as the fork server leaves its commands'. (Exit
    # handlers still run; only what sits in a reference cycle is not finalized.)
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """A worker but the first waits until the first has collected (`pytest_xdist_setupnodes`);
    the controller, which collects nothing, and the first go on."""
    gate = os.environ.pop(_FIRST_COLLECTION, None)  # not for the processes the tests start
    if gate is not None and os.environ.get("PYTEST_XDIST_WORKER") not in (None, "gw0"):
        try:
            with open(gate, "rb") as lock:  # the lock goes when the file closes
                deadline = time.monotonic() + 300  # then collect anyway, never hang the run
                while time.monotonic() < deadline:
                    try:
                        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        time.sleep(0.05)
        except FileNotFoundError:
            pass  # the first worker has collected
    return (yield)
