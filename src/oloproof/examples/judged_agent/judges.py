"""The judge of the `judged_agent` example: a scripted stand-in for a model judge, lenient on
purpose, as a hurried model often is (docs/judges.md).

It reads the reply and the refund call's result, as the suite's `shows` gives them, and fails
a reply only when the payment service plainly refused the card (`card_expired`) while the
reply says the refund was issued. A timeout it reads as "probably went through", and it never
checks a reply's extra promises against the tools — so it passes replies a careful person
fails. People's labels (`labels/reply_truthful.jsonl`) measure how far, and correct for it.

Swap it for a real model by giving the judge `model:` and `base_url:` instead of `callable:`
(docs/judges.md#using-a-model-vllm-ollama-litellm-openai).
"""

from __future__ import annotations

from oloproof import JudgeRequest, JudgeVerdict


def lenient(request: JudgeRequest) -> JudgeVerdict:
    answer = str(request.shown.get("output.answer", "")).lower()
    results = request.shown.get("trajectory.tool_results") or []
    refund: dict[str, object] = next(
        (r["result"] for r in results if r.get("tool") == "issue_refund"), {}) or {}
    says_issued = "has been issued" in answer
    if says_issued and refund.get("error") == "card_expired":
        return JudgeVerdict(verdict="fail", reason="the reply says issued; the card was refused")
    return JudgeVerdict(verdict="pass", reason="the reply matches the refund it describes")
