"""Real OpenAI Agents SDK runs, offline: a scripted `Model` and the agents the tests run.

`ScriptedModel` implements the SDK's `Model` interface and answers each turn with the next
scripted list of output items. Like the SDK's own Responses model it wraps the turn in a
`response_span` carrying its usage always and, when the run includes sensitive data, the
`Response` — with the agent's `instructions`, as the API returns them — and its input, so an
instrumentor sees what it would see in production (no network, no credentials).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model, ModelTracing
from agents.tracing import response_span
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

INPUT_TOKENS, OUTPUT_TOKENS = 11, 7


def call(name: str, cid: str, **arguments: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", name=name, call_id=cid, id=f"fc_{cid}",
                                    arguments=json.dumps(arguments), status="completed")


def raw_call(name: str, cid: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", name=name, call_id=cid, id=f"fc_{cid}",
                                    arguments=arguments, status="completed")


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Answers turn n with `turns[n]` (the same list again once the script runs out)."""

    def __init__(self, *turns: list[Any]) -> None:
        self.turns = list(turns)
        self.calls = 0

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                           tools: Any, output_schema: Any, handoffs: Any,
                           tracing: ModelTracing, **_: Any) -> ModelResponse:
        output = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        with response_span(disabled=tracing.is_disabled()) as span:
            response = Response(
                id=f"resp_{self.calls}", created_at=0, model="scripted", object="response",
                output=output, tool_choice="auto", tools=[], top_p=None,
                parallel_tool_calls=True, instructions=system_instructions,
                usage=ResponseUsage(
                    input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS,
                    total_tokens=INPUT_TOKENS + OUTPUT_TOKENS,
                    input_tokens_details=InputTokensDetails(cached_tokens=0,
                                                            cache_write_tokens=0),
                    output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                ),
            )
            span.span_data.usage = {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = input
        usage = Usage(requests=1, input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS,
                      total_tokens=INPUT_TOKENS + OUTPUT_TOKENS)
        return ModelResponse(output=output, usage=usage, response_id=response.id)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the model without streaming")


@function_tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up."""
    return {"order_id": order_id, "status": "delivered"}


@function_tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    raise RuntimeError(f"refund service down for {order_id}")


def support_team() -> Agent[Any]:
    """triage looks up two orders in parallel, hands off to refunds, which calls a failing
    tool and answers."""
    refunds = Agent(name="refunds", instructions="Refund orders.", tools=[issue_refund],
                    model=ScriptedModel([call("issue_refund", "c3", order_id="o1")],
                                        [say("Your refund could not be issued yet.")]))
    return Agent(
        name="triage", instructions="Route requests.", tools=[lookup_order], handoffs=[refunds],
        model=ScriptedModel(
            [call("lookup_order", "c1", order_id="o1"), call("lookup_order", "c2", order_id="o2")],
            [call("transfer_to_refunds", "c4")],
        ),
    )


def looping_agent() -> Agent[Any]:
    """Calls lookup_order every turn, forever (for max_turns)."""
    turns = [[call("lookup_order", f"l{n}", order_id="o1")] for n in range(20)]
    return Agent(name="looper", tools=[lookup_order], model=ScriptedModel(*turns))
