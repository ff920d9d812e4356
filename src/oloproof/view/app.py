"""The view's web application: its pages and the JSON API they read (docs/view.md).

Every answer is read from the store at that moment (`store.viewing.read_store`: nothing is
written, not even beside the store) and drawn by the report's own code: a run's page is the
page `oloproof report --html` writes, with its case details served on demand. Only GET (and
HEAD) is answered; anything else is 405, an unknown path 404.

Pages: `/` (the runs), `/runs/RUN` (a run: its report; live while it runs), `/compare?
baseline=A&candidate=B` (the candidate's report with the comparison, broken cases first).
API: `/api/runs`, `/api/runs/RUN`, `/api/runs/RUN/progress`, `/api/runs/RUN/report` (what the
run's page embeds: summary and case list), `/api/runs/RUN/cases?id=ID` (one case's details),
`/api/compare?baseline=A&candidate=B`. A run is named by any run reference (`latest`,
`latest~1`, a unique prefix of its id). Every route answers only a request carrying the view's
token (`access`), unless it was started with `--no-token`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from oloproof.errors import OloproofError, StoreError, UsageError
from oloproof.store.store import Store
from oloproof.store.viewing import read_store
from oloproof.view import pages
from oloproof.view.access import TokenGate

T = TypeVar("T")

#: The JSON API's address, as the pages are told it.
API = "/api/"


class _NotFound(Exception):
    """A run (or a case) that the store does not have."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _resolve(db: Store, ref: str) -> str:
    """A run reference resolved, or _NotFound saying why."""
    try:
        return db.resolve_run(ref)
    except (UsageError, StoreError) as error:
        raise _NotFound(error.message) from None


def _ref(request: Request) -> str:
    return str(request.path_params["run"])


def _json(value: Any, status: int = 200) -> Response:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    return Response(text, status_code=status, media_type="application/json")


class ViewApp:
    """The pages and the API over one store file, read afresh for every answer."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = store_path

    def read(self, work: Callable[[Store], T]) -> T:
        """`work` on the store, read without writing anything."""
        return read_store(self.store_path, work)

    # ---- pages --------------------------------------------------------------------------

    def runs_page(self, request: Request) -> Response:
        if not self.store_path.exists():  # before the first run: an empty list, kept current
            return HTMLResponse(pages.runs_page(None, API))
        return HTMLResponse(self.read(lambda db: pages.runs_page(db, API)))

    def run_page(self, request: Request) -> Response:
        ref = _ref(request)

        def work(db: Store) -> tuple[str, str | None]:
            run_id = _resolve(db, ref)
            if run_id != ref:
                return run_id, None
            return run_id, pages.run_page(db, run_id, API)

        run_id, page = self.read(work)
        if page is None:  # a reference (`latest`): its run's own address, which stays put
            return RedirectResponse(f"/runs/{run_id}", status_code=302)
        return HTMLResponse(page)

    def compare_page(self, request: Request) -> Response:
        baseline, candidate = _pair(request)
        return HTMLResponse(self.read(
            lambda db: pages.compare_page(db, _resolve(db, baseline), _resolve(db, candidate),
                                          API)))

    def board_page(self, request: Request) -> Response:
        """The board (docs/board.md) of the runs named `?run=` (default: the newest run of
        every variant), against `?baseline=` (default: the policy's)."""
        return HTMLResponse(pages.board_page(self.store_path, *_board_query(request)))

    # ---- the JSON API ---------------------------------------------------------------------

    def api_runs(self, request: Request) -> Response:
        if not self.store_path.exists():
            return _json([])
        return _json(self.read(pages.runs_list))

    def api_run(self, request: Request) -> Response:
        ref = _ref(request)
        return _json(self.read(lambda db: pages.run_document(db, _resolve(db, ref))))

    def api_progress(self, request: Request) -> Response:
        ref = _ref(request)
        return _json(self.read(
            lambda db: pages.progress(db, _resolve(db, ref), time.time())))

    def api_report(self, request: Request) -> Response:
        ref = _ref(request)
        return _json(self.read(lambda db: pages.report_data(db, _resolve(db, ref))))

    def api_case(self, request: Request) -> Response:
        ref = _ref(request)
        case_id = request.query_params.get("id")
        if case_id is None:
            raise _BadRequest("give the case as ?id=CASE_ID")

        def work(db: Store) -> str:
            run_id = _resolve(db, ref)
            try:
                return pages.case_detail(db, run_id, case_id)
            except UsageError as error:
                raise _NotFound(error.message) from None

        return Response(self.read(work), media_type="application/json")

    def api_board(self, request: Request) -> Response:
        return _json(pages.board_document(self.store_path, *_board_query(request)))

    def api_compare(self, request: Request) -> Response:
        baseline, candidate = _pair(request)
        return _json(self.read(
            lambda db: pages.comparison(db, _resolve(db, baseline), _resolve(db, candidate))))


class _BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _board_query(request: Request) -> tuple[list[str], str | None]:
    return request.query_params.getlist("run"), request.query_params.get("baseline") or None


def _pair(request: Request) -> tuple[str, str]:
    baseline = request.query_params.get("baseline")
    candidate = request.query_params.get("candidate")
    if not baseline or not candidate:
        raise _BadRequest("give two runs: ?baseline=RUN&candidate=RUN (pick two on the runs "
                          "page)")
    return baseline, candidate


# ---- errors: one clear answer each ------------------------------------------------------------


def _is_api(request: Request) -> bool:
    return request.url.path.startswith(API)


def _error_answer(request: Request, status: int, title: str, error: dict[str, Any],
                  hint: str = "") -> Response:
    if _is_api(request):
        return _json({"error": error}, status)
    return HTMLResponse(pages.message_page(title, str(error.get("message")), hint),
                        status_code=status)


async def _not_found(request: Request, exc: Exception) -> Response:
    message = exc.message if isinstance(exc, _NotFound) else \
        f"there is no page at {request.url.path}"
    return _error_answer(request, 404, "Not found",
                         {"kind": "not_found", "message": message},
                         "The runs page lists what this store holds.")


async def _bad_request(request: Request, exc: Exception) -> Response:
    message = getattr(exc, "message", str(exc))
    return _error_answer(request, 400, "Not a request the view answers",
                         {"kind": "usage", "message": message})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return await _not_found(request, exc)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        message = "the view only reads: it answers GET, and nothing here can be changed"
    else:
        message = str(exc.detail)
    answer = _error_answer(request, exc.status_code, "Not answered",
                           {"kind": "http", "message": message})
    answer.headers.update(headers)
    return answer


async def _oloproof_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, OloproofError)
    if isinstance(exc, StoreError):
        return _error_answer(request, 503, "The store cannot be read", exc.to_json(),
                             "The view reads the store again at every page: fix what the "
                             "message says and reload.")
    if isinstance(exc, UsageError):
        return _error_answer(request, 400, "Not a request the view answers", exc.to_json())
    return _error_answer(request, 500, "The view could not answer", exc.to_json())


