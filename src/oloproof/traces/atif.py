"""ATIF, Harbor's Agent Trajectory Interchange Format (v1.0–v1.8), read and written
(docs/traces.md#atif-harbors-trajectories): `from_atif`, `read_atif`, `to_atif`.

The models below follow the format's documented schema field by field (unknown fields are
refused, as Harbor's own models refuse them); Oloproof does not depend on Harbor, which needs a
newer Python. The files the tests read were made by Harbor's own code
(tests/data/harnesses/README.md).

Reading: an ATIF step is one turn of one source. A `user` step is a user message; a `system`
step is the agent's instructions (no step, as in every format) unless it carries an
observation; an `agent` step is the model's message (a `message` step when it says something),
then its `tool_calls` (`tool_call` steps), then its observation's results — a result naming its
call by `source_call_id` a `tool_result`, one naming no call an `observation`. The last agent
message after which nothing was called is the `final` step. Tokens and cost are the
trajectory's `final_metrics` where given, else the sum of the steps' `metrics`.

Writing (`to_atif`) is the same mapping backwards; what ATIF has no field for (the agent that
took a step, a hand-off's receiver, a `decision` step) goes in the step's `extra` under
`oloproof`, which `read_atif` reads back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oloproof.errors import TraceError
from oloproof.recording.trajectory import AgentStep, AgentTrajectory
from oloproof.traces.documents import checked_document
from oloproof.traces.reading import (
    Call,
    TraceReading,
    TraceUsage,
    TrajectoryBuilder,
    jsonable,
    maybe_json,
    text_of,
    warn_if_skipped,
)

#: The versions of the format this module reads; it writes the last.
AtifVersion = Literal["ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
                      "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8"]
ATIF_VERSION: AtifVersion = "ATIF-v1.8"
#: The key under a step's `extra` holding what ATIF has no field for.
EXTRA_KEY = "oloproof"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifMediaSource(_Strict):
    """Where an image or a piece of audio is (a file path or a URL)."""

    media_type: str
    path: str
    duration_sec: float | None = Field(default=None, ge=0)


class AtifContentPart(_Strict):
    """One part of a multimodal message or result: text, or an image or audio by reference."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: AtifMediaSource | None = None

    @model_validator(mode="after")
    def _fields_of_type(self) -> AtifContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise ValueError("a text part has `text` and no `source`")
        if self.type != "text" and (self.source is None or self.text is not None):
            raise ValueError(f"an {self.type} part has a `source` and no `text`")
        return self


class AtifToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class AtifSubagentRef(_Strict):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class AtifObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | list[AtifContentPart] | None = None
    subagent_trajectory_ref: list[AtifSubagentRef] | None = None
    extra: dict[str, Any] | None = None


class AtifObservation(_Strict):
    results: list[AtifObservationResult]


class AtifMetrics(_Strict):
    """One step's model usage: `prompt_tokens` include the cached ones."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class AtifAgent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class AtifStep(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[AtifContentPart]
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _documented_rules(self) -> AtifStep:
        if self.timestamp is not None:
            try:
                datetime.fromisoformat(self.timestamp.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"timestamp is not ISO 8601: {exc}") from None
        if self.source != "agent":
            present = [name for name in _AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(f"{', '.join(present)} only on an agent step, not on a "
                                 f"{self.source} step")
        if self.source == "agent" and self.llm_call_count == 0 and (
                self.metrics is not None or self.reasoning_content is not None):
            raise ValueError("an agent step with llm_call_count 0 has no metrics or reasoning")
        if self.observation is not None:
            ids = {call.tool_call_id for call in self.tool_calls or ()}
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in ids:
                    raise ValueError(f"an observation result answers call "
                                     f"{result.source_call_id!r}, which this step did not make")
        return self


class AtifTrajectory(_Strict):
    """One ATIF document: an agent's trajectory, its steps numbered from 1."""

    schema_version: AtifVersion = ATIF_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[AtifTrajectory] | None = None

    @model_validator(mode="after")
    def _numbered(self) -> AtifTrajectory:
        for position, step in enumerate(self.steps, 1):
            if step.step_id != position:
                raise ValueError(f"steps[{position - 1}].step_id is {step.step_id}; step ids "
                                 f"run 1, 2, 3, ...")
        seen: set[str] = set()
        for sub in self.subagent_trajectories or ():
            if sub.trajectory_id is None or sub.trajectory_id in seen:
                raise ValueError("each embedded subagent trajectory has its own trajectory_id")
            seen.add(sub.trajectory_id)
        return self


# --- reading ------------------------------------------------------------------------------


