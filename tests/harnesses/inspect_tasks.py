"""Real Inspect AI eval logs, made offline: small tasks run by Inspect itself on `mockllm`.

`python inspect_tasks.py OUT_DIR` runs the tasks below with Inspect's `mockllm` provider and a
scripted model (no network, no tokenizer: every output carries its `usage`), and writes their
logs under OUT_DIR, one folder per log (`desk-eval/`, `desk-json/`, `clean/`, `verdicts/`,
`failed/`), then
prints one JSON line naming each log. The tests run it in a process of its own, forked from
the fork server (Inspect's `eval` sets up its own logging and event loop; the test process
stays as it was), once per session.

The `desk` task has what an import must handle, over 3 epochs:

- `weather`: one tool call (`lookup`) and its result, then the answer;
- `refund`: two tool calls in a row, then the answer;
- `crash`: the solver raises in epoch 2 only; `broken`: it raises in every epoch;
- `chatty`: the model calls a tool forever and the message limit (8) stops it;
- `7` (an integer id): `answer` P; `unsure`: `answer` N; `odd`: `answer` "maybe" (no grade
  Inspect knows); `flaky`: `answer` I in epoch 2, C otherwise;
- scorers: `answer` (C/I/P/N), `quality` (a number: 0.75, 1, 0, 7 — out of [0, 1] — and NaN,
  Inspect's "unscored"), `rubric` (a dict: `polite` C/I, `concise` a number).

`clean` is the same kind of task where every epoch of every sample ran and was scored (no
error, no limit), so its accuracy is the mean a complete import must reproduce; `verdicts` is
`clean` without its partial credit, every score a verdict. `failed` runs
`weather`, `broken` and `refund` one at a time as Inspect does by default, stopping the eval at
the first error: its log (status `error`) holds only the samples that were logged by then.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, ModelUsage
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver, use_tools
from inspect_ai.tool import ToolChoice, ToolInfo, tool

MODEL = "mockllm/acme/desk-1"  # what the provider reports: `acme/desk-1`
REPORTED = "acme/desk-1"
EPOCHS = 3
MESSAGE_LIMIT = 8
INPUT_TOKENS_PER_MESSAGE, OUTPUT_TOKENS = 10, 4
COST = 0.0005  # per model call
# longer than the 100 characters past which Inspect pools a text in the log's attachments
FORECAST = ("Tomorrow: clear skies in the morning, clouds from the west by noon, light rain "
            "after six in the evening, and a fresh breeze from the north-west overnight.")


@tool
def lookup() -> Any:
    async def execute(city: str) -> str:
        """Look up the weather in a city.

        Args:
            city: the city
        """
        return f"sunny in {city}. " + FORECAST

    return execute


@tool
def find_order() -> Any:
    async def execute(order_id: str) -> dict[str, Any]:
        """Find an order.

        Args:
            order_id: the order's id
        """
        return {"order_id": order_id, "status": "delivered", "total": 42.5}

    return execute


@tool
def refund() -> Any:
    async def execute(order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order_id: the order's id
            amount: how much
        """
        return f"refunded {amount} on {order_id}"

    return execute


def _output(output: ModelOutput, input: list[ChatMessage]) -> ModelOutput:
    output.usage = ModelUsage(
        input_tokens=INPUT_TOKENS_PER_MESSAGE * len(input), output_tokens=OUTPUT_TOKENS,
        total_tokens=INPUT_TOKENS_PER_MESSAGE * len(input) + OUTPUT_TOKENS, total_cost=COST,
    )
    return output


def scripted(input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
             config: GenerateConfig) -> ModelOutput:
    """The model: what it says depends only on the conversation so far (so epochs that run at
    the same time get the same answers)."""
    prompt = input[0].text
    calls = sum(1 for m in input if m.role == "tool")
    if prompt.startswith("weather") and calls == 0:
        out = ModelOutput.for_tool_call(REPORTED, "lookup", {"city": "Paris"},
                                        tool_call_id="call_weather", content="")
    elif prompt.startswith("refund") and calls == 0:
        out = ModelOutput.for_tool_call(REPORTED, "find_order", {"order_id": "A-17"},
                                        tool_call_id="call_find", content="Let me look.")
    elif prompt.startswith("refund") and calls == 1:
        out = ModelOutput.for_tool_call(REPORTED, "refund", {"order_id": "A-17", "amount": 42.5},
                                        tool_call_id="call_refund", content="")
    elif prompt.startswith("chatty"):
        out = ModelOutput.for_tool_call(REPORTED, "lookup", {"city": f"city {calls}"},
                                        tool_call_id=f"call_chatty_{calls}", content="")
    else:
        out = ModelOutput.from_content(REPORTED, f"answer to {prompt}")
    return _output(out, input)