# ---- headers every answer carries ------------------------------------------------------------

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGI = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


class _Headers:
    """Adds the headers that keep the answers to this browser tab: a Content-Security-Policy
    (the page's own, for HTML: its script and stylesheet only, `fetch` to this origin; nothing
    at all for anything else), no framing, no sniffing, no caching, no referrer."""

    def __init__(self, app: _ASGI) -> None:
        self.app = app

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: _Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                kind = next((v for k, v in headers if k == b"content-type"), b"")
                policy = pages.page_policy() if kind.startswith(b"text/html") \
                    else "default-src 'none'; frame-ancestors 'none'"
                headers += [(b"content-security-policy", policy.encode("ascii")),
                            (b"x-content-type-options", b"nosniff"),
                            (b"x-frame-options", b"DENY"),
                            (b"referrer-policy", b"no-referrer"),
                            (b"cache-control", b"no-store"),
                            (b"cross-origin-resource-policy", b"same-origin"),
                            (b"cross-origin-opener-policy", b"same-origin")]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def make_app(store_path: Path, allowed_hosts: list[str] | None = None, *,
             token: str | None) -> Starlette:
    """The ASGI application serving the store at `store_path`, read-only.

    `allowed_hosts`: the names the browser may use to reach it (`Host` header); anything else
    is refused, so a web page elsewhere cannot reach the view through a name it controls
    that resolves to this machine. None: 127.0.0.1 and localhost. `token`: what every request
    must carry (`access.TokenGate`); None, given on purpose (`--no-token`), serves anyone.
    """
    view = ViewApp(store_path)
    get = ["GET"]
    routes = [
        Route("/", view.runs_page, methods=get),
        Route("/runs", view.runs_page, methods=get),
        Route("/runs/{run}", view.run_page, methods=get),
        Route("/compare", view.compare_page, methods=get),
        Route("/board", view.board_page, methods=get),
        Route("/api/runs", view.api_runs, methods=get),
        Route("/api/runs/{run}", view.api_run, methods=get),
        Route("/api/runs/{run}/progress", view.api_progress, methods=get),
        Route("/api/runs/{run}/report", view.api_report, methods=get),
        Route("/api/runs/{run}/cases", view.api_case, methods=get),
        Route("/api/compare", view.api_compare, methods=get),
        Route("/api/board", view.api_board, methods=get),
    ]
    hosts = allowed_hosts if allowed_hosts is not None else ["127.0.0.1", "localhost"]
    # Outermost first: every answer gets the headers; a foreign Host is refused before the
    # token is looked at; the token before any route is (docs/view.md#its-token).
    middleware = [Middleware(_Headers), Middleware(TrustedHostMiddleware, allowed_hosts=hosts)]
    if token is not None:
        middleware.append(Middleware(TokenGate, token=token))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            HTTPException: _http_error,
            _NotFound: _not_found,
            _BadRequest: _bad_request,
            OloproofError: _oloproof_error,
        },
    )
    app.state.view = view
    return app
