"""`oloproof report RUN --html FILE`: one self-contained, offline HTML report
(docs/cli.md#oloproof-report).

This module renders a run's report data (`html_data`); finding the stored run is
`oloproof.api.write_html_report`'s job, writing the page `output_files`'.

The page is a template (`assets/report.html`) with its stylesheet and script inlined and the
run's data embedded as JSON. Every value from a case or a system is untrusted text:

- embedded JSON has `<`, `>` and `&` written as `\\u003c`, `\\u003e`, `\\u0026`, so no value can
  end a `<script>` element or open a comment, and it is read with `JSON.parse`, never evaluated;
- the script builds the page with `textContent` and DOM calls, never `innerHTML` with data;
- a Content-Security-Policy allows only this page's own script and stylesheet (by hash) and no
  network access of any kind, so even a mistake could neither run injected code nor fetch.

`oloproof view` serves the same pages (`render_page(..., served=API)`): the same template,
script and data, with case details read from the view's JSON API on the same origin — the
policy then allows that origin for `fetch` (`connect-src 'self'`) and nothing else. The runs
page (`render_runs_page`) is drawn by the same helpers from the same kind of embedded data.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from oloproof.placeholders import filled
from oloproof.report.escape import UNSAFE
from oloproof.report.html_data import ReportData, dumps

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
            "\u2029": "\\u2029"}


def script_safe(text: str) -> str:
    """JSON text made safe inside a `<script>` element (no `</script>`, no `<!--`)."""
    # One `str.replace` per character: each is one pass in C, where `str.translate` with a
    # table looks every character up (0.13 s of a 20,000-case run's 1.3 MB page).
    for char, escaped in _ESCAPES.items():
        if char in text:
            text = text.replace(char, escaped)
    return text


@cache
def _asset(name: str) -> str:
    return (resources.files("oloproof.report") / "assets" / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: What a page without JavaScript says instead of drawing itself.
_NOSCRIPT = {
    "file": ("This report draws itself with the script inside this file; nothing is fetched "
             "from anywhere. Allow JavaScript for this file to read it, or read the same run in "
             "a terminal with <code>oloproof inspect RUN</code>."),
    "served": ("This page draws itself with its own script, reading only from the Oloproof view "
               "that served it. Allow JavaScript for this address, or read the runs in a "
               "terminal with <code>oloproof runs</code> and <code>oloproof inspect RUN</code>."),
}


def _script(*names: str) -> str:
    """The page's one script: these assets in order (the DOM helpers first)."""
    return "\n".join(_asset(name) for name in names)


def content_security_policy(style: str, script: str, served: bool) -> str:
    """The page's policy: its own stylesheet and script only (by hash); served by the view,
    `fetch` to the same origin (the JSON API) and links to it, nothing else."""
    return ("default-src 'none'; base-uri 'none'; img-src data:; "
            + ("form-action 'self'; connect-src 'self'; " if served else "form-action 'none'; ")
            + f"style-src {_csp_hash(style)}; script-src {_csp_hash(script)}")


def _page(title: str, payload: dict[str, Any], script: str, *, served: bool,
          extra_blocks: Sequence[str] = ()) -> str:
    """A page: the template with the stylesheet, the data blocks and the script inlined."""
    style = _asset("report.css")
    for name, text, closing in (("report.css", style, "</style"),
                                ("the script", script, "</script")):
        if closing in text.lower():  # pragma: no cover - a guard on our own assets
            raise RuntimeError(f"asset {name} must not contain {closing}")
    blocks = [f'<script type="application/json" id="oloproof-data">'
              f"{script_safe(dumps(payload))}</script>", *extra_blocks]
    csp = content_security_policy(style, script, served)
    page = _asset("report.html")
    replacements = {
        "{{CSP}}": html.escape(csp, quote=False).replace('"', "&quot;"),
        "{{TITLE}}": html.escape(title, quote=False),
        "{{STYLE}}": style,
        "{{NOSCRIPT}}": _NOSCRIPT["served" if served else "file"],
        "{{DATA}}": "\n".join(blocks),
        "{{SCRIPT}}": script,
    }
    return filled(page, replacements)  # (one pass: no replacement is searched)