def load_atif(source: AtifTrajectory | Mapping[str, Any] | str | Path) -> AtifTrajectory:
    """An ATIF document from a model, a mapping or a file, checked against the schema.

    Raises:
        TraceError: naming the file and what is wrong, when it is not ATIF v1.x.
    """
    if isinstance(source, AtifTrajectory):
        return source
    return checked_document(source, AtifTrajectory, "an ATIF v1.x trajectory")


def read_atif(source: AtifTrajectory | Mapping[str, Any] | str | Path) -> TraceReading:
    """Read an ATIF trajectory into an `AgentTrajectory`, with its usage and what was skipped.

    Args:
        source: an ATIF document — a file's path, its parsed JSON, or an `AtifTrajectory`.

    Returns:
        A TraceReading: `.trajectory`, `.usage` (tokens and cost), `.skipped` (embedded
        subagent trajectories and their references, not followed), `.ignored` (instructions,
        reasoning, steps copied from an earlier trajectory's context).

    Raises:
        TraceError: the document is not ATIF v1.x.
    """
    document = load_atif(source)
    builder = TrajectoryBuilder("atif")
    for step in document.steps:
        if step.is_copied_context:
            builder.ignored["copied_context"] += 1
            continue
        _read_step(builder, step)
    if document.subagent_trajectories:
        builder.skipped["subagent_trajectory"] += len(document.subagent_trajectories)
    if document.continued_trajectory_ref:
        builder.skipped["continued_trajectory"] += 1
    return builder.finish(usage=_usage(document), trace_id=document.session_id)


def from_atif(source: AtifTrajectory | Mapping[str, Any] | str | Path) -> AgentTrajectory:
    """The `AgentTrajectory` of an ATIF trajectory (docs/traces.md#atif-harbors-trajectories).

    Warns (`TraceWarning`) about what it could not follow (an embedded subagent's trajectory);
    `read_atif` returns the same trajectory with that counted, and the usage.
    """
    reading = read_atif(source)
    warn_if_skipped(reading, "from_atif")
    return reading.trajectory


def _content(content: str | list[AtifContentPart] | None) -> Any:
    if content is None or isinstance(content, str):
        return content
    return text_of([part.model_dump(exclude_none=True) for part in content])


def _read_step(builder: TrajectoryBuilder, step: AtifStep) -> None:
    ours = (step.extra or {}).get(EXTRA_KEY) or {}
    agent = ours.get("agent")
    message = _content(step.message)
    if step.source == "user":
        builder.message("user", message, agent=agent)
    elif step.source == "system":
        if step.observation is None:
            builder.message("system", message)  # instructions: counted, no step
    else:
        kind = ours.get("kind")
        if step.reasoning_content:
            builder.ignored["reasoning"] += 1
        if kind in ("decision", "handoff"):
            builder.add(kind, agent=agent, to_agent=ours.get("to_agent"),
                        arguments=ours.get("arguments"))
        elif message not in ("", None, []) or not step.tool_calls:
            builder.message("assistant", message, agent=agent)
    calls: dict[str, Call] = {}
    for tool_call in step.tool_calls or ():
        calls[tool_call.tool_call_id] = builder.call(
            tool_call.function_name, tool_call.arguments, call_id=tool_call.tool_call_id,
            agent=agent)
    for result in step.observation.results if step.observation else ():
        if result.subagent_trajectory_ref:
            builder.skipped["subagent_trajectory_ref"] += len(result.subagent_trajectory_ref)
        value = maybe_json(_content(result.content))
        call = calls.get(result.source_call_id or "")
        if call is not None and not call.answered:
            builder.result(call, value, agent=agent)
            continue
        tool_name = ((result.extra or {}).get(EXTRA_KEY) or {}).get("tool_name")
        if tool_name:  # a result whose call is in another step (written by to_atif)
            builder.add("tool_result", agent=agent, tool_name=tool_name, result=value)
        else:
            builder.add("observation", agent=agent, result=value)


def _usage(document: AtifTrajectory) -> TraceUsage | None:
    final = document.final_metrics
    if final is not None and (final.total_prompt_tokens is not None
                              or final.total_completion_tokens is not None
                              or final.total_cost_usd is not None):
        return TraceUsage(final.total_prompt_tokens, final.total_completion_tokens,
                          final.total_cost_usd)
    totals: list[int | float | None] = [None, None, None]
    for step in document.steps:
        if step.metrics is None or step.is_copied_context:
            continue
        values = (step.metrics.prompt_tokens, step.metrics.completion_tokens,
                  step.metrics.cost_usd)
        for i, value in enumerate(values):
            if value is not None:
                totals[i] = (totals[i] or 0) + value
    if totals == [None, None, None]:
        return None
    prompt, completion, cost = totals
    return TraceUsage(None if prompt is None else int(prompt),
                      None if completion is None else int(completion),
                      None if cost is None else float(cost))


