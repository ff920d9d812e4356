"""Oloproof: evaluate tool-using AI agents from what they recorded, and gate a release.

Everything a user imports comes from here; subpackages are engine internals.
"""

from oloproof.api import RunResult, load_run, redecide, run
from oloproof.errors import ConfigError, OloproofError, RecordingError, StoreError
from oloproof.evaluators.custom import evaluator
from oloproof.recording import (
    AgentCheckpoint,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
    Replayable,
    ReplayChange,
    Stateful,
    current_case,
    system,
)

__version__ = "0.1.0"

__all__ = [
    "AgentCheckpoint",
    "AgentConstraintCheck",
    "AgentStep",
    "AgentTrajectory",
    "ConfigError",
    "OloproofError",
    "RecordingError",
    "ReplayChange",
    "Replayable",
    "RunResult",
    "Stateful",
    "StoreError",
    "current_case",
    "evaluator",
    "load_run",
    "redecide",
    "run",
    "system",
]
