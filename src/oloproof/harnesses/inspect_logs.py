"""Inspect AI eval logs (`.eval`, `.json`) read as trials (docs/imports.md#inspect-ai):
`read_inspect_log`.

Read through Inspect's own log API (the `inspect` extra: `pip install -e '.[inspect]'` in the
checkout), imported only when a log is read. The header comes from
`read_eval_log(header_only=True)`; the samples of a `.eval` log (Inspect's default format, a zip
of one file per sample) are streamed, 256 at a time, as Inspect's own sample reader reads one
(`EvalRecorder.read_log_sample`: the member's bytes through Inspect's zip reader, `json.loads`,
`EvalSample.model_validate` in Inspect's deserializing context), with one zip reader for the
whole log (on an event loop of its own, in a thread), the fields nothing here reads (the events)
dropped before validation: memory stays flat whatever the number of samples. (Inspect's own
`read_eval_log_samples` opens the zip's directory again for every sample, so its time grows with
the square of their number; its `exclude_fields` streams each sample through a token-by-token
Python builder, which took 2.7x the CPU of parsing the whole member with `json.loads`.) A
`.json` log is one JSON document, which Inspect reads whole (`read_eval_log`): its samples are
held in memory together.

The mapping (each row in docs/imports.md): a sample is a case (its id as text), an epoch a
trial; each scorer a criterion named after it (a dict-valued score one criterion per key,
`scorer.key`); `C`/`I` the values 1/0, `P` 0.5, `N` 0, a number in [0, 1] itself (as Inspect's
`value_to_float` has them), each passed at `pass_at` or more (default 1.0: full credit),
True/False passed/failed, NaN (Inspect's unscored) missing `unscored`, anything else a named
skip; a sample with an `error` errored `system_error`, one a limit stopped errored `limit`;
messages the trajectory; `model_usage` the tokens and cost.
"""

from __future__ import annotations

import asyncio
import json
import math
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oloproof.errors import TraceError, install_extra
from oloproof.harnesses.records import (
    ImportedError,
    ImportedScore,
    ImportedSkip,
    ImportedTrial,
    ImportSummary,
    check_pass_at,
)
from oloproof.traces.reading import TraceReading, TraceUsage, TrajectoryBuilder, maybe_json

#: Samples read per batch: Inspect reads a batch concurrently; the batch bounds the memory.
BATCH = 256
#: Samples of a batch read from the zip at once (each one's bytes are held until it is parsed).
READING = 32
#: Sample fields nothing here reads, dropped before validation (`.eval` logs only). Inspect
#: keeps a message's text in the message; `attachments` holds what it pooled from the events
#: (and images, which stay `attachment://` references in a trajectory).
_UNREAD = frozenset({"events", "events_data", "timelines", "store", "attachments"})
#: Inspect's reducer that makes its accuracy the mean over epochs (the default).
MEAN_REDUCER = "mean"

#: Inspect's grades as the values its `value_to_float` gives them (its accuracy's).
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


@dataclass
class InspectLog:
    """One Inspect log: what its header says, and its trials when `trials()` is iterated.

    Attributes:
        path: the log file.
        task, task_version, model: the eval's task, its version and the model it ran.
        revision: the git commit the eval ran at (with `-dirty` when the tree had changes), or
            None when Inspect recorded none.
        status: Inspect's status of the eval (`success`, `error`, `cancelled`, `started`).
        epochs: how many epochs each sample was run.
        reducers: the epoch reducers the log names (Inspect's default is `mean`).
        sample_ids: the samples, as text, in the log's order.
        scorers: the scorers, in the log's order.
        warnings: what the import should say (a reducer other than the mean, a log that
            did not finish).
        summary: counts of what `trials()` met so far.
        pass_at: the value at or above which a score passes (docs/imports.md#partial-credit).
    """

    path: Path
    task: str
    task_version: str
    model: str
    revision: str | None
    status: str
    epochs: int
    reducers: tuple[str, ...]
    sample_ids: tuple[str, ...]
    scorers: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)
    summary: ImportSummary = field(default_factory=ImportSummary)
    pass_at: float = 1.0
    _ids: tuple[str | int, ...] = ()

    @property
    def system_name(self) -> str:
        """The system an import stores this run under: the task run by the model."""
        return f"{self.task} ({self.model})"

    @property
    def system_version(self) -> str:
        """The task's version, and the revision the eval ran at when recorded."""
        return self.task_version if self.revision is None else (
            f"{self.task_version}+{self.revision}")

    def trials(self) -> Iterator[ImportedTrial]:
        """Every sample × epoch of the log as an `ImportedTrial`, in the log's order (a `.eval`
        log sample by sample, each sample's epochs in turn; a `.json` log as Inspect sorted
        it, epoch by epoch). A sample × epoch the log does not hold (an eval that did not
        finish) is not yielded.

        Raises:
            TraceError: naming the log, when a sample cannot be read.
        """
        for sample in _samples(self):
            yield self.summary.count(trial_of(sample, str(self.path), self.pass_at))


