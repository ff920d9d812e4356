"""A two-agent refund desk built with the OpenAI Agents SDK: the system under test of `agents_sdk`.

`triage` reads the customer's message, looks the order up (`lookup_order`) and hands a refund
the policy allows to `refunds` (an SDK hand-off), which issues it (`issue_refund`); it declines
an order delivered more than 30 days ago and answers a question about the policy itself, with
no tool call. The suite sets `system.trace: otel`: the desk records nothing for Oloproof, and
the engine reads each case's trajectory and token usage from the spans that
`openinference-instrumentation-openai-agents` makes of the SDK's own traces.

There is no model and no network. `ScriptedModel` implements the SDK's `Model` interface and
decides as a model would, from the conversation it is handed; like the SDK's Responses model it
wraps each call in a `response_span` carrying the `Response` (with the agent's instructions
and tools, as the API returns them), its input and its token usage (words, counted), so the
instrumentor sees what it sees in production. It samples, as a model does: a generator seeded
from the case id and the trial (`current_case().trial`) makes two trials of a request differ
and every run of this example print the same figures. Two things go wrong on purpose, now and
then:

- an urgent request is handed to `refunds` before the order was looked up
  (`SKIP_LOOKUP_WHEN_URGENT`): the refund is right when the order was eligible, but it was not
  checked;
- an order delivered a few days past the window (31 to 35 days) is misread as within it
  (`MISREAD_NEAR_WINDOW`): it is refunded, which the policy does not allow.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model, ModelTracing
from agents.tracing import response_span
from agents.usage import Usage
from openai.types.responses import (
    FunctionTool,
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

from oloproof import current_case

# Where the instrumentor goes: once per process, when this module is imported — before any
# agent runs, and not inside `desk` (instrumenting again for every case would be refused, and
# undoing it per case would drop spans of cases running beside it). It takes no tracer
# provider: it then uses the global one, which `system.trace: otel` makes sure is the
# opentelemetry-sdk TracerProvider it collects from, so the spans of each case's run land
# under that case's own span. It replaces the SDK's default trace exporter (which would send
# every trace to OpenAI) with its own processor, so nothing leaves the machine. Every worker
# (`executor: processes` or `ray`) imports this module, and so instruments itself.
OpenAIAgentsInstrumentor().instrument()

REFUND_WINDOW_DAYS = 30
#: How often triage hands an urgent request to refunds without looking the order up.
SKIP_LOOKUP_WHEN_URGENT = 0.5
#: How often it misreads a delivery 31 to 35 days ago as within the window.
MISREAD_NEAR_WINDOW = 0.5

ORDERS: dict[str, dict[str, Any]] = {
    f"ord-{n:03d}": {"days_since_delivery": days, "amount": amount}
    for n, (days, amount) in enumerate([
        (3, 25.0), (12, 80.0), (29, 120.0), (1, 9.5), (7, 42.0), (30, 18.0), (14, 233.0),
        (20, 55.0), (2, 64.0), (5, 310.0), (9, 71.0), (45, 15.0), (90, 300.0), (31, 60.0),
        (33, 12.0),
    ], start=1)
}

POLICY = (f"Refunds are given for orders delivered within {REFUND_WINDOW_DAYS} days; "
          "send me the order number and I will check it.")
ORDER_ID = re.compile(r"\bord-\d{3}\b")


# The tools answer in JSON text: the SDK hands a tool's return value to the model as its
# str(), and the model reads JSON better than a Python repr (the scripted one parses it).
@function_tool
def lookup_order(order_id: str) -> str:
    """Look an order up: whether it exists, how many days ago it was delivered, its amount."""
    order = ORDERS.get(order_id)
    return json.dumps({"found": False} if order is None else {"found": True, **order})


@function_tool
def issue_refund(order_id: str) -> str:
    """Refund an order in full."""
    return json.dumps({"refund_id": f"rf-{order_id}"})


# --- the scripted model ---------------------------------------------------------------------


def _words(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return len(text.split())


def _history(items: str | list[Any]) -> tuple[str, dict[str, Any]]:
    """The customer's message and the outputs of the calls made so far, by tool name."""
    if isinstance(items, str):
        return items, {}
    message, names, outputs = "", {}, {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user" and not message:
            content = item.get("content")
            message = content if isinstance(content, str) else " ".join(
                str(part.get("text", "")) for part in content or [])
        elif kind == "function_call":
            names[item["call_id"]] = item["name"]
        elif kind == "function_call_output" and item["call_id"] in names:
            output = item.get("output")
            try:
                outputs[names[item["call_id"]]] = json.loads(output)
            except (TypeError, ValueError):
                outputs[names[item["call_id"]]] = output
    return message, outputs


class ScriptedModel(Model):
    """One agent's model: it reads the conversation and answers with the next output items.

    `decide(message, outputs)` is the agent's policy (see `triage` and `refunds` below); this
    class makes its answer look like a Responses API call to the SDK and its tracing.
    """

    def __init__(self, agent: str, decide: Any) -> None:
        self.agent = agent
        self.decide = decide
        self.turn = 0

    async def get_response(self, system_instructions: str | None, input: str | list[Any],
                           model_settings: Any, tools: list[Any], output_schema: Any,
                           handoffs: list[Any], tracing: ModelTracing,
                           **_: Any) -> ModelResponse:
        self.turn += 1
        message, outputs = _history(input)
        output = self.decide(self, message, outputs)
        input_tokens = _words(system_instructions or "") + _words(input)
        output_tokens = sum(_words(item.model_dump(exclude_none=True)) for item in output)
        usage = ResponseUsage(
            input_tokens=input_tokens, output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0))
        # What the SDK's own Responses model does around a call: the span always carries the
        # usage, and the response and its input when the run includes sensitive data.
        with response_span(disabled=tracing.is_disabled()) as span:
            response = Response(
                id=f"resp_{self.agent}_{self.turn}", created_at=0, model="scripted",
                object="response", output=output, instructions=system_instructions,
                tools=[_tool_definition(t) for t in [*tools, *handoffs]], tool_choice="auto",
                top_p=None, parallel_tool_calls=True, usage=usage)
            span.span_data.usage = {"input_tokens": input_tokens,
                                    "output_tokens": output_tokens}
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = input
        return ModelResponse(
            output=output, response_id=response.id,
            usage=Usage(requests=1, input_tokens=input_tokens, output_tokens=output_tokens,
                        total_tokens=input_tokens + output_tokens))

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model answers whole turns: use Runner.run")

    def call(self, name: str, **arguments: Any) -> list[Any]:
        call_id = f"call_{self.agent}_{self.turn}"
        return [ResponseFunctionToolCall(type="function_call", id=f"fc_{call_id}",
                                         call_id=call_id, name=name, status="completed",
                                         arguments=json.dumps(arguments))]

    def say(self, text: str) -> list[Any]:
        return [ResponseOutputMessage(
            id=f"msg_{self.agent}_{self.turn}", type="message", role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])])]


