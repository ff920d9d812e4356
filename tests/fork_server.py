"""The `oloproof` command as real processes, forked from one server that imported the engine once.

Starting Python and importing the engine (scipy, pydantic, rich) costs most of a second of CPU
per process, more than the hundreds of commands the tests run can afford. So a command is a
process *forked* from a small server (one per test process, started on first use) that
imported `oloproof.cli.main` and the engine once. The child is a fresh process with its own
working directory, environment, arguments, stdin/stdout/stderr and exit status, and runs
`oloproof.cli.main:main()` just as the `oloproof` script does, and exits as it would, but for
the interpreter's teardown (`end` in the program below).

The server listens on a Unix socket. A request is the command line, the working directory and
the environment (a `marshal`led dict after its length: the program below has no time to import
`json`), with three open files passed along (`SCM_RIGHTS`) that become the child's stdin,
stdout and stderr; the server answers with the child's pid, and with its exit status when it
ends, a line each. (A request of `ForkServer.preload(...)` instead names modules the server
imports, for every command it forks after.) Three clients use it:

- `ForkServer.run(...)`, what the `cli` fixture calls: the command's output goes to files and
  comes back as `CliResult(code, out, err)`;
- `ForkServer.program`, an executable `oloproof` to put first on PATH (the docs' shell
  sessions, the examples' runs): it passes its own stdin, stdout and stderr -- a pipe, a FIFO,
  whatever the shell gave it -- forwards Ctrl-C and SIGTERM to the command, and exits with the
  command's status (killing itself with the same signal if the command died of one), so a
  shell sees the `oloproof` command it expects;
- `ForkServer.python`, the same for `python SCRIPT ARGS...` and `python -c CODE ARGS...` (a
  test's own script, a docs page's `python desk.py`): run as `__main__` in a forked process,
  with what the server imported (what `preload` named too) already imported; any other
  command line runs the interpreter itself.

`OLOPROOF_TEST_SPAWN=1` makes every command a fresh interpreter instead: `python -m
oloproof.cli.main`, and for the `python` program the interpreter itself. Tests about signals or
a killed process start a fresh interpreter themselves (`spawn_oloproof`, `oloproof_argv`); a
test that only needs a command running beside it starts it through the `oloproof` program
(`forked_oloproof` in conftest.py).

`OLOPROOF_TEST_PROFILE=DIR` (off by default; for finding where the commands' CPU goes) makes
each forked command write `PID.txt` into DIR (an existing folder): its user and system CPU
seconds and minor page faults from its command's start to its exit, the CPU it took before
its command started, its children's CPU, and its command line; and `PID.prof`, its
`cProfile` statistics on a CPU-time clock (merge them with `pstats.Stats.add`); `cpu:DIR`
only `PID.txt`. (cProfile inflates code that makes many small calls: for sampled stacks,
run the tests under a sampling profiler that follows forked processes instead, e.g.
`py-spy record --subprocesses -- python -m pytest ...`.) The server writes `server-PID.txt`
when it stops: its user and system CPU seconds, its CPU seconds in `os.fork` and the number
of forks.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import NamedTuple


class CliResult(NamedTuple):
    code: int
    out: str
    err: str


def oloproof_argv(*args: str) -> list[str]:
    """The command line of `oloproof ARGS...` as a fresh interpreter."""
    return [sys.executable, "-m", "oloproof.cli.main", *args]


def cli_env(**overrides: str | None) -> dict[str, str]:
    """The environment of a CLI process: ours, with CI=1, no store override, UTF-8 output."""
    env = {k: v for k, v in os.environ.items() if k not in ("OLOPROOF_STORE", "CI")}
    env.update(CI="1", PYTHONIOENCODING="utf-8")
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


_SERVER = textwrap.dedent(
    r"""
    import atexit, gc, marshal, os, select, signal, socket, sys, threading, time
    import oloproof.cli.main
    # The command line imports the engine only when a command runs: import it once, here.
    import oloproof.api, oloproof.cli.scaffold, oloproof.report.case_panel
    import oloproof.report.case_view, oloproof.report.html, oloproof.report.progress
    import oloproof.report.terminal, oloproof.suite.pairs, rich.table
    import scipy.special  # the statistics import it on first use (never scipy.stats)
    import importlib
    # What a run imports on first use besides (half its forked process's CPU time), where it
    # still exists: a module renamed since only costs each child its import.
    for name in ("oloproof.evaluators.agent", "oloproof.evaluators.custom",
                 "oloproof.evaluators.faults", "oloproof.evaluators.imported",
                 "oloproof.evaluators.judge", "oloproof.evaluators.metamorphic",
                 "oloproof.evaluators.multi_agent", "oloproof.evaluators.output",
                 "oloproof.evaluators.state", "oloproof.evaluators.tool_matching",
                 "oloproof.comparison.stored", "oloproof.decisions.plan",
                 "oloproof.report.limits", "oloproof.report.case_list",
                 "oloproof.report.ci_files", "oloproof.report.junit", "oloproof.report.markdown",
                 "oloproof.analysis.expected_keys", "faulthandler"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # An evaluator type's settings build their pydantic schema when a command first uses the
    # type (`defer_build`): 1.4 builds a command, in every command. Build each once, here.
    try:
        from oloproof.evaluators.base import EvaluatorConfig
    except ImportError:
        pass
    else:
        configs = [EvaluatorConfig]
        while configs:
            config = configs.pop()
            configs.extend(config.__subclasses__())
            config.model_rebuild()

    # A judged rate's interval needs the critical value of its confidence level, which takes
    # 0.1-0.2 s of CPU to solve and is cached for the process only
    # (`stats.positive_part.critical_value`): solve it here, once, for the default level
    # (policy `confidence_level: 0.95`), as the first judged rate at that level would.
    try:
        from oloproof.stats.verdict_strata import judged_rate_interval
    except ImportError:
        pass
    else:
        judged_rate_interval([1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], 0.95)

    gc.freeze()  # children need not collect what they inherit (it makes their exit 4x faster)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    wake_r, wake_w = os.pipe()  # a byte arrives here when a child ends (SIGCHLD)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting = {}  # the pid of each running command -> the connection its status goes to


    def start(conn):
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
            more = conn.recv(1 << 16)
            if not more:
                raise EOFError("the request ended early")
            data += more
        request = marshal.loads(data[8:])
        if "preload" in request:  # ForkServer.preload: import these here, once
            for name in request["preload"]:
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass  # each command then meets the error itself
            gc.freeze()
            conn.sendall(b"0\n")
            conn.close()
            return
        before = time.process_time() if server_profile else 0.0
        pid = os.fork()
        if pid and server_profile:
            fork_cpu[0] += time.process_time() - before
            fork_cpu[1] += 1
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh Python
                for fd, source in zip((0, 1, 2), fds):
                    os.dup2(source, fd)
                for source in fds:
                    os.close(source)
                for other in (listener, conn, *waiting.values()):
                    other.close()
                os.close(wake_r)
                os.close(wake_w)
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                sys.argv = ["oloproof", *request["args"]]
            except BaseException as error:
                os.write(2, f"the fork server could not start the command: {error!r}\n".encode())
                os._exit(70)
            profile_dir = os.environ.get("OLOPROOF_TEST_PROFILE")
            if profile_dir:  # OLOPROOF_TEST_PROFILE: see the module's docstring
                _profile_start(profile_dir)
            try:
                if request.get("python"):
                    python(request["args"])
                else:
                    oloproof.cli.main.main()  # exits through SystemExit
            except SystemExit as done:
                end(done.code)
            end(0)
        for source in fds:
            os.close(source)
        conn.sendall(b"%d\n" % pid)
        waiting[pid] = conn


    def python(args):
        # `python SCRIPT ARGS...` or `python -c CODE ARGS...` (ForkServer.python): the script
        # as __main__, its folder (for -c, the working directory) first on sys.path; an
        # uncaught exception printed as Python prints it, exit 1.
        import runpy, traceback, types
        if args[0] == "-c":
            sys.argv, sys.path[0] = ["-c", *args[2:]], ""
        else:
            sys.argv, sys.path[0] = list(args), os.path.dirname(os.path.abspath(args[0]))
        try:
            if args[0] == "-c":
                main = types.ModuleType("__main__")
                sys.modules["__main__"] = main
                exec(compile(args[1], "<string>", "exec"), main.__dict__)
            else:
                runpy.run_path(args[0], run_name="__main__")
        except SystemExit:
            raise
        except BaseException:
            traceback.print_exc()
            end(1)


    def end(code, _exit=os._exit):
        # A command's exit as Python's, but for tearing the interpreter down: its exit
        # handlers run and its output is flushed, then the process ends (`os._exit`). The
        # teardown releases every module's objects one by one, and each release writes to
        # memory this server shares with the child, so the kernel copies the page first:
        # 0.085 s of CPU of every command (13,700 page faults), most of a small command's.
        # (Where it shares no pages, in a fresh `oloproof` process, skipping it gained
        # nothing measurable, and would lose what a system's own code left unflushed in a
        # file it never closed; so the command itself exits as Python does.) What Python's
        # exit does besides is left to it: while a thread that is not a daemon runs (Python
        # waits for it), for an exit code that is not a number (Python prints it), and when
        # the output cannot be flushed (Python reports it, exit 120).
        if not (code is None or isinstance(code, int)) or any(
                not thread.daemon for thread in threading.enumerate()
                if thread is not threading.main_thread()):
            raise SystemExit(code)
        atexit._run_exitfuncs()
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            raise SystemExit(code) from None
        if profiling:
            _profile_stop()
        _exit(0 if code is None else code)


    profiling = None  # [profiler, directory, minor faults and CPU times at the start]


    def _minflt():
        with open("/proc/self/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[7])


    def _profile_start(directory):
        global profiling
        profiler = None
        if not directory.startswith("cpu:"):
            import cProfile
            profiler = cProfile.Profile(time.process_time)  # CPU, not waiting
        directory = directory.removeprefix("cpu:")
        profiling = [profiler, directory, _minflt(), os.times()]
        if profiler:
            profiler.enable()


    def _profile_stop():
        profiler, directory, faults, times = profiling
        if profiler:
            profiler.disable()
        now = os.times()
        if profiler:
            profiler.dump_stats(os.path.join(directory, f"{os.getpid()}.prof"))
        with open(os.path.join(directory, f"{os.getpid()}.txt"), "w") as record:
            record.write(f"{now.user - times.user} {now.system - times.system} "
                         f"{_minflt() - faults} {times.user} {times.system} "
                         f"{now.children_user + now.children_system} "
                         f"{' '.join(sys.argv[1:])}\n")


    def reap():
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
                except OSError:
                    pass  # the client went away
                conn.close()


    server_profile = os.environ.get("OLOPROOF_TEST_PROFILE", "").split(":")[-1]
    fork_cpu = [0.0, 0]  # the server's CPU time in os.fork, and the forks
    print("ready", flush=True)
    while True:
        ready = select.select([0, listener, wake_r], [], [])[0]
        if 0 in ready and not os.read(0, 4096):
            if server_profile:
                with open(os.path.join(server_profile, f"server-{os.getpid()}.txt"), "w") as f:
                    t = os.times()
                    f.write(f"{t.user} {t.system} {fork_cpu[0]} {fork_cpu[1]}\n")
            break  # the tests' process closed our stdin: it is done
        if wake_r in ready:
            os.read(wake_r, 4096)
        if listener in ready:
            conn, _ = listener.accept()
            try:
                start(conn)
            except (OSError, ValueError, EOFError) as error:
                print(f"fork server: a bad request: {error!r}", file=sys.stderr, flush=True)
                conn.close()
        reap()
    """
)

_PROGRAM = '''\
#!{python} -IS
"""`{name}`, run by the tests' fork server ({module}). It imports only built-in modules:
Python's start and nothing else, a third of what `socket` and `json` cost."""
import _signal, _socket, array, marshal, os, sys

PYTHON = {is_python!r}  # `python SCRIPT|-c CODE ...` rather than `oloproof ...`
if PYTHON and (not sys.argv[1:] or sys.argv[1].startswith("-") and sys.argv[1:2] != ["-c"]
               or sys.argv[1:2] == ["-c"] and len(sys.argv) < 3):
    os.execv({python!r}, [{python!r}, *sys.argv[1:]])  # not a script: the interpreter itself
if os.environ.get("OLOPROOF_TEST_SPAWN"):
    os.execv({python!r}, [{python!r}, *([] if PYTHON else ["-m", "oloproof.cli.main"]),
                          *sys.argv[1:]])
fds = []
for fd in (0, 1, 2):
    try:
        os.fstat(fd)
    except OSError:  # not open: the command gets /dev/null there
        fd = os.open(os.devnull, os.O_RDWR)
    fds.append(fd)
conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
conn.connect({socket!r})
body = marshal.dumps({{"args": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
                      "python": PYTHON}})
request = len(body).to_bytes(8, "big") + body
sent = conn.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))])
if sent < len(request):
    conn.sendall(request[sent:])