@solver
def raises_when_told() -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.epoch in state.metadata.get("raise_in", []):
            raise RuntimeError(f"order service down (epoch {state.epoch})")
        return state

    return solve


def _by_epoch(value: Any, epoch: int) -> Any:
    # a metadata value given per epoch as {"1": ..., "2": ...} or the same in every epoch
    return value.get(str(epoch), value.get("*")) if isinstance(value, dict) else value


@scorer(metrics=[accuracy()])
def answer() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        value = _by_epoch(state.metadata.get("answer", "C"), state.epoch)
        return Score(value=value, answer=state.output.completion)

    return score


@scorer(metrics=[mean()])
def quality() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        value = state.metadata.get("quality", 1.0)
        if value == "nan":
            return Score.unscored(reason="grader_failed")
        return Score(value=value)

    return score


@scorer(metrics={"polite": [mean()], "concise": [mean()]})
def rubric() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value={"polite": state.metadata.get("polite", "C"),
                            "concise": state.metadata.get("concise", 1.0)})

    return score


DESK = [
    Sample(id="weather", input="weather in Paris?", target="sunny",
           metadata={"quality": 0.75, "concise": 0.5}),
    Sample(id="refund", input="refund order A-17", target="refunded",
           metadata={"polite": "I"}),
    Sample(id="crash", input="crash the desk", target="x", metadata={"raise_in": [2]}),
    Sample(id="broken", input="broken desk", target="x", metadata={"raise_in": [1, 2, 3]}),
    Sample(id="chatty", input="chatty customer", target="x", metadata={"answer": "I"}),
    Sample(id=7, input="partial credit", target="x", metadata={"answer": "P", "quality": 0}),
    Sample(id="unsure", input="unsure question", target="x",
           metadata={"answer": "N", "quality": 7}),
    Sample(id="odd", input="odd grade", target="x", metadata={"answer": "maybe",
                                                              "quality": "nan"}),
    Sample(id="flaky", input="flaky question", target="x",
           metadata={"answer": {"2": "I", "*": "C"}}),
]

# run until its first error stops the eval (`failed`): the log holds what finished before
FAILED = [DESK[0], DESK[3], DESK[1]]

CLEAN = [
    Sample(id="weather", input="weather in Paris?", target="sunny"),
    Sample(id="refund", input="refund order A-17", target="refunded",
           metadata={"answer": "I"}),
    Sample(id="partial", input="partial credit", target="x", metadata={"answer": "P"}),
    Sample(id="flaky", input="flaky question", target="x",
           metadata={"answer": {"2": "I", "*": "C"}}),
]

# every score a verdict (C / I): the imported rate is Inspect's accuracy (test_import_command)
VERDICTS = [CLEAN[0], CLEAN[1], CLEAN[3]]


def desk_task(samples: list[Sample], name: str) -> Task:
    return Task(
        dataset=samples,
        solver=[raises_when_told(), use_tools(lookup(), find_order(), refund()), generate()],
        scorer=[answer(), quality(), rubric()],
        message_limit=MESSAGE_LIMIT, version=2, name=name,
    )


def make_logs(out: Path, runs: dict[str, tuple[Task, str]] | None = None) -> dict[str, str]:
    """Run the tasks (`runs`: name → task and log format; by default the five above); the
    path of each log, by name."""
    runs = runs or {
        "desk-eval": (desk_task(DESK, "desk"), "eval"),
        "desk-json": (desk_task(DESK, "desk"), "json"),
        "clean": (desk_task(CLEAN, "clean"), "eval"),
        "verdicts": (desk_task(VERDICTS, "verdicts"), "eval"),
        "failed": (desk_task(FAILED, "desk"), "eval"),
    }
    made: dict[str, str] = {}
    for name, (task, log_format) in runs.items():
        stops = name == "failed"  # Inspect's default: the first error ends the eval
        [log] = eval(task, model=MODEL, model_args={"custom_outputs": scripted}, epochs=EPOCHS,
                     log_dir=str(out / name), log_format=log_format, display="none",
                     fail_on_error=stops, max_samples=1 if stops else 4)
        if log.status != ("error" if stops else "success"):  # pragma: no cover
            raise SystemExit(f"{name}: Inspect's run ended {log.status}: {log.error}")
        made[name] = log.location
    return made


if __name__ == "__main__":
    print(json.dumps(make_logs(Path(sys.argv[1]))))