def _meta(generated_at: float | None, served: str | None, home: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "generated_at": generated_at if generated_at is not None else time.time(),
        # The characters the terminal shows as \uXXXX (bidi controls, zero-width, control
        # characters): the page marks the same ones, from this one definition.
        "unsafe": UNSAFE.pattern,
    }
    if served is not None:
        meta["served"], meta["home"] = served, home or "/"
    return meta


def render_page(data: ReportData, generated_at: float | None = None, *,
                served: str | None = None, home: str | None = None, live: bool = False,
                focus: str | None = None, extra: Sequence[str] = ()) -> str:
    """The whole HTML document for this report data.

    `served` (the view's JSON API, e.g. `/api/`): the page is served by `oloproof view`,
    which answers for case details (`data` then holds none); `home` is the address of its
    runs page. `live`: a run still running polls the API for its progress and figures so
    far. `focus`: the id of the section to show first (`comparison`). `extra`: static HTML
    sections after the report (a variant's board: `report.board.board_section`)."""
    summary = data.summary
    meta = _meta(generated_at, served, home)
    meta.update(encoding=data.encoding, chunks=len(data.chunks), shared=len(data.shared))
    if served is not None:
        meta.update(live=live, focus=focus)
    blocks = []
    kind = "application/json" if data.encoding == "json" else "application/octet-stream"
    for i, chunk in enumerate(data.chunks):
        blocks.append(f'<script type="{kind}" id="oloproof-chunk-{i}">'
                      f"{script_safe(chunk)}</script>")
    for i, value in enumerate(data.shared):
        blocks.append(f'<script type="{kind}" id="oloproof-shared-{i}">'
                      f"{script_safe(value)}</script>")
    title = (f"Oloproof · {summary.get('project', '')} · {summary.get('run_id', '')} · "
             f"{(summary.get('gate') or {}).get('action', '')}")
    payload = {"meta": meta, "summary": summary, "index": data.index,
               "baseline_index": data.baseline_index}
    return _page(title, payload, _script("dom.js", "report.js"), served=served is not None,
                 extra_blocks=[*blocks, *extra])


def render_runs_page(project: str, runs: list[dict[str, Any]], *, served: str,
                     generated_at: float | None = None) -> str:
    """The view's runs page: the runs (`report.run_list.run_list`, newest first) embedded,
    drawn by the same helpers as the report, kept current from the API at `served`."""
    meta = _meta(generated_at, served, "/")
    title = f"Oloproof · {project} · runs" if project else "Oloproof · runs"
    return _page(title, {"meta": meta, "project": project, "runs": runs},
                 _script("dom.js", "runs.js"), served=True)


def served_policy() -> str:
    """The Content-Security-Policy header of the view's HTML answers: the stylesheet and
    either page script (each page's own policy, in the page, narrows it to its own), `fetch`
    to the same origin, no framing."""
    style = _asset("report.css")
    scripts = " ".join(_csp_hash(_script("dom.js", page)) for page in ("report.js", "runs.js"))
    return ("default-src 'none'; base-uri 'none'; img-src data:; form-action 'self'; "
            f"connect-src 'self'; frame-ancestors 'none'; style-src {_csp_hash(style)}; "
            f"script-src {scripts}")


def render_message_page(title: str, message: str, hint: str = "") -> str:
    """A page that says one thing (a store that cannot be opened, a run that is not there),
    with no script at all."""
    body = (f'<main class="wrap message"><h1>{html.escape(title)}</h1>'
            f'<p class="error-box">{html.escape(message)}</p>'
            + (f'<p class="note">{html.escape(hint)}</p>' if hint else "")
            + '<p><a href="/">All runs</a></p></main>')
    return render_static_page(title, body)


def render_static_page(title: str, body: str) -> str:
    """A page of `body` (HTML, already escaped) with the report's stylesheet and no script
    at all: a message, the board (`report.board.board_html`)."""
    style = _asset("report.css")
    csp = f"default-src 'none'; base-uri 'none'; form-action 'none'; style-src {_csp_hash(style)}"
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            f"<title>{html.escape(title)}</title>\n<style>{style}</style>\n</head>\n"
            f"<body>\n{body}\n</body>\n</html>\n")
