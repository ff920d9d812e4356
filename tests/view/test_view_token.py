"""`oloproof view` asks for its token on every route (docs/view.md#its-token).

Any local user can reach 127.0.0.1, and the store holds every output of the project: the
view served all of it to whoever asked. Now it makes a token when it starts and prints its
address with it; a page opened with `?token=` gets a cookie and is sent on to its own
address; a script sends `Authorization: Bearer TOKEN`; the token is compared in constant
time; anything without it is refused, 401, with a page (or JSON under `/api/`) that says how
to get in. The pages and the API are otherwise the ones the other tests of this folder read.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.cookies import SimpleCookie
from typing import Any

import pytest
from view_support import ViewServer

import oloproof

ROUTES = ["/", "/runs", "/runs/latest", "/compare?baseline=latest~1&candidate=latest",
          "/api/runs", "/api/runs/latest", "/api/runs/latest/progress",
          "/api/runs/latest/report", "/api/runs/latest/cases?id=c001",
          "/api/compare?baseline=latest~1&candidate=latest", "/nope", "/api/nope"]


@pytest.fixture(scope="module")
def view(new_probe: Callable[[], Any]) -> Iterator[ViewServer]:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(3))
    oloproof.run(probe.root / "oloproof.yaml")
    oloproof.run(probe.root / "oloproof.yaml", no_cache=True)  # two runs: one to compare with
    server = ViewServer(probe.store)
    yield server
    server.close()


def _no_redirect(request: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(Keep).open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as answer:
        return answer.code, dict(answer.headers), answer.read()


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_request_without_the_token(view: ViewServer, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer not-the-token"},
                    {"Cookie": f"oloproof_view_{view.port}=not-the-token"}):
        status, answer_headers, body = view.get(path, headers=headers, token=False)

        assert status == 401, (path, headers, status)
        assert b"run_" not in body and b"c001" not in body
        assert answer_headers["www-authenticate"].startswith("Bearer")
        if path.startswith("/api/"):
            error = json.loads(body)["error"]
            assert error["kind"] == "unauthorized"
            assert "?token=" in error["message"] and "Authorization: Bearer" in error["message"]
        else:
            assert answer_headers["content-type"].startswith("text/html")
            assert b"This view asks for its token" in body and b"?token=" in body
            assert "content-security-policy" in answer_headers  # the page's own headers
    status, _, _ = view.get(path + ("&" if "?" in path else "?") + "token=nope", token=False)
    assert status == 401


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_answers_with_the_token(view: ViewServer, path: str) -> None:
    status, _, _ = view.get(path)

    assert status == (404 if "nope" in path else 200), path


def test_the_printed_address_sets_a_cookie_once(view: ViewServer) -> None:
    assert view.url == f"{view.origin}/?token={view.token}"
    status, headers, _ = _no_redirect(urllib.request.Request(view.url))

    assert status == 303 and headers["location"] == "/"  # the address, without the token
    cookie = SimpleCookie(headers["set-cookie"])[f"oloproof_view_{view.port}"]
    assert cookie.value == view.token
    assert cookie["httponly"] and cookie["samesite"] == "lax" and cookie["path"] == "/"
    # the cookie is all a browser sends from then on
    status, _, body = view.get("/runs/latest", token=False,
                               headers={"Cookie": f"oloproof_view_{view.port}={view.token}"})
    assert status == 200 and b"run_" in body
    # other parameters of the address are kept
    status, headers, _ = _no_redirect(urllib.request.Request(
        f"{view.origin}/compare?baseline=latest&token={view.token}&candidate=latest"))
    assert status == 303
    assert headers["location"] == "/compare?baseline=latest&candidate=latest"


def test_a_script_may_give_the_token_in_the_address(view: ViewServer) -> None:
    status, _, body = _no_redirect(urllib.request.Request(
        f"{view.origin}/api/runs?token={view.token}"))

    assert status == 200 and json.loads(body)[0]["status"] == "complete"


def test_the_token_is_compared_in_constant_time(view: ViewServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from oloproof.view import access

    compared: list[tuple[bytes, bytes]] = []
    real: Callable[[Any, Any], bool] = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", spy)
    # one character changed: its first, to one the token does not start with (a fixed "x"
    # was the token itself once in 64 views)
    wrong = ("y" if view.token.startswith("x") else "x") + view.token[1:]
    assert view.get("/api/runs", token=False,
                    headers={"Authorization": "Bearer " + wrong})[0] == 401
    assert view.get("/api/runs")[0] == 200
    assert (wrong.encode(), view.token.encode()) in compared
    assert (view.token.encode(), view.token.encode()) in compared


def test_each_view_has_a_token_of_its_own(view: ViewServer) -> None:
    other = ViewServer(view.server.config.app.state.view.store_path)  # the same store
    try:
        assert other.token != view.token and len(other.token or "") >= 32
        assert other.get("/api/runs", token=False,
                         headers={"Authorization": f"Bearer {view.token}"})[0] == 401
    finally:
        other.close()


def test_no_token_serves_anyone(view: ViewServer) -> None:
    """`--no-token` (the command warns: tests/view/test_view_cli.py)."""
    open_view = ViewServer(view.server.config.app.state.view.store_path, token=False)
    try:
        assert open_view.url == open_view.origin + "/"
        assert open_view.get("/api/runs", token=False)[0] == 200
    finally:
        open_view.close()
