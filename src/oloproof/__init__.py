"""Oloproof: evaluate tool-using AI agents from what they recorded, and gate a release.

Everything a user imports comes from here; subpackages are engine internals.

The public names are imported on first use (a module `__getattr__`), so that importing the
package — and starting the `oloproof` command — does not pay for pydantic, NumPy and SciPy
until something needs them. `from oloproof import run` works as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Every error a user can meet (the tree is drawn in errors.py); that module is imported anyway,
# so they cost nothing to import here.
from oloproof.errors import (
    ConfigError,
    OloproofError,
    RecordingError,
    RunStopped,
    StoreError,
    TraceError,
    UnstorableRecording,
    UsageError,
)
from oloproof.lazy_names import lazy_names

if TYPE_CHECKING:
    from oloproof.api import (
        RunResult,
        VariantRuns,
        board,
        case_view,
        case_views,
        compare,
        flaky_cases,
        list_cases,
        list_runs,
        load_case_trials,
        load_run,
        plan,
        redecide,
        rescore,
        run,
        run_async,
        sample_labels,
        tag,
        write_ci_reports,
    )
    from oloproof.evaluators.custom import evaluator
    from oloproof.evaluators.verdicts import JudgeRequest, JudgeVerdict
    from oloproof.recording import (
        AgentCheckpoint,
        AgentConstraintCheck,
        AgentStep,
        AgentTrajectory,
        Replayable,
        ReplayChange,
        ScriptedUser,
        SimulatedUser,
        SimulatorRequest,
        SimulatorTurn,
        Stateful,
        User,
        current_case,
        system,
    )

__version__ = "0.1.0"

# Each lazily imported public name, and the module that defines it.
_LAZY = {
    "RunResult": "oloproof.api",
    "VariantRuns": "oloproof.api",
    "board": "oloproof.api",
    "case_view": "oloproof.api",
    "case_views": "oloproof.api",
    "compare": "oloproof.comparison",
    "flaky_cases": "oloproof.api",
    "list_cases": "oloproof.api",
    "list_runs": "oloproof.api",
    "load_case_trials": "oloproof.api",
    "load_run": "oloproof.api",
    "plan": "oloproof.api",
    "redecide": "oloproof.api",
    "rescore": "oloproof.api",
    "run": "oloproof.api",
    "run_async": "oloproof.api",
    "sample_labels": "oloproof.api",
    "tag": "oloproof.api",
    "write_ci_reports": "oloproof.api",
    "evaluator": "oloproof.evaluators.custom",
    "JudgeRequest": "oloproof.evaluators.verdicts",
    "JudgeVerdict": "oloproof.evaluators.verdicts",
    "AgentCheckpoint": "oloproof.recording",
    "AgentConstraintCheck": "oloproof.recording",
    "AgentStep": "oloproof.recording",
    "AgentTrajectory": "oloproof.recording",
    "ScriptedUser": "oloproof.recording",
    "SimulatedUser": "oloproof.recording",
    "SimulatorRequest": "oloproof.recording",
    "SimulatorTurn": "oloproof.recording",
    "User": "oloproof.recording",
    "Replayable": "oloproof.recording",
    "ReplayChange": "oloproof.recording",
    "Stateful": "oloproof.recording",
    "current_case": "oloproof.recording",
    "system": "oloproof.recording",
}


__all__ = [
    "AgentCheckpoint",
    "AgentConstraintCheck",
    "AgentStep",
    "AgentTrajectory",
    "ConfigError",
    "JudgeRequest",
    "JudgeVerdict",
    "OloproofError",
    "RecordingError",
    "ReplayChange",
    "Replayable",
    "RunResult",
    "RunStopped",
    "ScriptedUser",
    "SimulatedUser",
    "SimulatorRequest",
    "SimulatorTurn",
    "Stateful",
    "StoreError",
    "TraceError",
    "UnstorableRecording",
    "UsageError",
    "User",
    "VariantRuns",
    "board",
    "case_view",
    "case_views",
    "compare",
    "current_case",
    "evaluator",
    "flaky_cases",
    "list_cases",
    "list_runs",
    "load_case_trials",
    "load_run",
    "plan",
    "redecide",
    "rescore",
    "run",
    "run_async",
    "sample_labels",
    "system",
    "tag",
    "write_ci_reports",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