def read_inspect_log(path: str | Path, *, pass_at: float = 1.0) -> InspectLog:
    """Read an Inspect eval log's header; its trials stream from `.trials()`, each score
    passed at `pass_at` or more (docs/imports.md#partial-credit).

    Raises:
        TraceError: naming the file, when it is not an Inspect log Inspect can read, or when
            `inspect-ai` is not installed.
    """
    where = Path(path)
    check_pass_at(pass_at)
    log_api = _inspect_log_api(where)
    if not where.is_file():
        raise TraceError("no such Inspect log", file=where)
    try:
        header = log_api.read_eval_log(str(where), header_only=True)
    except Exception as exc:  # Inspect raises what its readers raise: say it, with the file
        raise TraceError(f"Inspect cannot read this log: {type(exc).__name__}: {exc}",
                         file=where) from None
    spec = header.eval
    ids = tuple(spec.dataset.sample_ids or ())
    if not ids and spec.dataset.samples:
        raise TraceError("the log lists no sample ids (Inspect writes them since 0.3.x; "
                         "read and write the log again with Inspect to add them)", file=where)
    texts = tuple(str(i) for i in ids)
    if len(set(texts)) != len(texts):
        twice = sorted({t for t in texts if texts.count(t) > 1})
        raise TraceError(f"sample ids {', '.join(twice)} stand for two samples once read as "
                         f"text (an integer and a string)", file=where)
    reducers = tuple(spec.config.epochs_reducer or (MEAN_REDUCER,))
    revision = None
    if spec.revision is not None:
        revision = spec.revision.commit + ("-dirty" if spec.revision.dirty else "")
    scorers: list[str] = [s.name for s in spec.scorers or ()]
    log = InspectLog(
        path=where, task=spec.task, task_version=str(spec.task_version), model=spec.model,
        revision=revision, status=header.status, epochs=spec.config.epochs or 1,
        reducers=reducers, sample_ids=texts, scorers=tuple(scorers), pass_at=pass_at, _ids=ids,
    )
    if any(r != MEAN_REDUCER for r in reducers):
        log.warnings.append(
            f"the log reduces epochs by {', '.join(reducers)}, not the mean: Inspect's figures "
            f"are of that reduction, the imported rates are over every trial")
    if header.status != "success":
        log.warnings.append(f"the eval ended {header.status}: only the samples it logged "
                            f"are read")
    return log


def _inspect_log_api(where: Path) -> Any:
    try:
        import inspect_ai.log as log_api
    except ImportError:
        raise TraceError("reading an Inspect log needs the inspect-ai package; "
                         f"{install_extra('inspect')}", file=where) from None
    return log_api


def _samples(log: InspectLog) -> Iterator[Any]:
    if log.path.suffix == ".json":
        yield from _json_samples(log.path)
        return
    api = _inspect_log_api(log.path)
    keys: list[tuple[str | int, int]] = [(i, e) for i in log._ids
                                         for e in range(1, log.epochs + 1)]
    if log.status != "success":  # only what was logged: the summaries say which
        summaries = api.read_eval_log_sample_summaries(str(log.path))
        present = {(str(s.id), s.epoch) for s in summaries}
        keys = [k for k in keys if (str(k[0]), k[1]) in present]
    yield from _batches(log.path, keys)


