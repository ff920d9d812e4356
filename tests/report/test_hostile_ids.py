"""Case ids and case text a hostile dataset could hold, as every report shows them.

Line and paragraph separators (U+2028, U+2029) and other invisible format characters reached
the terminal raw, so one id showed as two lines; and a case id like `xmpp:a@b.example` became a
link in the Markdown summary under GitHub's renderer, though every punctuation character was
escaped. Now the terminal writes them as `\\uXXXX`, and the Markdown gives GitHub no address
to link (rendered here by cmark-gfm, GitHub's own renderer).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

cmarkgfm = pytest.importorskip("cmarkgfm")

SEPARATED = "c1\u2028forged\u2029row"
FORMATTED = "c2\u180e\u206a\ufff9x\x85"
LINKS = ["xmpp:a@b.example", "mailto:c@d.example", "e.f@g.example", "https://h.example/i",
         "www.j.example", "http://k.example/l_m"]
RAW = ("\u2028", "\u2029", "\u180e", "\u206a", "\ufff9", "\x85")


@pytest.fixture(scope="module")
def hostile(new_probe: Any, cli: Any) -> Any:
    """Every case answers wrongly (so each is listed as failing); the first one raises with
    its id in the message."""
    probe = new_probe()
    cases = probe.plain_cases(2 + len(LINKS), answer="no")
    for case, case_id in zip(cases, [SEPARATED, FORMATTED, *LINKS]):
        case["id"] = case_id
    cases[0]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    code, out, _ = cli("run", "--markdown", "summary.md", cwd=probe.path)
    assert code == 3, out  # seven wrong answers: not enough to FAIL a 50% floor
    probe.run_output = out
    return probe


def test_the_terminal_shows_separators_and_format_characters_escaped(hostile: Any,
                                                                     cli: Any) -> None:
    outputs = {
        "run": hostile.run_output,
        "cases": cli("cases", "latest", cwd=hostile.path).out,
        "inspect --failures": cli("inspect", "latest", "--failures", cwd=hostile.path).out,
        "inspect --case": cli("inspect", "latest", "--case", SEPARATED, cwd=hostile.path).out,
    }
    for command, out in outputs.items():
        for char in RAW:
            assert char not in out, (command, hex(ord(char)))
        assert "c1\\u2028forged\\u2029row" in out, command
    assert "c2\\u180e\\u206a\\ufff9x\\u0085" in outputs["cases"]


def test_the_json_keeps_the_ids_as_they_are(hostile: Any, cli: Any) -> None:
    listed = json.loads(cli("cases", "latest", "--json", cwd=hostile.path).out)
    assert {c["case"] for c in listed["cases"]} == {SEPARATED, FORMATTED, *LINKS}


def test_no_case_id_becomes_a_link_under_githubs_renderer(hostile: Any) -> None:
    text = (hostile.path / "summary.md").read_text(encoding="utf-8")
    for options in (cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE,
                    cmarkgfm.cmark.Options.CMARK_OPT_DEFAULT):
        html = cmarkgfm.github_flavored_markdown_to_html(text, options=options)
        assert "<a " not in html and "href" not in html, html
        # Each id is there as text, whole (the comment that keeps an address from being found
        # renders as nothing).
        shown = html.replace("<!-- -->", "").replace("<!-- raw HTML omitted -->", "")
        for case_id in LINKS:
            assert case_id in shown, case_id
    for char in RAW:
        assert char not in text


def test_an_error_quoting_a_name_shows_it_escaped(tmp_path: Any, cli: Any) -> None:
    code, _, err = cli("run", "--config", "suite\u2028forged.yaml", cwd=tmp_path)

    assert code == 2
    assert err.startswith("Configuration error: ") and "suite\\u2028forged.yaml" in err, err
    assert "\u2028" not in err


def test_an_id_copied_from_the_terminal_finds_its_case(hostile: Any, cli: Any) -> None:
    shown = "c1\\u2028forged\\u2029row"  # as `cases` and `run` print the id
    listed = cli("cases", "latest", cwd=hostile.path).out
    assert shown in listed
    found = cli("inspect", "latest", "--case", shown, "--json", cwd=hostile.path)
    assert found.code == 0, found.out
    assert json.loads(found.out)["case"] == SEPARATED
    missing = cli("inspect", "latest", "--case", "c1\\u2028nothing", cwd=hostile.path)
    assert missing.code == 2 and "has no case" in missing.out + missing.err
