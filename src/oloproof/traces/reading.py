"""What reading a trace gives back, and the builder every adapter shares
(docs/traces.md#the-mapping-rules-for-every-format).

Each adapter turns one format into steps through a `TrajectoryBuilder`, which keeps what a
trajectory cannot hold itself: which call a result answers (by call id), which arguments were
not JSON, which calls never got a result, and what the adapter did not understand. `finish`
makes the `AgentTrajectory` and the `TraceReading` around it.

Two counters, never mixed: `skipped` is what the adapter did not understand (a span or message
it has no rule for — `from_*` warns when it is not empty), `ignored` is what it understood and
deliberately made no step of (a container span, a reasoning item, a plain HTTP span).
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from oloproof.errors import TraceError
from oloproof.recording.trajectory import (
    AgentStep,
    AgentTrajectory,
    StepKind,
    TerminalStatus,
    trajectory_problems,
)

NoteKind = Literal[
    "arguments_not_json",  # kept as {"_raw": text}
    "arguments_not_object",  # valid JSON but not an object: kept as {"_raw": text}
    "arguments_not_recorded",  # the trace has the call but not its arguments (content capture off)
    "result_not_recorded",  # the tool finished but its result was not captured
    "call_without_result",  # no result at all: the trajectory is marked truncated
    "agent_by_control",  # the step lies outside every agent's span/message: see docs/traces.md
    "content_not_recorded",  # the agent's answer, its text not captured (content capture off)
]

#: Roles whose messages are an agent's instructions, sent again with every model call: they
#: are configuration, not something that happened in the run, so no format makes them a step
#: (docs/traces.md#one-trajectory-whatever-the-integration).
INSTRUCTION_ROLES = frozenset({"system", "developer"})


class TraceWarning(UserWarning):
    """A `from_*` adapter met something it did not understand (see `TraceReading.skipped`)."""


@dataclass(frozen=True)
class StepNote:
    """A mark on one step of the trajectory: what the trace did not say plainly."""

    step: int
    kind: NoteKind
    detail: str = ""


@dataclass(frozen=True)
class TraceUsage:
    """Tokens and cost a trace records; None where it records nothing of that kind."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None

    def payload(self) -> dict[str, int | float]:
        """The `usage/v1` artifact payload (docs/traces.md#tokens-and-cost): the recorded fields
        only."""
        body: dict[str, int | float] = {}
        if self.input_tokens is not None:
            body["input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            body["output_tokens"] = self.output_tokens
        if self.cost is not None:
            body["cost"] = self.cost
        return body


@dataclass(frozen=True)
class TraceReading:
    """One trace read into a trajectory, with everything the trajectory cannot say itself.

    Attributes:
        trajectory: the `agent_trajectory/v1`, valid as if the system had recorded it.
        usage: tokens and cost the trace records, or None when it records none.
        skipped: what the adapter did not understand, counted by kind (e.g. `span:LLM?`).
        ignored: what it understood and made no step of, counted by kind.
        notes: marks on single steps (raw arguments, calls without a result, ...).
        trace_id: the trace's id (OpenTelemetry) or None.
        source: the adapter that read it (`openai_messages`, `otel`, ...).
        input: the first user message's content, if the trace has one (for a case's input).
        output: the final answer's content, if the trace has one.
    """

    trajectory: AgentTrajectory
    usage: TraceUsage | None
    skipped: Mapping[str, int]
    ignored: Mapping[str, int]
    notes: tuple[StepNote, ...]
    source: str
    trace_id: str | None = None
    input: Any = None
    output: Any = None

    def artifact(self) -> dict[str, Any]:
        """The `trace_reading/v1` payload: the trace, what was not understood (`skipped`,
        counted by kind), what was deliberately not a step (`ignored`), the marked steps."""
        return {
            "source": self.source,
            "trace_id": self.trace_id,
            "skipped": dict(self.skipped),
            "ignored": dict(self.ignored),
            "notes": [{"step": n.step, "kind": n.kind, "detail": n.detail}
                      for n in self.notes],
        }

    def report(self) -> str:
        """One line saying what was skipped and marked (empty when nothing was)."""
        parts: list[str] = []
        if self.skipped:
            parts.append("not understood: " + _counts(self.skipped))
        marked: Counter[str] = Counter(
            n.kind for n in self.notes if n.kind != "agent_by_control"
        )
        if marked:
            parts.append("marked steps: " + _counts(marked))
        return "; ".join(parts)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} × {kind}" for kind, n in sorted(counts.items(), key=lambda kv: kv[0]))


def warn_if_skipped(reading: TraceReading, function: str) -> None:
    """What `from_*` does instead of dropping things silently: one TraceWarning."""
    if reading.skipped:
        where = f" in trace {reading.trace_id}" if reading.trace_id else ""
        warnings.warn(
            f"{function}: {sum(reading.skipped.values())} item(s){where} not understood and "
            f"left out ({_counts(reading.skipped)}); the read_* function returns them counted",
            TraceWarning,
            stacklevel=3,
        )