_END = object()


def _batches(path: Path, keys: list[tuple[str | int, int]]) -> Iterator[Any]:
    """The samples of `keys`, BATCH at a time, read by Inspect on one event loop in a thread
    with one zip reader for the whole log: a reader per batch parsed the zip's directory
    again for every batch (with 30,000 samples, time and memory grew with the log)."""
    handoff: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def give(item: Any) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    async def read() -> None:
        from inspect_ai._util.async_zip import AsyncZipReader
        from inspect_ai._util.asyncfiles import AsyncFilesystem, get_async_filesystem
        from inspect_ai._util.constants import get_deserializing_context
        from inspect_ai.log import EvalSample
        from inspect_ai.log._recorders.eval import SAMPLES_DIR

        reading = asyncio.Semaphore(READING)

        async def sample(key: tuple[str | int, int]) -> Any:
            async with reading:
                # (the member Inspect writes a sample to: its `_sample_filename`)
                data = await reader.read_member_fully(
                    f"{SAMPLES_DIR}/{key[0]}_epoch_{key[1]}.json")
            # (as EvalRecorder.read_log_sample reads a sample, but the fields left unread)
            fields = json.loads(data)
            for unread in _UNREAD:
                fields.pop(unread, None)
            return EvalSample.model_validate(fields, context=get_deserializing_context())

        async with AsyncFilesystem():  # as Inspect's own sync readers do
            reader = AsyncZipReader(get_async_filesystem(), str(path))
            for start in range(0, len(keys), BATCH):
                try:
                    batch = await asyncio.gather(*(sample(k)
                                                   for k in keys[start:start + BATCH]))
                except Exception as exc:
                    give(TraceError(f"Inspect cannot read samples {start + 1}–"
                                    f"{min(start + BATCH, len(keys))}: "
                                    f"{type(exc).__name__}: {exc}", file=path))
                    return
                if not give(batch):
                    return
        give(_END)

    def run() -> None:
        try:
            asyncio.run(read())
        except BaseException as exc:  # pragma: no cover - handed to the reading thread
            give(exc)

    worker = threading.Thread(target=run, name="oloproof-inspect-log", daemon=True)
    worker.start()
    try:
        while True:
            item = handoff.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        worker.join()


def _json_samples(path: Path) -> Iterator[Any]:
    api = _inspect_log_api(path)
    try:
        log = api.read_eval_log(str(path))
    except Exception as exc:
        raise TraceError(f"Inspect cannot read this log: {type(exc).__name__}: {exc}",
                         file=path) from None
    yield from log.samples or ()


# --- one sample ---------------------------------------------------------------------------


def trial_of(sample: Any, source: str = "", pass_at: float = 1.0) -> ImportedTrial:
    """One Inspect `EvalSample` as an `ImportedTrial`, each score passed at `pass_at` or
    more."""
    scores: list[ImportedScore] = []
    skipped: list[ImportedSkip] = []
    for name, score in (sample.scores or {}).items():
        value = score.value
        if isinstance(value, Mapping):
            for key, part in value.items():
                _score(f"{name}.{key}", part, scores, skipped, score.reason, pass_at)
        else:
            _score(name, value, scores, skipped, score.reason, pass_at)
    reading = read_messages(sample.messages, usage=usage_of(sample.model_usage))
    error: ImportedError | None = None
    if sample.error is not None:
        error = ImportedError("system_error", sample.error.message,
                              traceback=sample.error.traceback or None)
    elif sample.limit is not None:
        error = ImportedError("limit", sample.limit.reason or f"{sample.limit.type} limit",
                              detail=f"{sample.limit.type} limit {sample.limit.limit:g}")
    return ImportedTrial(
        case_id=str(sample.id), trial=sample.epoch,
        status="errored" if error is not None else "scored",
        scores=tuple(scores), error=error, trajectory=reading.trajectory, usage=reading.usage,
        input=sample.input if isinstance(sample.input, str) else reading.input,
        output=reading.output, skipped=tuple(skipped),
        source=f"{source} sample {sample.id} epoch {sample.epoch}".strip(),
    )


