"""`oloproof board` drawn (docs/board.md#reading-the-board): the terminal table, the Markdown
table and the HTML page with the cost–success chart, all from one list of cells
(`board_cells`), so each shows the same figures.

The chart (`front_svg`) is inline SVG with no outside resource: success (the board's
criterion) up, cost per case across, each candidate a point at its estimates with its interval
bars both ways, the candidates on the front joined by a line in cost order. Each point carries
its figures as `data-` attributes, which are the JSON's, and the `<svg>` its axes' ranges
(`data-x0`…`data-y1`, the values at the plot's edges, `data-margin` pixels in).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from rich.console import Console

from oloproof.comparison.board import Board, Figure
from oloproof.report.escape import safe_line
from oloproof.report.html import render_static_page
from oloproof.report.layout import Column, print_wrapped, render_table


def _points(found: Figure, sign: str = "", unit: str = "%") -> str:
    """A rate (or, with `sign` "+", a difference) in percent with its interval."""
    if found.estimate is None:
        return "—"
    bounds = "" if found.lower is None or found.upper is None else \
        f" [{100 * found.lower:{sign}.1f}, {100 * found.upper:{sign}.1f}]"
    return f"{100 * found.estimate:{sign}.1f}{unit}{bounds}"


def _rate(found: Figure) -> str:
    return _points(found)


def _difference(found: Figure) -> str:
    return _points(found, "+", " pts")


def _number(value: float | None) -> str:
    return "…" if value is None else f"{value:.4g}"


def _amount(found: Figure) -> str:
    if found.estimate is None:
        return "—"
    if found.lower is None and found.upper is None:
        return _number(found.estimate)
    return f"{_number(found.estimate)} [{_number(found.lower)}, {_number(found.upper)}]"


def board_columns(board: Board) -> list[str]:
    """The headers of the board's table."""
    first = board.candidates[0] if board.candidates else None
    metrics = list(first.metrics) if first is not None else []
    differences = next((list(r.difference) for r in board.candidates if r.difference), [])
    return (["candidate"] + [m if m in board.quantile_metrics else f"{m} rate"
                             for m in metrics]
            + [f"{m} vs baseline" for m in differences]
            + ["cost / case", "cost / success", "latency p50 ms", "latency p95 ms",
               "can ship", "dominated by"])


def board_cells(board: Board) -> list[list[str]]:
    """One row of text per candidate, in `board_columns`' order."""
    names = {r.run_id: r.name for r in board.candidates}
    differences = next((list(r.difference) for r in board.candidates if r.difference), [])
    out = []
    for row in board.candidates:
        name = row.name + (" (baseline)" if row.run_id == board.baseline else "")
        out.append(
            [safe_line(name)]
            + [_rate(f) if m in _rates(board) else _amount(f) for m, f in row.metrics.items()]
            + [_difference(row.difference[m]) if m in row.difference else "—"
               for m in differences]
            + [_amount(row.cost_per_case), _amount(row.cost_per_success),
               _amount(row.latency["latency_p50"]), _amount(row.latency["latency_p95"]),
               "yes" if row.can_ship else "no (" + ", ".join(row.blocked_by) + ")",
               safe_line(", ".join(names[r] for r in row.dominated_by)) or "—"])
    return out


def _rates(board: Board) -> set[str]:
    """The metrics shown as rates (the others are quantiles)."""
    return {m for r in board.candidates for m in r.metrics} - set(board.quantile_metrics)


def header_text(board: Board) -> str:
    """The line over the table: what holds together, by which method."""
    cap = "no cost cap" if board.cost_cap is None else f"cost cap {board.cost_cap:g}"
    base = next((r for r in board.candidates if r.run_id == board.baseline), None)
    named = board.baseline if base is None or base.variant is None else \
        f"{base.variant} ({board.baseline})"
    return (f"Board: {len(board.candidates)} candidates against the baseline "
            f"{safe_line(named)} · success = {board.criterion} · {cap} · {board.family_size} "
            f"intervals hold together at {100 * board.level:g}% ({board.method}: each at "
            f"{100 * board.each_level:.4g}%)")