# --- writing ------------------------------------------------------------------------------


def to_atif(trajectory: AgentTrajectory, *, agent_name: str, agent_version: str,
            model_name: str | None = None, usage: Mapping[str, Any] | None = None,
            session_id: str | None = None) -> dict[str, Any]:
    """An `AgentTrajectory` as an ATIF document (the latest version this module knows), ready
    for `json.dumps`: what `oloproof export atif` writes.

    Args:
        trajectory: the trajectory to write.
        agent_name, agent_version: the agent (the system's name and version).
        model_name: the model, if known.
        usage: a `usage/v1` payload (`input_tokens`, `output_tokens`, `cost`): the
            trajectory's `final_metrics`.
        session_id: the run this trajectory belongs to.

    Raises:
        TraceError: the trajectory has no step (an ATIF trajectory has at least one).
    """
    if not trajectory.steps:
        raise TraceError("an ATIF trajectory has at least one step, and this one has none")
    writer = _Writer()
    for step in trajectory.steps:
        writer.add(step)
    document: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "agent": {"name": agent_name, "version": agent_version},
        "steps": writer.steps,
    }
    if session_id is not None:
        document["session_id"] = session_id
    if model_name is not None:
        document["agent"]["model_name"] = model_name
    final: dict[str, Any] = {"total_steps": len(writer.steps)}
    if usage:
        for ours, theirs in (("input_tokens", "total_prompt_tokens"),
                             ("output_tokens", "total_completion_tokens"),
                             ("cost", "total_cost_usd")):
            if usage.get(ours) is not None:
                final[theirs] = usage[ours]
    document["final_metrics"] = final
    AtifTrajectory.model_validate(document)  # what we write is what we read
    return document


class _Writer:
    """Groups steps into ATIF turns: an agent turn holds a message, the calls made after it
    and their results; a call after a result starts a new turn."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self._turn: dict[str, Any] | None = None  # the open agent turn
        self._open: list[tuple[dict[str, Any], str, str]] = []  # (turn, call id, tool name)
        self._calls = 0

    def _new(self, source: str, message: Any, step: AgentStep,
             ours: dict[str, Any] | None = None) -> dict[str, Any]:
        turn: dict[str, Any] = {"step_id": len(self.steps) + 1, "source": source,
                                "message": _text(message)}
        extra = dict(ours or {})
        if step.agent is not None:
            extra["agent"] = step.agent
        if extra:
            turn["extra"] = {EXTRA_KEY: extra}
        self.steps.append(turn)
        return turn

    def add(self, step: AgentStep) -> None:
        arguments = step.arguments or {}
        if step.kind in ("message", "final"):
            role = arguments.get("role")
            content = arguments.get("content")
            if role == "assistant" or step.kind == "final":
                self._turn = self._new("agent", content, step)
            else:
                self._turn = None
                ours = {} if role == "user" else {"role": role}
                self._new("user", content, step, ours)
        elif step.kind == "tool_call":
            turn = self._turn
            if turn is None or "observation" in turn or turn.get("extra", {}).get(
                    EXTRA_KEY, {}).get("agent") != step.agent:
                turn = self._turn = self._new("agent", "", step)
            self._calls += 1
            call_id = f"call_{self._calls}"
            turn.setdefault("tool_calls", []).append(
                {"tool_call_id": call_id, "function_name": step.tool_name or "",
                 "arguments": jsonable(step.arguments or {})})
            self._open.append((turn, call_id, step.tool_name or ""))
        elif step.kind == "tool_result":
            match = next((i for i, (_, _, name) in enumerate(self._open)
                          if name == step.tool_name), None)
            result: dict[str, Any] = {"content": _text(step.result)}
            if match is not None:
                turn, call_id, _ = self._open.pop(match)
                result["source_call_id"] = call_id
            else:
                turn = self._turn or self._new("agent", "", step)
                result["extra"] = {EXTRA_KEY: {"tool_name": step.tool_name}}
            turn.setdefault("observation", {"results": []})["results"].append(result)
        elif step.kind == "observation":
            turn = self._new("system", "", step)
            turn["observation"] = {"results": [{"content": _text(step.result)}]}
            self._turn = None
        else:  # decision, handoff
            self._turn = self._new("agent", "", step, {
                "kind": step.kind, "to_agent": step.to_agent, "arguments": step.arguments})


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(jsonable(value), ensure_ascii=False)