# --- JSON helpers -------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """`value` as JSON data (objects a framework returned are converted, else their text)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    return to_jsonable_python(value, fallback=str)


def maybe_json(value: Any) -> Any:
    """A tool result or content as data: text that holds a JSON object or array is parsed
    (instrumentations serialise structured values); any other value is kept as it is."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                return value
        return value
    return jsonable(value)


def parse_arguments(value: Any) -> tuple[dict[str, Any] | None, NoteKind | None]:
    """A call's arguments as an object, and the note to attach when they are not one.

    None stays None (not recorded); an empty text is no arguments (`{}`); text that is not a
    JSON object is kept whole as `{"_raw": text}`, never dropped.
    """
    if value is None:
        return None, "arguments_not_recorded"
    if isinstance(value, Mapping):
        return dict(jsonable(dict(value))), None
    if isinstance(value, str):
        if not value.strip():
            return {}, None
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"_raw": value}, "arguments_not_json"
        if isinstance(parsed, dict):
            return parsed, None
        return {"_raw": value}, "arguments_not_object"
    return {"_raw": jsonable(value)}, "arguments_not_object"


def text_of(content: Any) -> Any:
    """A message's content: text parts joined when every part is text, else kept as data."""
    if isinstance(content, list) and content and all(
        isinstance(p, Mapping) and p.get("type") in ("text", "output_text", "input_text")
        for p in content
    ):
        return "".join(str(p.get("text", p.get("content", ""))) for p in content)
    return jsonable(content)


# --- the builder --------------------------------------------------------------------------


@dataclass
class _Step:
    kind: StepKind
    agent: str | None = None
    to_agent: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    removed: bool = False
    notes: list[tuple[NoteKind, str]] = field(default_factory=list)


@dataclass
class Call:
    """A call seen in the trace, until its result arrives."""

    step: _Step
    call_id: str | None
    answered: bool = False