def _score(criterion: str, value: Any, scores: list[ImportedScore],
           skipped: list[ImportedSkip], reason: str | None, pass_at: float) -> None:
    if isinstance(value, str) and value in _GRADES:
        number = _GRADES[value]
        scores.append(ImportedScore(criterion, number, number >= pass_at, recorded=value))
    elif isinstance(value, bool):
        scores.append(ImportedScore(criterion, float(value), value, recorded=value))
    elif isinstance(value, int | float) and math.isnan(value):
        scores.append(ImportedScore(criterion, None, None, missing=reason or "unscored",
                                    recorded=None))
    elif isinstance(value, int | float) and 0 <= value <= 1:
        scores.append(ImportedScore(criterion, float(value), value >= pass_at, recorded=value))
    elif isinstance(value, int | float):
        skipped.append(ImportedSkip(criterion, f"number {value:g} outside [0, 1]"))
    elif isinstance(value, str):
        skipped.append(ImportedSkip(criterion, f"text value {value!r}"))
    elif value is None:
        skipped.append(ImportedSkip(criterion, "no value"))
    else:
        skipped.append(ImportedSkip(criterion, f"a {type(value).__name__} value"))


def usage_of(model_usage: Mapping[str, Any]) -> TraceUsage | None:
    """Tokens and cost summed over the models a sample used (input tokens with the cached
    ones, as Inspect counts a call's whole input); None when nothing was recorded."""
    if not model_usage:
        return None
    prompt = completion = 0
    cost: float | None = None
    for usage in model_usage.values():
        prompt += (usage.input_tokens + (usage.input_tokens_cache_read or 0)
                   + (usage.input_tokens_cache_write or 0))
        completion += usage.output_tokens
        if usage.total_cost is not None:
            cost = (cost or 0.0) + usage.total_cost
    return TraceUsage(prompt, completion, cost)


def read_messages(messages: list[Any], *, usage: TraceUsage | None = None) -> TraceReading:
    """Inspect chat messages as a trajectory: user and assistant messages `message` steps
    (system messages are instructions: none), an assistant's tool calls `tool_call` steps,
    tool messages `tool_result` steps matched by call id, the last assistant message that
    calls nothing `final`."""
    builder = TrajectoryBuilder("inspect")
    for message in messages:
        role = message.role
        if role == "tool":
            call = builder.known_call(message.tool_call_id)
            if call is None or call.answered:
                builder.skipped["tool_message_without_call"] += 1
                continue
            if message.error is not None:
                builder.result(call, {"error": message.error.message,
                                      "type": message.error.type})
            else:
                builder.result(call, maybe_json(_text(message)))
            continue
        text = _text(message)
        if role == "assistant":
            if any(getattr(part, "type", None) == "reasoning" for part in _parts(message)):
                builder.ignored["reasoning"] += 1
            calls = message.tool_calls or []
            if text not in ("", None) or not calls:
                builder.message("assistant", text)
            for tool_call in calls:
                builder.call(tool_call.function, tool_call.arguments, call_id=tool_call.id)
        elif role in ("user", "system"):
            builder.message(role, text)
        else:  # pragma: no cover - Inspect has no other role
            builder.skipped[f"message:role={role}"] += 1
    return builder.finish(usage=usage)


def _parts(message: Any) -> list[Any]:
    content = message.content
    return [] if isinstance(content, str) else list(content)


def _text(message: Any) -> Any:
    content = message.content
    if isinstance(content, str):
        return content
    kinds = {getattr(part, "type", None) for part in content}
    if kinds <= {"text", "reasoning"}:
        return message.text  # the text parts, joined; reasoning is not the message
    return [part.model_dump(exclude_none=True) for part in content]
