"""What a model's text may bring into the store (docs/judges.md#what-a-reply-may-hold).

A judge's reply is untrusted as a system's output is: what it says — its reason, the model it
names, an error's message — is kept only blotted of the API key the call was made with (should
it repeat it, as some servers repeat what they were sent), cut to `TEXT_CAP` characters with a
marker saying how long it was, and only if UTF-8 can hold it (a lone surrogate, which
`json.loads` reads from `"\\ud800"`, cannot be stored). (A token count is a whole number at
least 0 or is dropped: `evaluators.verdicts.token_count`.) A simulated user's replies will be
read the same way.
"""

from __future__ import annotations

import re

from oloproof.storable import escaped, storable_problem

#: The most characters of one text of a model's reply that are kept (a reason is "one or two
#: sentences"; a 30 MB one per case made a 3.2 GB store).
TEXT_CAP = 4_000
#: Below this length a key is a stand-in (a local server takes any value), blotted out only
#: where it stands as a word of its own.
SHORT_KEY = 12


def blotted(text: str, secret: str | None) -> str:
    """`text` with `secret` (an API key) replaced by `***`: everywhere, or, for a short
    stand-in a local server takes (`ollama`, `EMPTY`), where it stands as a word of its own,
    so that the words merely containing it stay readable."""
    if not secret:
        return text
    if len(secret) >= SHORT_KEY:
        return text.replace(secret, "***")
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)


def capped(text: str, cap: int = TEXT_CAP) -> str:
    """`text` cut to `cap` characters, with a marker saying how long it was."""
    if len(text) <= cap:
        return text
    return (f"{text[:cap]}… [cut: the judge's text was {len(text):,} characters; the first "
            f"{cap:,} are kept]")


def kept(text: str, secret: str | None, name: str = "the text", cap: int = TEXT_CAP
         ) -> tuple[str, str | None]:
    """(`text` blotted and capped, None), or (that text, why the store cannot keep it, in words
    that start with `name`: `its reason holds a lone surrogate \\ud800 …`) — the caller
    decides whether such a text is refused or escaped."""
    text = capped(blotted(text, secret), cap)
    return text, storable_problem(text, (name,))


def message(text: str, secret: str | None) -> str:
    """An error's message as it is kept: blotted, capped, a lone surrogate written out."""
    return escaped(capped(blotted(text, secret)))