def _tool_definition(tool: Any) -> FunctionTool:
    """A function tool or a hand-off as the Responses API lists it in its response."""
    if hasattr(tool, "tool_name"):  # a Handoff: the model sees it as a transfer_to_… tool
        return FunctionTool(type="function", name=tool.tool_name,
                            description=tool.tool_description,
                            parameters=tool.input_json_schema, strict=tool.strict_json_schema)
    return FunctionTool(type="function", name=tool.name, description=tool.description,
                        parameters=tool.params_json_schema, strict=tool.strict_json_schema)


# --- the agents' policies -------------------------------------------------------------------


def triage_policy(rng: random.Random) -> Any:
    def decide(model: ScriptedModel, message: str, outputs: dict[str, Any]) -> list[Any]:
        found = ORDER_ID.search(message)
        if found is None:
            return model.say(POLICY)  # a question, not a request: answered with no tool call
        order_id = found.group()
        looked_up = outputs.get("lookup_order")
        if looked_up is None:
            if "urgent" in message.lower() and rng.random() < SKIP_LOOKUP_WHEN_URGENT:
                return model.call("transfer_to_refunds")
            return model.call("lookup_order", order_id=order_id)
        if not looked_up.get("found"):
            return model.say(f"I could not find order {order_id}; please check the number.")
        days = int(looked_up["days_since_delivery"])
        if REFUND_WINDOW_DAYS < days <= REFUND_WINDOW_DAYS + 5 \
                and rng.random() < MISREAD_NEAR_WINDOW:
            days = REFUND_WINDOW_DAYS  # misread: "about a month ago" taken for within it
        if days <= REFUND_WINDOW_DAYS:
            return model.call("transfer_to_refunds")
        return model.say(f"Order {order_id} was delivered {days} days ago, past the "
                         f"{REFUND_WINDOW_DAYS}-day window: the refund is declined.")
    return decide


def refunds_policy(model: ScriptedModel, message: str, outputs: dict[str, Any]) -> list[Any]:
    order_id = ORDER_ID.search(message)
    refund = outputs.get("issue_refund")
    if refund is None:
        return model.call("issue_refund", order_id=order_id.group() if order_id else "")
    return model.say(f"Order {order_id.group() if order_id else ''} is refunded "
                     f"({refund['refund_id']}).")


def team(rng: random.Random) -> Agent[Any]:
    """The two agents of one case, their models drawing from the case's generator."""
    refunds = Agent(
        name="refunds", instructions="You issue the refunds the front desk approved.",
        tools=[issue_refund], model=ScriptedModel("refunds", refunds_policy))
    return Agent(
        name="triage",
        instructions=("You are a refund desk's front desk. Look the order up, hand refunds "
                      f"the policy allows ({REFUND_WINDOW_DAYS} days) to refunds, decline the "
                      "others, and answer questions about the policy yourself."),
        tools=[lookup_order], handoffs=[refunds],
        model=ScriptedModel("triage", triage_policy(rng)))


async def desk(request: dict[str, Any]) -> dict[str, Any]:
    """The system under test: one request in, the desk's reply out."""
    case = current_case()
    rng = random.Random(f"{case.case_id}:{case.trial}")  # reproducible, different per trial
    result = await Runner.run(team(rng), request["message"])
    return {"answer": str(result.final_output)}
