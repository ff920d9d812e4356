"""What a system records while it runs: trajectories, state, the recorder, the protocols."""

from oloproof.recording.declaration import SystemDeclaration, declaration_of, system
from oloproof.recording.protocols import (
    FAULT_RESULTS,
    STATE_KIND,
    Replayable,
    ReplayChange,
    Stateful,
)
from oloproof.recording.recorder import CaseRecorder, current_case
from oloproof.recording.trajectory import (
    TRAJECTORY_KIND,
    AgentCheckpoint,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
    trajectory_problems,
)
from oloproof.recording.turns import SimulatorRequest, SimulatorTurn
from oloproof.recording.users import (
    CONVERSATION_KIND,
    ScriptedUser,
    SimulatedUser,
    TurnAnswer,
    TurnSource,
    User,
)

__all__ = [
    "CONVERSATION_KIND",
    "FAULT_RESULTS",
    "STATE_KIND",
    "TRAJECTORY_KIND",
    "AgentCheckpoint",
    "AgentConstraintCheck",
    "AgentStep",
    "AgentTrajectory",
    "CaseRecorder",
    "ReplayChange",
    "Replayable",
    "ScriptedUser",
    "SimulatedUser",
    "SimulatorRequest",
    "SimulatorTurn",
    "Stateful",
    "SystemDeclaration",
    "TurnAnswer",
    "TurnSource",
    "User",
    "current_case",
    "declaration_of",
    "system",
    "trajectory_problems",
]
