"""A scripted OpenAI-compatible server for judges (tests and benchmarks/judges.py share it).

The standard library's `ThreadingHTTPServer` in a thread, on 127.0.0.1 and a free port the
caller does not choose: `POST /v1/chat/completions` answers a chat completion whose content is
a verdict, decided by `decide(user_text)`, after `delay_s`. Markers in the user message script
the failures a real endpoint has:

- `[429]`: the first request for this text is a rate limit (status 429, `retry-after`), the
  next ones answer;
- `[500]`: always a server error (500);
- `[garbage]`: always a reply that is not a verdict; `[garbage-once]`: not a verdict the first
  time, a verdict after; `[broken-body]`: a 200 whose body is cut off mid-JSON;
  `[no-choices]`: a completion without choices;
- `[split]`: the verdict turned the other way on every second request for this text (three
  samples of one case: 2 to 1);
- `[401]`: an authentication error whose message repeats the key it was sent, as some servers
  do (the client must never store or print it);
- hostile replies, each a verdict: `[echo-key]` a reason that repeats the key it was sent;
  `[long-reason]` a reason of `LONG_REASON` characters; `[surrogate]` a reason holding a lone
  surrogate (`\\ud800` in the JSON); `[bad-usage]` token counts that are no counts (-5 and
  Infinity); `[trickle]` a body sent one byte every `TRICKLE_S` (headers at once), which no
  timeout between two reads ever catches.

Every request is kept (`requests`: its JSON body and its Authorization header), so a test can
see what was sent and count the calls; `peak` is the most requests it held at once and `span_s`
the time from the first request's arrival to the last one's answer (`mark()` starts both
afresh).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: How long a `[long-reason]` reason is.
LONG_REASON = 200_000
#: The pause between two bytes of a `[trickle]` body.
TRICKLE_S = 0.25


class Trickle(bytes):
    """A body sent a byte at a time."""


def sections(text: str) -> dict[str, str]:
    """The shown fields of a prompt as a reader of it finds them: between the BEGIN and END
    lines it declares, or, in a prompt without them, under `### NAME` headings, the first of
    each name (a model reading the prompt top down)."""
    found = re.search(r"^<<<BEGIN \S+ (\S+)>>>$", text, re.MULTILINE)
    if found is not None:
        code = re.escape(found.group(1))
        return dict(re.findall(rf"^<<<BEGIN (\S+) {code}>>>\n(.*?)\n<<<END \1 {code}>>>$",
                               text, re.MULTILINE | re.DOTALL))
    fields: dict[str, str] = {}
    for part in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        name, _, body = part.partition("\n")
        fields.setdefault(name.strip(), body)
    return fields


def refund_truth(text: str) -> str:
    """The default rule: pass when the reply's text and the tool results agree that the refund
    went through (or no refund is claimed)."""
    fields = sections(text)
    claims = "refunded" in fields.get("output.answer", "").lower()
    results = fields.get("trajectory.tool_results", "")
    failed = '"status": "failed"' in results or "'status': 'failed'" in results
    return "fail" if claims and failed else "pass"


@dataclass
class ScriptedServer:
    """The server, started by `start()` and stopped by `stop()` (or as a context manager)."""

    decide: Callable[[str], str] = refund_truth
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    peak: int = 0
    _in_flight: int = 0
    _first: float | None = None
    _last: float | None = None
    _seen: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def span_s(self) -> float:
        with self._lock:
            return 0.0 if self._first is None or self._last is None else \
                self._last - self._first

    def mark(self) -> None:
        """Measure `peak` and `span_s` from here."""
        with self._lock:
            self.peak, self._first, self._last = self._in_flight, None, None

    def start(self) -> ScriptedServer:
        script = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with script._lock:
                    script._in_flight += 1
                    script.peak = max(script.peak, script._in_flight)
                    if script._first is None:
                        script._first = time.perf_counter()
                try:
                    status, headers, reply = script.answer(body,
                                                           self.headers.get("authorization"))
                finally:
                    with script._lock:
                        script._in_flight -= 1
                        script._last = time.perf_counter()
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if not isinstance(reply, Trickle):
                    self.wfile.write(data)
                    return
                try:
                    for at in range(len(data)):
                        self.wfile.write(data[at:at + 1])
                        self.wfile.flush()
                        time.sleep(TRICKLE_S)
                except OSError:  # the client gave up: what the test wants
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # (the default, 5, refuses a judge's 32 connections)
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, body: dict[str, Any], authorization: str | None
               ) -> tuple[int, dict[str, str], dict[str, Any] | bytes]:
        """The status, headers and JSON body of the reply to one request."""
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        with self._lock:
            self.requests.append({"body": body, "authorization": authorization})
            seen = self._seen[text] = self._seen.get(text, 0) + 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if "[401]" in text:
            key = (authorization or "").removeprefix("Bearer ")
            return 401, {}, {"error": {"message": f"Incorrect API key provided: {key}",
                                       "type": "invalid_request_error",
                                       "code": "invalid_api_key"}}
        if "[500]" in text:
            return 500, {}, {"error": {"message": "the server broke", "type": "server_error"}}
        if "[429]" in text and seen == 1:
            return 429, {"retry-after": "0.05"}, {"error": {"message": "slow down",
                                                             "type": "rate_limit"}}
        if "[broken-body]" in text:
            return 200, {}, b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "{\\"verd'
        if "[no-choices]" in text:
            return 200, {}, {"id": "chatcmpl-0", "object": "chat.completion", "created": 0,
                             "model": str(body.get("model")), "choices": []}
        if "[garbage]" in text or ("[garbage-once]" in text and seen == 1):
            content = "I think this one is probably fine?"
        else:
            verdict = self.decide(text)
            if "[split]" in text and seen % 2 == 0:
                verdict = "pass" if verdict == "fail" else "fail"
            reason = f"scripted: {verdict}"
            if "[echo-key]" in text:
                reason += f" (asked with key {(authorization or '').removeprefix('Bearer ')})"
            if "[long-reason]" in text:
                reason += " because" * (LONG_REASON // 8)
                reason = reason[:LONG_REASON]
            if "[surrogate]" in text:
                reason += " \ud800 here"
            content = json.dumps({"verdict": verdict, "reason": reason})
        usage: dict[str, Any] = {"prompt_tokens": len(text) // 4, "completion_tokens": 12,
                                 "total_tokens": len(text) // 4 + 12}
        if "[bad-usage]" in text:
            usage = {"prompt_tokens": -5, "completion_tokens": float("inf"),
                     "total_tokens": "many"}
        completion = {
            "id": f"chatcmpl-{seen}", "object": "chat.completion", "created": 0,
            "model": str(body.get("model")) + "-served",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage,
        }
        if "[trickle]" in text:
            return 200, {}, Trickle(json.dumps(completion).encode())
        return 200, {}, completion


def serve(delay_s: float) -> None:
    """Serve in this process until stdin closes, printing the base URL first and, at the end,
    how many requests came (`python scripted_openai.py DELAY_S`: benchmarks/judges.py runs it
    in a process of its own, so the server does not share the measured run's interpreter).
    A line `count` on stdin prints how many requests came so far; `mark` starts measuring
    afresh, and `stats` prints `{"calls", "peak", "span_s"}` as JSON."""
    import sys

    with ScriptedServer(delay_s=delay_s) as server:
        print(server.base_url, flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "count":
                print(server.calls, flush=True)
            elif command == "mark":
                server.mark()
                print("marked", flush=True)
            elif command == "stats":
                print(json.dumps({"calls": server.calls, "peak": server.peak,
                                  "span_s": round(server.span_s, 3)}), flush=True)
        print(server.calls, flush=True)


if __name__ == "__main__":
    import sys

    serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
