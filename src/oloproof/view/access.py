"""The view's token (docs/view.md#its-token): who may read the store through it.

Any local user can reach 127.0.0.1, and the store holds every input, output and error message
of the project. So `oloproof view` makes a token when it starts and prints its address with
it (`http://127.0.0.1:7777/?token=…`), as Jupyter does; every request, to every route — the
pages, the JSON API under `/api/`, and addresses there are not — must carry it:

- in the address once: a page opened with `?token=` gets a cookie holding it (HttpOnly,
  SameSite=Lax, named after the port, so two views do not share one) and is sent on to the
  same address without it; an API request with `?token=` is answered as it is;
- in that cookie, as the browser sends it with every later request;
- or in a header, for scripts: `Authorization: Bearer TOKEN`.

What is given is compared with the token in constant time (`hmac.compare_digest`). A request
without it is refused, 401, with a page (or, under `/api/`, a JSON error) saying how to get in.
`--no-token` serves without one, and the command warns that anyone on the machine can then
read the store.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGI = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

#: The query parameter the printed address carries.
PARAMETER = "token"

HOW_TO_GET_IN = (
    "This view of an Oloproof store asks for the token it printed when it started: open the "
    "address `oloproof view` printed (it ends with ?token=…), or start `oloproof view` again for "
    "a new one. A script sends the token in a header: Authorization: Bearer TOKEN."
)


def new_token() -> str:
    """A token no one can guess: 32 characters, 192 random bits."""
    return secrets.token_urlsafe(24)


def address_with(url: str, token: str | None) -> str:
    """The address to print and open: `url` with the token, when there is one."""
    return url if token is None else f"{url}?{urlencode({PARAMETER: token})}"


def _same(given: str | None, token: str) -> bool:
    """Whether `given` is the token, in time that does not depend on where they differ."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode("ascii"))


def _cookie_name(scope: _Scope) -> str:
    server = scope.get("server") or ("", 0)
    return f"oloproof_view_{server[1]}"


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


class TokenGate:
    """ASGI middleware that answers only requests carrying the token (see the module)."""

    def __init__(self, app: _ASGI, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        cookie = _cookie_name(scope)
        in_address = request.query_params.get(PARAMETER)
        if in_address is not None and _same(in_address, self.token) \
                and not request.url.path.startswith("/api/"):
            # A page opened from the printed address: the cookie, then the address without it.
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != PARAMETER]
            clean = request.url.path + (f"?{urlencode(kept)}" if kept else "")
            answer: Response = RedirectResponse(clean, status_code=303)
            answer.set_cookie(cookie, self.token, httponly=True, samesite="lax", path="/")
            await answer(scope, receive, send)
            return
        if any(_same(given, self.token) for given in
               (in_address, request.cookies.get(cookie), _bearer(request))):
            await self.app(scope, receive, send)
            return
        await _refused(request)(scope, receive, send)


def _refused(request: Request) -> Response:
    """401, saying how to get in: JSON under `/api/`, a page elsewhere."""
    headers = {"www-authenticate": 'Bearer realm="oloproof view"'}
    if request.url.path.startswith("/api/"):
        body = json.dumps({"error": {"kind": "unauthorized", "message": HOW_TO_GET_IN}},
                          ensure_ascii=False)
        return Response(body, status_code=401, media_type="application/json", headers=headers)
    from oloproof.view import pages

    return HTMLResponse(pages.message_page("This view asks for its token", HOW_TO_GET_IN),
                        status_code=401, headers=headers)
