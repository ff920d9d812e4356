"""The live progress bar of a run (docs/cli.md#oloproof-run): only on a terminal, never when `CI` is
set."""

from __future__ import annotations

import os
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from oloproof.execution.intake import Progress as RunProgress


def wants_live_progress(console: Console) -> bool:
    return console.is_terminal and not os.environ.get("CI")


class LiveProgress:
    """A Rich progress bar fed by the engine's counts (refreshed at most 10 times a second)."""

    def __init__(self, console: Console) -> None:
        self._bar = Progress(
            TextColumn("[bold]running"),
            TextColumn("{task.fields[run]}", markup=False),  # (a variant: the suite's text)
            BarColumn(),
            TextColumn("{task.completed}/{task.total} cases"),
            TextColumn("· {task.fields[errors]} errors · {task.fields[hits]} cached"),
            TextColumn("· {task.fields[rate]}/s"),
            TextColumn("· {task.fields[workers]} workers busy"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: Any = None
        self._start = time.monotonic()
        self._last = 0.0
        self._counts: RunProgress | None = None  # (each run of several has its own)

    def __enter__(self) -> LiveProgress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def update(self, progress: RunProgress) -> None:
        now = time.monotonic()
        if self._task is None:
            self._task = self._bar.add_task("run", total=progress.total, errors=0, hits=0,
                                            rate="0", workers=f"0/{progress.workers}",
                                            run=progress.run)
        if progress is not self._counts:  # the next run of several: counted from its start
            if self._counts is not None:
                self._start = now
                self._bar.reset(self._task, total=progress.total, errors=0, hits=0, rate="0",
                                workers=f"0/{progress.workers}", run=progress.run)
            self._counts = progress
        if now - self._last < 0.1 and progress.done < progress.total:
            return
        self._last = now
        elapsed = max(now - self._start, 1e-6)
        self._bar.update(self._task, completed=progress.done, errors=progress.errors,
                         hits=progress.cache_hits, rate=f"{progress.done / elapsed:.0f}",
                         workers=f"{progress.busy}/{progress.workers}")
