"""`oloproof report RUN --html FILE`: one self-contained, offline HTML report (SPEC §11).

This module renders a run's report data (`html_data`); finding the stored run is
`oloproof.api.write_html_report`'s job, writing the page `output_files`'.

The page is a template (`assets/report.html`) with its stylesheet and script inlined and the
run's data embedded as JSON. Every value from a case or a system is untrusted text:

- embedded JSON has `<`, `>` and `&` written as `\\u003c`, `\\u003e`, `\\u0026`, so no value can
  end a `<script>` element or open a comment, and it is read with `JSON.parse`, never evaluated;
- the script builds the page with `textContent` and DOM calls, never `innerHTML` with data;
- a Content-Security-Policy allows only this page's own script and stylesheet (by hash) and no
  network access of any kind, so even a mistake could neither run injected code nor fetch.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from importlib import resources
from typing import Any

from oloproof.report.escape import UNSAFE
from oloproof.report.html_data import ReportData, dumps

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
            "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)


def script_safe(text: str) -> str:
    """JSON text made safe inside a `<script>` element (no `</script>`, no `<!--`)."""
    return text.translate(_TABLE)


def _asset(name: str) -> str:
    return (resources.files("oloproof.report") / "assets" / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_page(data: ReportData, generated_at: float | None = None) -> str:
    """The whole HTML document for this report data."""
    style = _asset("report.css")
    script = _asset("report.js")
    for name, text, closing in (("report.css", style, "</style"),
                                ("report.js", script, "</script")):
        if closing in text.lower():  # pragma: no cover - a guard on our own assets
            raise RuntimeError(f"asset {name} must not contain {closing}")
    summary = data.summary
    meta: dict[str, Any] = {
        "encoding": data.encoding,
        "chunks": len(data.chunks),
        "shared": len(data.shared),
        "generated_at": generated_at if generated_at is not None else time.time(),
        # The characters the terminal shows as \uXXXX (bidi controls, zero-width, control
        # characters): the page marks the same ones, from this one definition.
        "unsafe": UNSAFE.pattern,
    }
    main = dumps({"meta": meta, "summary": summary, "index": data.index,
                  "baseline_index": data.baseline_index})
    blocks = [f'<script type="application/json" id="oloproof-data">{script_safe(main)}</script>']
    kind = "application/json" if data.encoding == "json" else "application/octet-stream"
    for i, chunk in enumerate(data.chunks):
        blocks.append(f'<script type="{kind}" id="oloproof-chunk-{i}">'
                      f"{script_safe(chunk)}</script>")
    for i, value in enumerate(data.shared):
        blocks.append(f'<script type="{kind}" id="oloproof-shared-{i}">'
                      f"{script_safe(value)}</script>")
    csp = ("default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
           f"style-src {_csp_hash(style)}; script-src {_csp_hash(script)}")
    title = (f"Oloproof · {summary.get('project', '')} · {summary.get('run_id', '')} · "
             f"{(summary.get('gate') or {}).get('action', '')}")
    page = _asset("report.html")
    replacements = {
        "{{CSP}}": html.escape(csp, quote=False).replace('"', "&quot;"),
        "{{TITLE}}": html.escape(title, quote=False),
        "{{STYLE}}": style,
        "{{DATA}}": "\n".join(blocks),
        "{{SCRIPT}}": script,
    }
    # One pass, so a replacement's text is never searched for the next placeholder.
    out: list[str] = []
    rest = page
    while True:
        positions = [(rest.find(k), k) for k in replacements if rest.find(k) >= 0]
        if not positions:
            out.append(rest)
            break
        at, key = min(positions)
        out.append(rest[:at])
        out.append(replacements[key])
        rest = rest[at + len(key):]
    return "".join(out)