class TrajectoryBuilder:
    """Collects steps in order; calls and results are matched by call id."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._steps: list[_Step] = []
        self._calls: dict[str, Call] = {}
        self._open: list[Call] = []  # calls without a result, in order
        self.skipped: Counter[str] = Counter()
        self.ignored: Counter[str] = Counter()
        self.input: Any = None
        self.output: Any = None

    # steps

    def add(
        self,
        kind: StepKind,
        *,
        agent: str | None = None,
        to_agent: str | None = None,
        tool_name: str | None = None,
        arguments: dict[str, Any] | None = None,
        result: Any = None,
    ) -> _Step:
        step = _Step(kind, agent, to_agent, tool_name, arguments, result)
        self._steps.append(step)
        return step

    def step_count(self) -> int:
        """How many steps were added so far (removed ones included)."""
        return len(self._steps)

    def message(self, role: str, content: Any, *, agent: str | None = None,
                name: str | None = None, kind: StepKind = "message") -> _Step | None:
        """A message step: `arguments` holds the role and the content (and a name if given).

        An instruction (a system or developer message) is no step, whatever the format:
        counted in `ignored` as `instructions`, and None is returned.
        """
        if role in INSTRUCTION_ROLES:
            self.ignored["instructions"] += 1
            return None
        arguments: dict[str, Any] = {"role": role, "content": jsonable(content)}
        if name:
            arguments["name"] = name
        if role == "user" and self.input is None:
            self.input = arguments["content"]
        return self.add(kind, agent=agent, arguments=arguments)

    # calls and results

    def call(self, tool_name: str, raw_arguments: Any, *, call_id: str | None = None,
             agent: str | None = None) -> Call:
        """A `tool_call` step; its arguments parsed (kept raw and marked when not JSON)."""
        arguments, note = parse_arguments(raw_arguments)
        step = self.add("tool_call", agent=agent, tool_name=tool_name, arguments=arguments)
        if note is not None:
            step.notes.append((note, "" if note == "arguments_not_recorded" else "kept whole"))
        call = Call(step, call_id)
        if call_id:
            self._calls[call_id] = call
        self._open.append(call)
        return call

    def known_call(self, call_id: str | None) -> Call | None:
        """The call with that id, if the trace showed it already."""
        return self._calls.get(call_id) if call_id else None

    def open_calls(self) -> list[Call]:
        """Calls still without a result, in order."""
        return [c for c in self._open if not c.answered]

    def fill_arguments(self, call: Call, raw_arguments: Any) -> None:
        """A call seen without its arguments (model output not captured) gets them from a
        later sighting of the same call (the tool's own span)."""
        if call.step.arguments is not None or raw_arguments is None:
            return
        arguments, note = parse_arguments(raw_arguments)
        call.step.arguments = arguments
        call.step.notes = [n for n in call.step.notes if n[0] != "arguments_not_recorded"]
        if note is not None:
            call.step.notes.append((note, "kept whole"))

    def result(self, call: Call, result: Any, *, agent: str | None = None,
               recorded: bool = True) -> _Step:
        """The `tool_result` step answering `call` (once; a second result is ignored)."""
        call.answered = True
        step = self.add("tool_result", agent=agent if agent is not None else call.step.agent,
                        tool_name=call.step.tool_name, result=result)
        if not recorded:
            step.notes.append(("result_not_recorded", ""))
        return step

    def answer_without_step(self, call: Call) -> None:
        """Mark a call answered without a result step (it was a hand-off, see the adapters)."""
        call.answered = True

    def replace(self, call: Call, kind: StepKind, *, to_agent: str | None,
                arguments: dict[str, Any] | None = None) -> None:
        """Turn a provisional `tool_call` into another step in place (a hand-off call)."""
        call.answered = True
        step = call.step
        step.kind, step.to_agent, step.tool_name = kind, to_agent, None
        step.arguments = arguments
        step.notes = []

    def remove(self, call: Call) -> None:
        """Drop a provisional call step (it was a hand-off already recorded as such)."""
        call.answered = True
        call.step.removed = True

    # the end

    def finish(
        self,
        *,
        terminal_status: TerminalStatus | None = None,
        truncated: bool = False,
        step_limit: int | None = None,
        usage: TraceUsage | None = None,
        trace_id: str | None = None,
        final_from_last_message: bool = True,
    ) -> TraceReading:
        """The trajectory and the reading around it.

        A call that never got a result makes the trajectory truncated: what was recorded is a
        lower bound of what happened, so every agent evaluator
        (docs/agents-and-tools.md#truncated-traces) gives a verdict only when the
        recorded part already decides it and is missing otherwise — never a fail the absent
        result caused.

        `terminal_status` None (what the trace does not state) is derived the same way for
        every format: `success` when the trace ends with the agent's answer (a `final` step)
        and is not truncated, else `unknown`. An adapter passes `failure` (or `unknown`) when
        its trace says so.
        """
        steps = [s for s in self._steps if not s.removed]
        for call in self._open:
            if not call.answered and not call.step.removed:
                call.step.notes.append(("call_without_result", call.call_id or ""))
                truncated = True
        if final_from_last_message:
            self._mark_final(steps)
        final = next((s for s in reversed(steps) if s.kind == "final"), None)
        if final is not None and final.arguments is not None:
            self.output = final.arguments.get("content")
        self._name_agents(steps)
        if terminal_status is None:
            terminal_status = "success" if steps and steps[-1].kind == "final" else "unknown"
        if truncated and terminal_status == "success":
            terminal_status = "unknown"
        agent_steps: list[AgentStep] = []
        notes: list[StepNote] = []
        for index, s in enumerate(steps, 1):
            agent_steps.append(AgentStep(
                index=index, kind=s.kind, agent=s.agent, to_agent=s.to_agent,
                tool_name=s.tool_name, arguments=s.arguments, result=s.result,
            ))
            notes.extend(StepNote(index, kind, detail) for kind, detail in s.notes)
        problems = trajectory_problems(tuple(agent_steps))
        if problems:  # pragma: no cover - the builder only makes valid steps
            raise TraceError(f"{self.source}: internal mapping error: " + "; ".join(problems),
                             trace=trace_id)
        trajectory = AgentTrajectory(
            steps=tuple(agent_steps),
            terminal_status=terminal_status,
            truncated=truncated,
            step_limit=step_limit if truncated else None,
        )
        return TraceReading(
            trajectory=trajectory, usage=usage, skipped=dict(self.skipped),
            ignored=dict(self.ignored), notes=tuple(notes), source=self.source,
            trace_id=trace_id, input=self.input, output=self.output,
        )

    @staticmethod
    def _mark_final(steps: list[_Step]) -> None:
        # The last assistant message is the answer, unless the agent went on calling after it.
        for step in reversed(steps):
            if step.kind in ("tool_call", "handoff", "final"):
                return
            if step.kind == "message" and (step.arguments or {}).get("role") == "assistant":
                step.kind = "final"
                return

    @staticmethod
    def _name_agents(steps: list[_Step]) -> None:
        # All steps name an agent or none does (docs/agents-and-tools.md#the-models). A step outside
        # every agent's span takes the agent that held control then: the previous named step's, or
        # before the first one, the first named agent's (who received what came before it).
        named = [s.agent for s in steps if s.agent]
        if not named or len(named) == len(steps):
            return
        holder: str | None = named[0]
        for step in steps:
            if step.agent:
                holder = step.to_agent if step.kind == "handoff" and step.to_agent else step.agent
            else:
                step.agent = holder
                step.notes.append(("agent_by_control", holder or ""))
