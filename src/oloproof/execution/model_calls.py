"""A called model (docs/judges.md, docs/conversations.md#simulators): one `judges:` or
`simulators:` entry in this process — its `AsyncOpenAI` client or the user's function, the
semaphore of its concurrency, its retries and rate-limit throttle — and what its text may bring
into the store.

`CalledEntry` is what a judge and a simulator share: each call holds a slot of the entry's
concurrency (shared out over the worker processes), is bounded whole by `timeout_s` (the reply's
body included: `bounded`), and is retried by the engine's one mechanism
(`retries.call_with_retries_async`); the SDK's own retries are off. Text from the reply is
blotted of the API key, should it repeat it, capped in size and refused when the store cannot
hold it, by `model_text`'s functions (`kept`, `message`); its token counts are whole numbers from
0 or dropped (`replies.token_count`), the model it names cut to 200 characters and kept as a
text is, else the entry's own.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from oloproof.execution import model_text
from oloproof.execution.retries import RetryPolicy, Throttle
from oloproof.replies import token_count
from oloproof.suite.config import (
    JUDGE_RETRIES_CALLABLE,
    JUDGE_RETRIES_MODEL,
    JUDGE_RETRY_ATTEMPTS,
    CalledModel,
)

T = TypeVar("T")

#: What the model a reply names is cut to.
_MODEL_NAME_CAP = 200


def entry_retries(config: CalledModel) -> RetryPolicy:
    """What this entry's calls retry (docs/judges.md#where-a-judge-sits): its `retries:`,
    else a model's rate limits and lost connections, a callable's `ConnectionError` and
    `TimeoutError`, 3 times. LookupError naming an exception class that does not import."""
    retries = config.retries
    if retries is not None:
        return RetryPolicy.named(retries.on, attempts=retries.attempts,
                                 backoff_s=retries.backoff_s,
                                 max_backoff_s=retries.max_backoff_s)
    names = JUDGE_RETRIES_MODEL if config.model is not None else JUDGE_RETRIES_CALLABLE
    return RetryPolicy.named(names, attempts=JUDGE_RETRY_ATTEMPTS)


def import_function(reference: str) -> Callable[..., Any]:
    """`module:function` imported (modules are imported from the project's folder); a
    LookupError saying what is wrong."""
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


@dataclass(frozen=True, slots=True)
class Completion:
    """What one chat completion brought: the reply's text and what the endpoint counted, or
    (`problem`) why the body was no completion at all."""

    text: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    problem: str | None = None


class CalledEntry:
    """One `judges:` or `simulators:` entry in this process (see the module docstring)."""

    #: What the entry is called in messages: `judge`, `simulator`.
    what = "entry"

    def __init__(self, config: CalledModel, share: int) -> None:
        self.config = config
        # The concurrency is over the run: each of `share` worker processes takes its part
        # (at least one call).
        self.limit = max(1, -(-config.concurrency // max(1, share)))
        self._slots: asyncio.Semaphore | None = None
        self._client: Any = None
        self._function: Callable[..., Any] | None = None
        self._threads: ThreadPoolExecutor | None = None
        self.calls = 0
        self.retries = entry_retries(config)
        # (a rate limit pauses this entry's new calls in this process)
        self.throttle = Throttle()

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:  # made on the loop that uses it
            self._slots = asyncio.Semaphore(self.limit)
        return self._slots

    @property
    def label(self) -> str:
        """What a record names as the entry's model."""
        return self.config.model or self.config.callable or self.config.name

    def secret(self) -> str | None:
        """The API key, read when the entry is called (never stored)."""
        if self.config.model is None:
            return None
        return os.environ.get(self.config.key_variable) or None

    def scrub(self, text: str) -> str:
        """`text` with the API key, should the reply or an error repeat it, blotted out
        (`model_text.blotted`)."""
        return model_text.blotted(text, self.secret())

    def kept(self, text: str, name: str) -> tuple[str, str | None]:
        """(a text of the reply as it is kept: blotted, capped; why the store cannot keep it,
        in words starting with `name`, or None) (`model_text.kept`)."""
        return model_text.kept(text, self.secret(), name, what=self.what)

    def message(self, text: str) -> str:
        """An error's message as it is kept: blotted, capped, a lone surrogate written out
        (`model_text.message`)."""
        return model_text.message(text, self.secret(), self.what)

    def ready(self) -> None:
        """The entry's function (and a sync one's threads, as many as slots), or its client."""
        if self.config.callable is not None:
            if self._function is None:
                self._function = import_function(self.config.callable)
            if self._threads is None and not inspect.iscoroutinefunction(self._function):
                self._threads = ThreadPoolExecutor(self.limit, f"oloproof-{self.what}")
        elif self._client is None:
            from openai import AsyncOpenAI

            # The SDK's own retries are off: retrying is the engine's, in one place.
            self._client = AsyncOpenAI(api_key=self.secret() or "",
                                       base_url=self.config.base_url, max_retries=0,
                                       timeout=self.config.timeout_s)

    @property
    def client(self) -> Any:
        """The `AsyncOpenAI` client (after `ready`)."""
        return self._client

    async def call_function(self, request: Any) -> Any:
        """The user's function called with `request` (a sync one in the entry's threads)."""
        function = self._function
        assert function is not None, "made ready before the call"
        if inspect.iscoroutinefunction(function):
            return await function(request)
        value = await asyncio.get_running_loop().run_in_executor(self._threads, function,
                                                                 request)
        if inspect.isawaitable(value):
            value = await value
        return value

    async def completion(self, messages: Sequence[dict[str, str]],
                         response_format: dict[str, Any], **options: Any) -> Completion:
        """One chat completion of the entry's model (after `ready`), asking for
        `response_format` where `structured_output` says the endpoint takes it; `options` go
        to the request as they are (a simulator's `seed`)."""
        from openai import APIResponseValidationError

        if self.config.structured_output:
            # Sent as it is (`extra_body`): the SDK's typed transform walks a nested schema
            # field by field on every call, most of the client's time per call.
            options["extra_body"] = {"response_format": response_format}
        if self.config.max_tokens is not None:
            options["max_tokens"] = self.config.max_tokens
        try:
            response = await self.client.chat.completions.create(
                model=self.config.model, messages=list(messages),
                temperature=self.config.temperature, **options)
        except (json.JSONDecodeError, APIResponseValidationError) as exc:
            # A reply, but not a completion (a body cut off, not JSON): no answer either.
            return Completion(problem=f"a body that is not a chat completion "
                                      f"({type(exc).__name__}: {exc})")
        choices = getattr(response, "choices", None) or []
        usage = getattr(response, "usage", None)
        named = getattr(response, "model", None)
        if isinstance(named, str):  # (the server's words: kept as a text is, cut shorter)
            named, problem = self.kept(named[:_MODEL_NAME_CAP], "its model")
            named = None if problem else named
        return Completion(
            text=choices[0].message.content if choices and choices[0].message else None,
            input_tokens=token_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=token_count(getattr(usage, "completion_tokens", None)),
            model=named or self.config.model)

    async def bounded(self, call: Callable[[], Awaitable[T]]) -> T:
        """One call, bounded whole by the entry's `timeout_s` — the reply's body included,
        which a timeout between two reads of it never bounds (a server trickling it a byte at
        a time): a `TimeoutError` past it, which the entry retries by default."""
        self.calls += 1
        self.ready()  # (importing the SDK or the function is not the call: not timed)
        deadline = asyncio.timeout(self.config.timeout_s)
        try:
            async with deadline:
                return await call()
        except TimeoutError:
            if not deadline.expired():  # the function's own TimeoutError
                raise
            raise TimeoutError(f"the {self.what} did not answer within timeout_s="
                               f"{self.config.timeout_s:g} s (the whole call, its reply "
                               "included)") from None

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False)


__all__ = ["CalledEntry", "Completion", "entry_retries", "import_function"]
