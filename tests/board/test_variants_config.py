"""`system.variants` in the suite file (docs/board.md): the matrix read and checked, each error
naming the file and line; its combinations and their `k=v,…` names; one combination run with
`--variant` (`oloproof.run(variant=...)`), which the system reads as `current_case().variant`,
keyed apart in the cache and stored with the run. Every combination in one run:
test_variant_runs.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from variant_suite import MATRIX, SUITE

import oloproof
from oloproof import api
from oloproof.errors import ConfigError, UsageError
from oloproof.suite.variants import combinations, find_variant, variant_text


def _project(root: Path, variants: str) -> Path:
    # The system answers with its variant's model (and counts its calls, by variant).
    (root / "app.py").write_text(
        "from oloproof import current_case\n"
        "CALLS = []\n"
        "def run(input):\n"
        "    variant = current_case().variant\n"
        "    CALLS.append(dict(variant))\n"
        "    return {'answer': variant.get('model', 'none')}\n", encoding="utf-8")
    (root / "cases.jsonl").write_text(
        '{"id": "c1", "input": {}, "expected": {"answer": "large"}}\n'
        '{"id": "c2", "input": {}, "expected": {"answer": "large"}}\n', encoding="utf-8")
    (root / "release.yaml").write_text(
        "version: 1\nrules:\n  - id: answers\n    metric: answer_correct\n    min: 0.5\n",
        encoding="utf-8")
    config = root / "oloproof.yaml"
    config.write_text(SUITE.format(variants=variants), encoding="utf-8")
    return config


@pytest.mark.parametrize(("variants", "line", "says"), [
    ("    model: [small, small]", 9, "'small' is listed twice"),
    ("    model: []", 9, "needs at least 1 item"),
    ("    model: [a=b]", 9, "'a=b' cannot name a variant"),
    ("    model: [x, 'p,q']", 9, "'p,q' cannot name a variant"),
    ("    model: [[1]]", 9, "a value is a text, a number or true/false"),
    ("    model: small", 9, "must be a list"),
    ("    model: [a]\n    bad key: [b]", 10, "letters, digits, _ and - only"),
    ("    a: [" + ", ".join(str(i) for i in range(16)) + "]\n    b: ["
     + ", ".join(str(i) for i in range(17)) + "]", 8,
     "272 combinations of variants; at most 256"),
])
def test_a_matrix_that_cannot_name_its_candidates_is_refused_at_its_line(
        tmp_path: Path, variants: str, line: int, says: str) -> None:
    config = _project(tmp_path, variants)
    with pytest.raises(ConfigError) as raised:
        oloproof.run(config, store=tmp_path / "store.sqlite")
    assert says in str(raised.value)
    assert str(raised.value).startswith(f"{config}:{line}:"), str(raised.value)
    assert not (tmp_path / "store.sqlite").exists()  # refused before anything is stored


def _stored_variants(store: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(store) as conn:
        return [(str(r), v) for r, v in conn.execute(
            "SELECT run_id, variant FROM runs ORDER BY started_at, run_id")]


def test_one_combination_runs_reads_its_variant_and_is_stored_with_it(tmp_path: Path) -> None:
    config = _project(tmp_path, MATRIX)
    store = tmp_path / "store.sqlite"
    large = oloproof.run(config, store=store, variant="prompt=v2,model=large")
    # The system read {"model": "large", "prompt": "v2"}: both cases answered "large".
    assert large.document.metrics[0].passed == 2
    small = oloproof.run(config, store=store, variant="model=small,prompt=v2")
    assert small.document.metrics[0].passed == 0
    assert _stored_variants(store) == [(large.run_id, "model=large,prompt=v2"),
                                       (small.run_id, "model=small,prompt=v2")]
    # Each combination is executed apart (its own execution keys): the second ran both of
    # its cases; the same combination again takes both from the cache.
    assert (small.document.cache.execution.hit, small.document.cache.execution.miss) == (0, 2)
    again = oloproof.run(config, store=store, variant="model=large,prompt=v2")
    assert (again.document.cache.execution.hit, again.document.cache.execution.miss) == (2, 0)
    assert again.document.metrics[0].passed == 2
    # `variant:k=v,…` names the newest complete run of that combination, keys in any order.
    named = oloproof.load_run("variant:prompt=v2,model=large", config, store)
    assert named.run_id == again.run_id
    assert oloproof.load_run("variant:model=small,prompt=v2", config, store).run_id \
        == small.run_id
    with pytest.raises(UsageError, match="no complete run is of that variant; complete runs "
                       "have variants model=large,prompt=v2; model=small,prompt=v2"):
        oloproof.load_run("variant:model=open,prompt=v2", config, store)
    with pytest.raises(UsageError, match="a variant is written variant:key=value"):
        oloproof.load_run("variant:large", config, store)


def test_a_suite_without_variants_keeps_its_keys_and_an_empty_variant(tmp_path: Path) -> None:
    config = _project(tmp_path, "    model: [large]")
    config.write_text(config.read_text().replace("  variants:\n    model: [large]\n", ""))
    store = tmp_path / "store.sqlite"
    plain = oloproof.run(config, store=store)
    assert plain.document.metrics[0].passed == 0  # the variant is empty: "none" answered
    assert _stored_variants(store) == [(plain.run_id, None)]
    with pytest.raises(UsageError, match=r"--variant model=large: this suite has no "
                       r"system\.variants"):
        oloproof.run(config, store=store, variant="model=large")


def test_a_variant_the_matrix_does_not_hold_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    config = _project(tmp_path, MATRIX)
    with pytest.raises(UsageError, match=r"--variant model=lage,prompt=v1: model=lage is not a "
                       r"variant \(did you mean 'large'\?\)"):
        oloproof.run(config, store=tmp_path / "store.sqlite", variant="model=lage,prompt=v1")
    assert not (tmp_path / "store.sqlite").exists()


def test_the_combinations_and_their_names() -> None:
    matrix = {"model": ("small", "large", "open"), "prompt": ("v1", "v2"), "cot": (True, False)}
    found = combinations(matrix)
    assert len(found) == 12
    assert [variant_text(c) for c in found[:3]] == [
        "model=small,prompt=v1,cot=true", "model=small,prompt=v1,cot=false",
        "model=small,prompt=v2,cot=true"]
    assert len({variant_text(c) for c in found}) == 12
    # Every name finds its combination back, its keys in any order.
    for combination in found:
        parts = variant_text(combination).split(",")
        assert find_variant(",".join(reversed(parts)), matrix) == combination
    assert combinations({}) == []


@pytest.mark.parametrize(("text", "says"), [
    ("model=large", "does not give prompt"),
    ("model=lage,prompt=v1", "model=lage is not a variant (did you mean 'large'?); model is "
                             "one of small, large"),
    ("model=large,prompt=v3", "prompt=v3 is not a variant; prompt is one of v1, v2"),
    ("modle=large,prompt=v1", "'modle' is not a key of system.variants (did you mean 'model'?)"),
    ("model=large,model=small,prompt=v1", "model is given twice"),
    ("large,prompt=v1", "'large' is not key=value; write a variant as model=small,prompt=v1"),
])
def test_a_variant_name_that_is_not_a_combination_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError) as raised:
        find_variant(text, {"model": ("small", "large"), "prompt": ("v1", "v2")})
    assert says in str(raised.value)
    with pytest.raises(ValueError, match=r"no system\.variants"):
        find_variant("model=large", {})


@pytest.mark.slow
def test_the_variant_travels_with_each_job_to_worker_processes(tmp_path: Path) -> None:
    config = _project(tmp_path, MATRIX)
    done = oloproof.run(config, store=tmp_path / "store.sqlite", variant="model=large,prompt=v1",
                        executor="processes", workers=2)
    assert done.document.metrics[0].passed == 2
    assert _stored_variants(tmp_path / "store.sqlite") == [(done.run_id, "model=large,prompt=v1")]


def test_every_report_names_the_variant(tmp_path: Path, cli: Any) -> None:
    config = _project(tmp_path, MATRIX)
    code, out, err = cli("run", "--variant", "model=large,prompt=v2", "--markdown", "run.md",
                         "--junit", "run.xml", "--store", "store.sqlite", cwd=tmp_path)
    assert code in (0, 1, 3), err  # (two cases decide little: the gate is not the point)
    assert "desk 2.1 (model=large,prompt=v2)" in " ".join(out.split())
    # (escaped as the summary escapes what the suite wrote)
    assert r"desk 2\.1 (model\=large\,prompt\=v2)" in (tmp_path / "run.md").read_text()
    assert 'name="variant" value="model=large,prompt=v2"' in (tmp_path / "run.xml").read_text()
    code, out, err = cli("runs", "--store", "store.sqlite", cwd=tmp_path)
    assert code == 0, err
    assert "desk 2.1 (model=large,prompt=v2)" in " ".join(out.split()), out
    stored = oloproof.load_run("variant:model=large,prompt=v2", config, tmp_path / "store.sqlite")
    assert stored.document.to_json()["system"] == {
        "name": "desk", "version": "2.1", "variant": "model=large,prompt=v2"}
    page = api.write_html_report(stored.run_id, tmp_path / "run.html", config,
                                 tmp_path / "store.sqlite")
    assert '"variant":"model=large,prompt=v2"' in page.read_text().replace(": ", ":")
    # A run without variants names none: its document is as before.
    (tmp_path / "plain").mkdir()
    plain = _project(tmp_path / "plain", "    model: [large]")
    plain.write_text(plain.read_text().replace("  variants:\n    model: [large]\n", ""))
    done = oloproof.run(plain, store=tmp_path / "plain.sqlite")
    assert done.document.to_json()["system"] == {"name": "desk", "version": "2.1"}