def render_board(board: Board, console: Console) -> None:
    """The board in the terminal."""
    render_table(console, header_text(board),
                 [Column(h, stack=i > 0) for i, h in enumerate(board_columns(board))],
                 board_cells(board))
    for warning in board.warnings:
        print_wrapped(console, f"Warning: {safe_line(warning)}")


def board_markdown(board: Board) -> str:
    """The board as GitHub-flavoured Markdown: the same cells."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    headers = board_columns(board)
    lines = [f"### {cell(header_text(board))}", "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in board_cells(board)]
    lines += [""] + [f"> Warning: {cell(w)}" for w in board.warnings]
    return "\n".join(lines).rstrip() + "\n"


# ---- the chart ------------------------------------------------------------------------------

WIDTH, HEIGHT, MARGIN = 560, 360, 56


def _scale(values: Sequence[float], low: float, high: float) -> tuple[float, float]:
    """The axis's [start, end] over `values`, a little room either side."""
    finite = [v for v in values if v is not None]
    a, b = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if a == b:
        a, b = a - 0.5 * (abs(a) or 1), b + 0.5 * (abs(b) or 1)
    pad = (b - a) * 0.05
    return max(low, a - pad), min(high, b + pad)


def chart_points(board: Board) -> list[dict[str, float | str | None]]:
    """Each candidate's point as the chart draws it: its figures and where they fall
    (`x`, `y` in the SVG's coordinates; None where it has no estimate)."""
    rows = board.candidates
    costs = [v for r in rows for v in (r.cost_per_case.lower, r.cost_per_case.upper,
                                       r.cost_per_case.estimate) if v is not None]
    rates = [v for r in rows for f in (r.metrics[board.criterion],)
             for v in (f.lower, f.upper, f.estimate) if v is not None]
    x0, x1 = _scale(costs, 0.0, float("inf"))
    y0, y1 = _scale(rates, 0.0, 1.0)

    def x(v: float | None) -> float | None:
        return None if v is None else MARGIN + (v - x0) / (x1 - x0) * (WIDTH - 2 * MARGIN)

    def y(v: float | None) -> float | None:
        return None if v is None else HEIGHT - MARGIN - (v - y0) / (y1 - y0) * (
            HEIGHT - 2 * MARGIN)

    out: list[dict[str, float | str | None]] = []
    for r in rows:
        success, cost = r.metrics[board.criterion], r.cost_per_case
        out.append({"run_id": r.run_id, "name": r.name, "front": "yes" if not r.dominated_by
                    else "no", "success": success.estimate, "success_lower": success.lower,
                    "success_upper": success.upper, "cost": cost.estimate,
                    "cost_lower": cost.lower, "cost_upper": cost.upper,
                    "x": x(cost.estimate), "y": y(success.estimate),
                    "x_lower": x(cost.lower), "x_upper": x(cost.upper),
                    "y_lower": y(success.lower), "y_upper": y(success.upper),
                    "x0": x0, "x1": x1, "y0": y0, "y1": y1})
    return out