unread = b""


def reply():
    global unread
    while b"\\n" not in unread:
        chunk = conn.recv(64)
        if not chunk:
            sys.exit("the tests' fork server went away before the command ended")
        unread += chunk
    line, unread = unread.split(b"\\n", 1)
    return int(line)


pid = reply()
for number in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
    _signal.signal(number, lambda number, _: os.kill(pid, number))
code = reply()
if code < 0:  # the command died of a signal: so does this process
    _signal.signal(-code, _signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


class ForkServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._home: Path | None = None

    @property
    def _socket(self) -> str:
        assert self._home is not None
        return str(self._home / "s")

    @property
    def program(self) -> Path:
        """The `oloproof` executable that runs its command through this server."""
        self.start()
        assert self._home is not None
        return self._home / "bin" / "oloproof"

    @property
    def python(self) -> Path:
        """A `python` executable beside `program` that runs `python SCRIPT ARGS...` or
        `python -c CODE ARGS...` in a process forked from this server (anything else: the
        interpreter itself)."""
        self.start()
        assert self._home is not None
        return self._home / "bin" / "python"

    def start(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            self._stop()
            # /tmp, not pytest's temp directory: a Unix socket's path must fit in 107 bytes.
            self._home = Path(tempfile.mkdtemp(prefix="olo-fork-", dir="/tmp"))
            process = subprocess.Popen(
                [sys.executable, "-c", _SERVER, self._socket], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, env=cli_env(), cwd=tempfile.gettempdir(),
            )
            self._process = process
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 300)
            if not ready or process.stdout.readline() != b"ready\n":
                raise RuntimeError("the CLI fork server did not start")
            (self._home / "bin").mkdir()
            for name in ("oloproof", "python"):
                program = self._home / "bin" / name
                program.write_text(_PROGRAM.format(
                    name=name, is_python=name == "python", python=sys.executable,
                    socket=self._socket, module=Path(__file__).name), encoding="utf-8")
                program.chmod(0o755)

    def preload(self, *modules: str) -> None:
        """Import `modules` in the server, once, for every command it forks from now on: for
        the tests whose commands each import a large library on first use (the Inspect log
        reader, 1.5 s of CPU a command), as the server imports the engine for them all."""
        self.start()
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(self._socket)
            body = marshal.dumps({"preload": list(modules)})
            conn.sendall(len(body).to_bytes(8, "big") + body)
            _reply(conn, [b""], time.time() + 300)

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> CliResult:
        """`oloproof ARGS` in `cwd` with `env`, stdin /dev/null, its output to files."""
        self.start()
        with tempfile.TemporaryDirectory() as scratch:
            out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
            request = _request(args, str(cwd), env)
            with open(os.devnull, "rb") as stdin, out.open("wb") as stdout, \
                    err.open("wb") as stderr, socket.socket(socket.AF_UNIX) as conn:
                conn.connect(self._socket)
                socket.send_fds(conn, [request], [stdin.fileno(), stdout.fileno(),
                                                  stderr.fileno()])
                unread = [b""]
                deadline = time.time() + timeout
                pid = _reply(conn, unread, deadline)
                try:
                    code = _reply(conn, unread, deadline)
                except TimeoutError:
                    # The command may end between the deadline and the kill: the server has
                    # then reaped it already (its code is the reply read next), and there is
                    # no process left to kill.
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    _reply(conn, unread, time.time() + 10)
                    raise AssertionError(
                        f"`oloproof {' '.join(args)}` did not finish within {timeout} s; "
                        "stderr:\n" + err.read_text(encoding="utf-8", errors="replace")
                    ) from None
            return CliResult(int(code), out.read_text(encoding="utf-8"),
                             err.read_text(encoding="utf-8"))

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def _request(args: list[str], cwd: str, env: dict[str, str]) -> bytes:
    body = marshal.dumps({"args": args, "cwd": cwd, "env": env})
    return len(body).to_bytes(8, "big") + body


def _reply(conn: socket.socket, unread: list[bytes], deadline: float) -> int:
    """The server's next reply line. Read from the socket itself, never through a buffered
    file: when a command ends at once, both its replies arrive together, and a buffered
    readline() takes both, so a select() for the second waited for the whole timeout
    (a quick command "did not finish within 60 s" when the test was slow to read)."""
    while b"\n" not in unread[0]:
        ready, _, _ = select.select([conn], [], [], max(0.0, deadline - time.time()))
        if not ready:
            raise TimeoutError
        chunk = conn.recv(65536)
        if not chunk:
            raise RuntimeError("the CLI fork server died")
        unread[0] += chunk
    line, unread[0] = unread[0].split(b"\n", 1)
    return int(line)


_SHARED = ForkServer()


def shared() -> ForkServer:
    """The fork server of this test process (each pytest-xdist worker has its own)."""
    return _SHARED
