"""Judge calls (docs/judges.md): I/O the execution layer makes beside the case, like the
system's call, so that evaluators stay pure.

After a unit's calls come back, each judge criterion still to judge a case gets a `JudgeAsk`
(what the judge is shown, its digest, the verdict's cache key; `asks_for`); the asks without a
record are sent to their judge on the event loop of the process the worker is in (`JudgePanel`:
async, at most the judge's `concurrency` calls at once over the run, a reply that is not a
verdict asked again once), and the verdict comes back as the case's `judge_verdict/v1` record,
which the `judge` evaluator reads (`evidence.verdicts`). The coordinator makes the asks of a
cached execution itself and gives them the records the judge cache holds, so an unchanged
re-run calls no judge and a changed rubric re-judges without re-running the system; the
worker makes the asks of a fresh execution after its call, and the panel looks each one up
by its verdict key before calling (docs/judges.md#the-judge-cache): in the verdicts this
panel made or was given lately, then in the store where the panel is the coordinator's; an
ask whose key is being asked already waits for that call. So text the judge was shown once
-- in another trial, under another system version, in a `--no-cache` run -- is never judged
again.

A judge's failure is never the agent's: a call that errors is `judge_error`, a reply that is
still not a verdict when asked again `judge_unparseable` -- the case is missing for the
criterion, and nothing of the failure is cached, so the next run asks again.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from oloproof.errors import install_extra
from oloproof.evaluators.base import Evaluator
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judge import JudgeCriterion
from oloproof.evaluators.verdicts import (
    JUDGE_ERROR,
    JUDGE_UNPARSEABLE,
    JUDGE_VERDICT_KIND,
    VERDICT_SCHEMA,
    JudgeRequest,
    JudgeVerdict,
    token_count,
    verdict_from_text,
    verdict_from_value,
)
from oloproof.execution import model_text
from oloproof.execution.retries import RetryPolicy, Throttle, call_with_retries_async
from oloproof.execution.target import forget_foreign, remember_imports
from oloproof.execution.units import CaseJob, JudgeAsk
from oloproof.suite.config import (
    JUDGE_RETRIES_CALLABLE,
    JUDGE_RETRIES_MODEL,
    JUDGE_RETRY_ATTEMPTS,
    JudgeConfig,
)

#: How many times a reply that is not a verdict is asked for (once, then once again).
PARSE_TRIES = 2
#: What the model a reply names is cut to.
_MODEL_NAME_CAP = 200
#: How many verdicts a panel keeps at hand (made or looked up lately): enough for the trials of
#: a chunk's cases, which finish close together, before the store has them.
KEPT_VERDICTS = 4096
#: Where a panel looks a verdict up by its key: the store's judge cache (the coordinator's).
VerdictLookup = Callable[[Sequence[str]], Mapping[str, dict[str, Any]]]
#: JSON-schema structured output, where the endpoint takes it.
_RESPONSE_FORMAT = {"type": "json_schema",
                    "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True}}


# ---- checks before a run ---------------------------------------------------------------------


def judge_retries(config: JudgeConfig) -> RetryPolicy:
    """What this judge's calls retry (docs/judges.md#where-a-judge-sits): its `retries:`,
    else a model's rate limits and lost connections, a callable's `ConnectionError` and
    `TimeoutError`, 3 times. LookupError naming an exception class that does not import."""
    retries = config.retries
    if retries is not None:
        return RetryPolicy.named(retries.on, attempts=retries.attempts,
                                 backoff_s=retries.backoff_s,
                                 max_backoff_s=retries.max_backoff_s)
    names = JUDGE_RETRIES_MODEL if config.model is not None else JUDGE_RETRIES_CALLABLE
    return RetryPolicy.named(names, attempts=JUDGE_RETRY_ATTEMPTS)


def judge_problem(config: JudgeConfig, project_dir: Path | None = None) -> str | None:
    """Why this judge cannot be called, in words, or None: its `callable` does not import,
    or its `model` lacks the `openai` SDK or the variable that holds its API key, or an
    exception class its `retries:` names does not import. A `callable` module of the same
    name that another project in this process imported is dropped first (`project_dir`, the
    suite's folder): this project's own is the one imported, and then called."""
    if config.retries is not None:
        try:
            judge_retries(config)
        except LookupError as exc:
            return f"retries.on: {exc}; name an exception class the judge's call raises"
    if config.callable is not None:
        if project_dir is not None:
            forget_foreign(config.callable.partition(":")[0], project_dir.resolve())
        try:
            _import_function(config.callable)
        except LookupError as exc:
            return str(exc)
        if project_dir is not None:
            remember_imports(project_dir.resolve())
        return None
    try:
        import openai  # noqa: F401 - only whether it is there
    except ImportError:
        return ("a `model` judge is called through the openai SDK, which is not installed; "
                f"{install_extra('judge')}, or give the judge a `callable:`")
    variable = config.key_variable
    if not os.environ.get(variable):
        return (f"its API key is read from the environment variable {variable}, which is not "
                f"set; export {variable} (a server that needs no key, e.g. a local vLLM or "
                "Ollama, takes any value), or name another variable with api_key_env")
    return None


def _import_function(reference: str) -> Callable[..., Any]:
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise LookupError(f"callable {reference!r}: there is no module {exc.name!r} (modules "
                          "are imported from the directory of oloproof.yaml)") from None
    except Exception as exc:
        raise LookupError(f"callable {reference!r}: importing {module_name!r} raised "
                          f"{type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise LookupError(f"callable {reference!r}: {module_name} has no {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise LookupError(f"callable {reference!r} is not a function")
    return target  # type: ignore[no-any-return]


# ---- what a case asks ------------------------------------------------------------------------


def judge_positions(evaluators: Sequence[Evaluator]) -> tuple[int, ...]:
    """The positions of the suite's judge criteria."""
    return tuple(i for i, e in enumerate(evaluators) if isinstance(e, JudgeCriterion))


def asks_for(evidence: Evidence, evaluators: Sequence[Evaluator],
             positions: Sequence[int]) -> list[JudgeAsk]:
    """The asks of one case for the judge criteria at `positions` (those it is judged by):
    none where the criterion will not read a verdict (a metamorphic copy, an errored case, no
    trajectory to show), a record saying which shown field the case lacks, else what to ask."""
    case = evidence.case
    if case.is_derived or evidence.errored is not None:
        return []
    asks = []
    for i in positions:
        evaluator = evaluators[i]
        assert isinstance(evaluator, JudgeCriterion)
        shown = evaluator.shown(evidence)
        if isinstance(shown, str):
            asks.append(JudgeAsk(i, None, None, None,
                                 {"status": "shown_field_absent", "field": shown}))
            continue
        key, shown_digest = evaluator.verdict_key(shown)
        asks.append(JudgeAsk(i, key, shown_digest, shown))
    return asks


# ---- the judges of a process -----------------------------------------------------------------


class PanelJudge:
    """One `judges:` entry in this process: its client or function and its concurrency."""

    def __init__(self, config: JudgeConfig, share: int) -> None:
        self.config = config
        # The judge's concurrency is over the run: each of `share` worker processes takes its
        # part (at least one call).
        self.limit = max(1, -(-config.concurrency // max(1, share)))
        self._slots: asyncio.Semaphore | None = None
        self._client: Any = None
        self._function: Callable[[JudgeRequest], Any] | None = None
        self._threads: ThreadPoolExecutor | None = None
        self.calls = 0
        self.retries = judge_retries(config)
        # (a rate limit pauses this judge's new calls in this process: docs/judges.md)
        self.throttle = Throttle()

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:  # made on the loop that uses it
            self._slots = asyncio.Semaphore(self.limit)
        return self._slots

    @property
    def label(self) -> str:
        """What the record names as the judge's model."""
        return self.config.model or self.config.callable or self.config.name

    def _secret(self) -> str | None:
        if self.config.model is None:
            return None
        return os.environ.get(self.config.key_variable) or None

    def scrub(self, text: str) -> str:
        """`text` with the API key, should the reply or an error repeat it, blotted out
        (`model_text.blotted`)."""
        return model_text.blotted(text, self._secret())

    def kept(self, text: str, name: str) -> tuple[str, str | None]:
        """A text of the reply as it is kept (blotted, capped), and why the store cannot keep
        it, if it cannot, in words that start with `name` (`model_text.kept`)."""
        return model_text.kept(text, self._secret(), name)

    def message(self, text: str) -> str:
        """An error's message as it is kept (`model_text.message`)."""
        return model_text.message(text, self._secret())

    async def ask(self, request: JudgeRequest) -> tuple[JudgeVerdict | None, str | None]:
        """One call, bounded whole by the judge's `timeout_s` — the reply's body included, which
        a timeout between two reads of it never bounds (a server trickling it a byte at a
        time): the verdict (None when the reply is not one) and the reply's text."""
        self.calls += 1
        self._ready()  # (importing the SDK or the function is not the call: not timed)
        deadline = asyncio.timeout(self.config.timeout_s)
        try:
            async with deadline:
                if self.config.callable is not None:
                    return await self._ask_function(request)
                return await self._ask_model(request)
        except TimeoutError:
            if not deadline.expired():  # the judge's own TimeoutError
                raise
            raise self._timed_out() from None

    def _timed_out(self) -> TimeoutError:
        """What a call past `timeout_s` raises, for a model and a callable alike: a
        `TimeoutError`, which a judge retries by default."""
        return TimeoutError(f"the judge did not answer within timeout_s="
                            f"{self.config.timeout_s:g} s (the whole call, its reply included)")

    def _ready(self) -> None:
        """The judge's function (and a sync one's threads, as many as slots), or its client."""
        if self.config.callable is not None:
            if self._function is None:
                self._function = _import_function(self.config.callable)
            if self._threads is None and not inspect.iscoroutinefunction(self._function):
                self._threads = ThreadPoolExecutor(self.limit, "oloproof-judge")
        elif self._client is None:
            from openai import AsyncOpenAI

            # The SDK's own retries are off: retrying is the engine's, in one place.
            self._client = AsyncOpenAI(api_key=self._secret() or "", base_url=self.config.base_url,
                                       max_retries=0, timeout=self.config.timeout_s)

    async def _ask_function(self, request: JudgeRequest
                            ) -> tuple[JudgeVerdict | None, str | None]:
        function = self._function
        assert function is not None, "made ready before the call"
        if inspect.iscoroutinefunction(function):
            value = await function(request)
        else:
            value = await asyncio.get_running_loop().run_in_executor(
                self._threads, function, request)
            if inspect.isawaitable(value):
                value = await value
        return verdict_from_value(value), None if value is None else repr(value)[:300]

    async def _ask_model(self, request: JudgeRequest) -> tuple[JudgeVerdict | None, str | None]:
        options: dict[str, Any] = {}
        if self.config.structured_output:
            # Sent as it is (`extra_body`): the SDK's typed transform walks a nested schema
            # field by field on every call, most of the client's time per call.
            options["extra_body"] = {"response_format": _RESPONSE_FORMAT}
        if self.config.max_tokens is not None:
            options["max_tokens"] = self.config.max_tokens
        from openai import APIResponseValidationError

        try:
            response = await self._client.chat.completions.create(
                model=self.config.model, messages=list(request.messages),
                temperature=self.config.temperature, **options)
        except (json.JSONDecodeError, APIResponseValidationError) as exc:
            # A reply, but not a completion (a body cut off, not JSON): not a verdict either.
            return None, f"a body that is not a chat completion ({type(exc).__name__}: {exc})"
        choices = getattr(response, "choices", None) or []
        text = choices[0].message.content if choices and choices[0].message else None
        verdict = verdict_from_text(text)
        if verdict is None:
            return None, text
        usage = getattr(response, "usage", None)
        named = getattr(response, "model", None)
        if isinstance(named, str):  # (the server's words: kept as a reason is, cut shorter)
            named, problem = self.kept(named[:_MODEL_NAME_CAP], "its model")
            named = None if problem else named
        return verdict.model_copy(update={
            "input_tokens": token_count(getattr(usage, "prompt_tokens", None)),
            "output_tokens": token_count(getattr(usage, "completion_tokens", None)),
            "model": named or self.config.model}), text

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False)


class JudgePanel:
    """The judges of one process (a transport's), by name; each call bounded by its judge's
    concurrency, and no verdict key asked twice (see the module docstring). Made on the event
    loop that calls them; `verdicts` is the store's lookup where the panel is in the
    coordinator's process (workers elsewhere have no store: they look up what they made)."""

    def __init__(self, evaluators: Sequence[Evaluator], share: int = 1,
                 verdicts: VerdictLookup | None = None) -> None:
        self.evaluators = list(evaluators)
        self.positions = judge_positions(self.evaluators)
        self._lookup = verdicts
        # Verdicts made or looked up lately, by key (oldest first), and the calls under way.
        self._kept: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._asking: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._judges: dict[str, PanelJudge] = {}
        for i in self.positions:
            evaluator = self.evaluators[i]
            assert isinstance(evaluator, JudgeCriterion)
            config = evaluator.judge_config
            assert config is not None, "a judge criterion is bound to its judge when loaded"
            if config.name not in self._judges:
                self._judges[config.name] = PanelJudge(config, share)

    @classmethod
    def of(cls, evaluators: Sequence[Evaluator], share: int = 1,
           verdicts: VerdictLookup | None = None) -> JudgePanel | None:
        """The panel of a suite's evaluators, or None when no criterion has a judge."""
        return cls(evaluators, share, verdicts) if judge_positions(evaluators) else None

    @property
    def calls(self) -> int:
        """How many calls the judges of this process made."""
        return sum(j.calls for j in self._judges.values())

    def pending(self, jobs: Sequence[CaseJob], evidence: Callable[[int], Evidence | None]
                ) -> list[JudgeAsk]:
        """The asks of a unit's cases still to send (making the asks of the fresh ones, whose
        evidence `evidence(position)` gives: None where the case was not called)."""
        waiting: list[JudgeAsk] = []
        for at, case_job in enumerate(jobs):
            if case_job.asks is None:
                wanted = [i for i in case_job.judge if i in self.positions]
                item = evidence(at) if wanted else None
                case_job.asks = asks_for(item, self.evaluators, wanted) \
                    if item is not None else []
            waiting.extend(a for a in case_job.asks if a.record is None)
        return waiting

    async def answer(self, asks: Sequence[tuple[JudgeAsk, str, int]]) -> None:
        """Give each ask (with its case id and trial) its record: the verdict already made for
        its key, else its judge's answer."""
        self._look_up([ask for ask, _, _ in asks])
        await asyncio.gather(*(self._answer(ask, case_id, trial)
                               for ask, case_id, trial in asks if ask.record is None))

    def _keep(self, key: str, record: dict[str, Any]) -> None:
        self._kept[key] = record
        self._kept.move_to_end(key)
        if len(self._kept) > KEPT_VERDICTS:
            self._kept.popitem(last=False)

    def _look_up(self, asks: Sequence[JudgeAsk]) -> None:
        """Records for the asks whose verdict this panel has at hand or the store holds."""
        wanted: list[str] = []
        for ask in asks:
            if ask.key is None or ask.record is not None:
                continue
            kept = self._kept.get(ask.key)
            if kept is not None:
                ask.record, ask.cached = kept, True
            elif ask.key not in self._asking:
                wanted.append(ask.key)
        if not wanted or self._lookup is None:
            return
        stored = self._lookup(list(dict.fromkeys(wanted)))
        for key, record in stored.items():
            self._keep(key, record)
        for ask in asks:
            if ask.record is None and ask.key is not None and ask.key in stored:
                ask.record, ask.cached = stored[ask.key], True

    async def _answer(self, ask: JudgeAsk, case_id: str, trial: int) -> None:
        key = ask.key
        assert key is not None
        under_way = self._asking.get(key)
        if under_way is not None:  # the same text is being judged: its verdict is this one's
            ask.record, ask.cached = await asyncio.shield(under_way), True
            return
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._asking[key] = future
        try:
            await self._call(ask, case_id, trial)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # (retrieved: a waiter gets it raised, no one else needs it)
            raise
        finally:
            self._asking.pop(key, None)
        assert ask.record is not None
        if "status" not in ask.record:  # (a failure is not kept: the next ask tries again)
            self._keep(key, ask.record)
        future.set_result(ask.record)

    async def _call(self, ask: JudgeAsk, case_id: str, trial: int) -> None:
        evaluator = self.evaluators[ask.evaluator]
        assert isinstance(evaluator, JudgeCriterion) and ask.shown is not None
        judge = self._judges[evaluator.config.judge]
        samples = evaluator.config.samples
        messages = evaluator.messages(ask.shown)
        requests = [JudgeRequest(
            criterion=evaluator.criterion, judge=judge.config.name, case_id=case_id,
            trial=trial, sample=s, rubric=evaluator.config.rubric, shown=ask.shown,
            messages=messages, model=judge.config.model, temperature=judge.config.temperature)
            for s in range(1, samples + 1)]
        answers = await asyncio.gather(*(_sample(judge, r) for r in requests))
        ask.record = _record(evaluator, judge, ask, answers)
        ask.fresh = True

    async def close(self) -> None:
        for judge in self._judges.values():
            await judge.close()


async def _sample(judge: PanelJudge, request: JudgeRequest) -> dict[str, Any]:
    """One sample of a verdict: asked again once if the reply is not a verdict."""
    attempts = 0
    latency = 0.0
    reply: str | None = None
    refused: str | None = None  # why the last verdict could not be kept

    async def call() -> tuple[JudgeVerdict | None, str | None]:
        async with judge.slots:  # (a slot per attempt: a backoff holds none)
            return await judge.ask(request)

    for _ in range(PARSE_TRIES):
        start = time.perf_counter()
        # Calls that fail for a while (a rate limit, a lost connection) are retried by the
        # engine's one mechanism (`retries.py`), honouring Retry-After.
        tried = await call_with_retries_async(judge.retries, call, throttle=judge.throttle)
        latency += (time.perf_counter() - start) * 1000.0
        attempts += tried.attempts
        if not tried.ok:
            exc = tried.errors[-1]
            return {"status": JUDGE_ERROR, "attempts": attempts,
                    "message": judge.message(f"{type(exc).__name__}: {exc}")}
        verdict, reply = tried.value or (None, None)
        if verdict is None:
            refused = None
            continue
        reason, refused = judge.kept(verdict.reason, "its reason")
        if refused is None:
            model = judge.kept(verdict.model, "its model") if verdict.model else None
            return {"verdict": verdict.verdict, "reason": reason,
                    "input_tokens": verdict.input_tokens, "output_tokens": verdict.output_tokens,
                    "model": model[0] if model is not None and model[1] is None else None,
                    "latency_ms": round(latency, 3), "attempts": attempts}
        # A reason the store cannot keep (a lone surrogate) is no verdict: asked again.
    said = refused if refused is not None else \
        f"its last reply began: {(reply or '')[:200]!r}"
    return {"status": JUDGE_UNPARSEABLE, "attempts": attempts,
            "message": judge.message(f"the judge's reply is not a verdict (asked {attempts} "
                                     f"times); {said}")}


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _record(evaluator: JudgeCriterion, judge: PanelJudge, ask: JudgeAsk,
            answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The `judge_verdict/v1` record of one case's answers (the majority of its samples), or
    the first failure among them."""
    attempts = sum(int(a.get("attempts", 1)) for a in answers)
    for answer in answers:
        if "status" in answer:
            return {"status": answer["status"], "message": answer["message"],
                    "attempts": attempts, "judge": judge.config.name}
    passes = sum(1 for a in answers if a["verdict"] == "pass")
    verdict = "pass" if passes * 2 > len(answers) else "fail"
    chosen = next(a for a in answers if a["verdict"] == verdict)
    record: dict[str, Any] = {
        "kind": JUDGE_VERDICT_KIND, "judge": judge.config.name,
        "model": chosen.get("model") or judge.label, "criterion": evaluator.criterion,
        "verdict": verdict, "reason": chosen["reason"],
        "input_tokens": _total([a.get("input_tokens") for a in answers]),
        "output_tokens": _total([a.get("output_tokens") for a in answers]),
        "latency_ms": round(sum(float(a["latency_ms"]) for a in answers), 3),
        "attempts": attempts, "shown_digest": ask.shown_digest, "verdict_key": ask.key,
        "shown": ask.shown,
    }
    if len(answers) > 1:
        record["split"] = {"pass": passes, "fail": len(answers) - passes}
        record["samples"] = [{"verdict": a["verdict"], "reason": a["reason"]} for a in answers]
    return record

