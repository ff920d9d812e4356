"""`SuiteToRun`: what the engine needs of a loaded suite (nothing to do with `oloproof plan`).

`oloproof.project.load_suite` composes a suite from its files, its system and its evaluators;
the engine sits below that composition, so it names only the parts it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from oloproof.evaluators.base import Evaluator
from oloproof.execution.retries import RetryPolicy
from oloproof.execution.target import SystemTarget
from oloproof.suite.case import Case
from oloproof.suite.config import ExecutionConfig, SuiteFile, TransformConfig

if TYPE_CHECKING:  # (a worker elsewhere: imported by the executors that start one)
    from oloproof.execution.worker_host import WorkerParts


class SuiteToRun(Protocol):
    """A suite checked whole and ready to run (`oloproof.project.LoadedSuite` is one)."""

    @property
    def config(self) -> SuiteFile:
        """The suite file: the system, slices, metrics."""

    @property
    def path(self) -> Path:
        """The suite file (a worker in another process loads the system from it)."""

    @property
    def project_dir(self) -> Path:
        """The project folder (what a Ray cluster is sent)."""

    @property
    def target(self) -> SystemTarget:
        """The imported system and what it declares."""

    @property
    def targets(self) -> list[SystemTarget]:
        """One system per local worker (`executor: local`)."""

    @property
    def execution(self) -> ExecutionConfig:
        """Where the workers run and how many (docs/scaling.md#configuration)."""

    @property
    def evaluators(self) -> list[Evaluator]:
        """One evaluator per criterion, in the suite's order."""

    @property
    def transforms(self) -> list[tuple[TransformConfig, str]]:
        """The metamorphic transforms with their digests."""

    @property
    def retries(self) -> RetryPolicy | None:
        """`system.retries:`, its exception classes imported (None: nothing is retried)."""

    @property
    def worker_loader(self) -> Callable[[str, str | None], WorkerParts]:
        """A module-level function a worker elsewhere calls with the suite file's name and the
        project folder, to load its own system and the evaluators."""

    @property
    def system_key(self) -> str:
        """The system's part of every execution key (`execution.keys.system_key`)."""

    @property
    def evaluator_keys(self) -> list[str]:
        """Each evaluator's key, in the suite's order (`execution.keys.evaluator_keys`)."""

    @property
    def trials(self) -> int:
        """How many times each case runs (docs/reliability.md)."""

    @property
    def case_count(self) -> int:
        """How many cases the run has, metamorphic copies included."""

    def iter_units(self) -> Iterator[list[Case]]:
        """Each source case followed by its metamorphic copies, in dataset order."""
