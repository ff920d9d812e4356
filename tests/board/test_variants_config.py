"""`system.variants` in the suite file (docs/board.md): the matrix read and checked, each error
naming the file and line; its combinations and their `k=v,…` names. Running the combinations is
not built yet: a suite that asks for them is refused, never run as one candidate."""

from __future__ import annotations

from pathlib import Path

import pytest

import oloproof
from oloproof.errors import ConfigError
from oloproof.suite.variants import combinations, find_variant, variant_text

SUITE = """\
version: 1
project: desk
dataset: cases.jsonl
system:
  name: desk
  version: "2.1"
  callable: app:run
  variants:
{variants}
evaluators:
  - type: exact_match
    criterion: answer_correct
    field: answer
    expected_field: answer
"""
MATRIX = "    model: [small, large, open]\n    prompt: [v1, v2]"


def _project(root: Path, variants: str) -> Path:
    (root / "app.py").write_text("def run(input):\n    return {'answer': 1}\n",
                                 encoding="utf-8")
    (root / "cases.jsonl").write_text('{"id": "c1", "input": {}, "expected": {"answer": 1}}\n',
                                      encoding="utf-8")
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


def test_a_valid_matrix_is_not_run_as_one_candidate(tmp_path: Path) -> None:
    """Until variants run, a suite with them fails closed: never one run that ignores them."""
    config = _project(tmp_path, MATRIX)
    with pytest.raises(ConfigError, match="running a suite's variants is not built yet") as e:
        oloproof.run(config, store=tmp_path / "store.sqlite")
    assert str(e.value).startswith(f"{config}:8:")


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
