"""The figures docs/limits.md#re-runs-and-re-drawn-samples gives for keeping the best of five
tries are the ones the `selective_reporting` benchmark measured, as saved under
benchmarks/results/ (its newest run), and the audit's figures the page quotes fall inside them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import _record  # noqa: E402


def _table_rows() -> list[str]:
    text = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    section = text[text.index("## Re-runs and re-drawn samples"):]
    section = section[section.index("| five tries, the best one kept"):]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]  # past the header and its rule


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _span(figures: dict[str, Any], name: str) -> str:
    return f"{_percent(figures[name + '_min'])[:-1]}–{_percent(figures[name + '_max'])}"


def test_the_page_gives_the_figures_the_benchmark_saved() -> None:
    found = _record.newest("selective_reporting")
    assert found is not None, "no saved run: python -m benchmarks selective_reporting"
    _, record = found
    figures, cells = record["figures"], record["details"]
    alike, audit, differ, baseline, seeds = _table_rows()
    assert f"| {_span(figures, 'best_of_5_single')} pass | " \
        f"{_span(figures, 'best_of_5_alike')} pass |" in alike
    audit_cell = cells["best_of_5_alike_n100_t0.8"]
    assert f"| {_percent(audit_cell['single_exact'])} | " \
        f"{_percent(figures['best_of_5_audit_point'])} |" in audit
    assert f"| {_span(figures, 'best_of_5_differ')} |" in differ
    assert f"| {_span(figures, 'worst_baseline_single')} pass | " \
        f"{_span(figures, 'worst_baseline_worst')} pass |" in baseline
    gain = (f"+{figures['redrawn_seed_gain_min']:.1f} to +{figures['redrawn_seed_gain_max']:.1f}"
            " points, its lower bound "
            f"+{figures['redrawn_seed_lower_gain_min']:.1f} to "
            f"+{figures['redrawn_seed_lower_gain_max']:.1f}")
    assert gain in seeds
    # The grid the page names is the one that ran.
    params = record["params"]
    assert (min(params["sizes"]), max(params["sizes"])) == (50, 1000) and "50–1,000 cases" in alike
    assert params["thresholds"] == [0.7, 0.8, 0.9] and "thresholds 0.7–0.9" in alike


def test_the_audits_figures_fall_inside_the_measured_ones() -> None:
    found = _record.newest("selective_reporting")
    assert found is not None
    figures = found[1]["figures"]
    text = " ".join((ROOT / "docs" / "limits.md").read_text(encoding="utf-8").split())
    said = re.search(r"the best of five `--no-cache` runs passes a rule at its threshold "
                     r"([\d.]+)–([\d.]+)% of the time \(nominal 2\.5%\); the worst of five "
                     r"baseline runs takes a non-inferiority rule from ([\d.]+)% to ([\d.]+)%; "
                     r"a labels seed re-drawn until the sample suits adds ([\d.]+)–([\d.]+) "
                     r"points", text)
    assert said is not None
    low, high, _, worst, gain_low, gain_high = (float(x) for x in said.groups())
    assert figures["best_of_5_alike_min"] <= low / 100 <= high / 100 \
        <= figures["best_of_5_alike_max"]
    assert figures["worst_baseline_worst_min"] <= worst / 100 \
        <= figures["worst_baseline_worst_max"]
    assert figures["redrawn_seed_gain_min"] <= gain_low <= gain_high \
        <= figures["redrawn_seed_gain_max"]