def front_svg(board: Board) -> str:
    """The cost–success chart (see the module's text), as one `<svg>` element."""
    def a(value: object) -> str:
        return html.escape(repr(value) if isinstance(value, float) else str(value), quote=True)

    points = chart_points(board)
    axes = "" if not points else " ".join(
        f'data-{k}="{a(points[0][k])}"' for k in ("x0", "x1", "y0", "y1"))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="board-front" role="img" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'data-margin="{MARGIN}" {axes}>',
             f"<title>{html.escape(board.criterion)} against cost per case</title>",
             f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" '
             f'y2="{HEIGHT - MARGIN}" stroke="currentColor"/>',
             f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}" '
             'stroke="currentColor"/>',
             f'<text x="{WIDTH / 2}" y="{HEIGHT - 16}" text-anchor="middle" font-size="12">'
             "cost per case</text>",
             f'<text x="14" y="{HEIGHT / 2}" font-size="12" text-anchor="middle" '
             f'transform="rotate(-90 14 {HEIGHT / 2})">{html.escape(board.criterion)}</text>']
    if points:
        p = points[0]
        for value, anchor in ((p["x0"], "start"), (p["x1"], "end")):
            parts.append(f'<text x="{MARGIN if anchor == "start" else WIDTH - MARGIN}" '
                         f'y="{HEIGHT - MARGIN + 16}" font-size="11" text-anchor="{anchor}">'
                         f"{_number(value)}</text>")  # type: ignore[arg-type]
        for value, at in ((p["y0"], HEIGHT - MARGIN), (p["y1"], MARGIN)):
            parts.append(f'<text x="{MARGIN - 4}" y="{at}" font-size="11" text-anchor="end">'
                         f"{100 * value:.0f}%</text>")  # type: ignore[operator]
    front = sorted((p for p in points if p["front"] == "yes" and p["x"] is not None
                    and p["y"] is not None), key=lambda p: p["x"])  # type: ignore[arg-type,return-value]
    if len(front) > 1:
        parts.append('<polyline class="front" fill="none" stroke="currentColor" '
                     'stroke-dasharray="4 3" points="'
                     + " ".join(f"{p['x']:.2f},{p['y']:.2f}" for p in front) + '"/>')
    for p in points:
        if p["x"] is None or p["y"] is None:
            continue
        data = " ".join(f'data-{k.replace("_", "-")}="{a(p[k])}"' for k in (
            "run_id", "success", "success_lower", "success_upper", "cost", "cost_lower",
            "cost_upper", "front"))
        bars = []
        if p["x_lower"] is not None and p["x_upper"] is not None:
            bars.append(f'<line x1="{p["x_lower"]:.2f}" y1="{p["y"]:.2f}" '
                        f'x2="{p["x_upper"]:.2f}" y2="{p["y"]:.2f}" stroke="currentColor"/>')
        if p["y_lower"] is not None and p["y_upper"] is not None:
            bars.append(f'<line x1="{p["x"]:.2f}" y1="{p["y_lower"]:.2f}" '
                        f'x2="{p["x"]:.2f}" y2="{p["y_upper"]:.2f}" stroke="currentColor"/>')
        fill = "currentColor" if p["front"] == "yes" else "none"
        parts.append(f'<g class="candidate" {data}>' + "".join(bars)
                     + f'<circle cx="{p["x"]:.2f}" cy="{p["y"]:.2f}" r="4" fill="{fill}" '
                     f'stroke="currentColor"/><title>{html.escape(str(p["name"]))}</title>'
                     "</g>")
    parts.append("</svg>")
    return "".join(parts)


def board_section(board: Board) -> str:
    """The board as a section of another page (a variant's run report): its header, table,
    warnings and chart, static HTML."""
    headers = "".join(f"<th>{html.escape(h)}</th>" for h in board_columns(board))
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in board_cells(board))
    warnings = "".join(f'<p class="note">Warning: {html.escape(w)}</p>'
                       for w in board.warnings)
    return (f'<section class="wrap" id="board"><h2>{html.escape(header_text(board))}</h2>'
            f"<table><thead><tr>{headers}</tr></thead><tbody>{rows}</tbody></table>"
            f"{warnings}<h3>Cost–success front</h3>{front_svg(board)}</section>")


def board_html(board: Board) -> str:
    """A page of its own: the table and the chart, no script and no outside resource (the
    report's stylesheet inlined); the same page `oloproof view` serves at `/board`."""
    return render_static_page("Oloproof · board", f"<main>{board_section(board)}</main>")
