"""Read a YAML file and remember the line of every key and list item.

Errors about the suite or the policy name the file and line; pydantic reports a location as a
path of keys and indices, and `YamlDocument.line_of` turns that path back into a line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oloproof.errors import ConfigError
from oloproof.suite.json_lines import not_utf8

Loc = tuple[str | int, ...]


@dataclass
class YamlDocument:
    """A parsed YAML document with the line of each key and item (1-based)."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """The line of the deepest known prefix of `loc` (None when nothing is known)."""
        probe: Loc = tuple(loc)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), None)


def read_yaml(path: Path, what: str, hint: str = "check its path, or create it "
              "(see `oloproof init`)") -> YamlDocument:
    """Parse `path`; a missing file or a syntax error is a ConfigError naming file and line.

    A missing file is named as given (`release-v1.yaml`), with `hint` saying what to do.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} file {path.name} not found; {hint}", file=path) from None
    except UnicodeDecodeError:
        raise not_utf8(path, f"the {what} file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file: {exc}", file=path) from None
    if _FAST_LOADER is not None and "\t" not in text and "?" not in text:
        try:
            return _document(path, text, _FAST_LOADER)
        except ConfigError:
            pass  # said again below, in the words of PyYAML's own parser
    return _document(path, text, yaml.SafeLoader)


#: LibYAML's parser where PyYAML was built with it: 15 times faster than PyYAML's own. It
#: reads a document as PyYAML's own does, except that it takes a tab or a `?` where PyYAML's
#: refuses them (inside a plain value), so a text with either is left to PyYAML's; and a
#: document it cannot read is read again by PyYAML's, whose messages (and lines) are the ones
#: the errors here are made of.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def _document(path: Path, text: str, loader_class: Any) -> YamlDocument:
    try:
        node = yaml.compose(text, Loader=loader_class)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, path, text.splitlines()) from None
    if node is None:
        return YamlDocument(path, None, {(): 1})
    _keys_as_written(node)
    _refuse_duplicate_keys(node, path)
    loader = yaml.SafeLoader("")
    try:
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            f"YAML error: {exc}", file=path, line=mark.line + 1 if mark else None
        ) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a value its tag does not fit
        raise ConfigError(
            f"YAML error: a value does not fit the tag written on it ({exc}); remove the tag "
            "(`!!int`, `!!float`, ...) or write a value of that type",
            file=path, line=_untyped_line(node)) from None
    finally:
        loader.dispose()
    lines: dict[Loc, int] = {(): node.start_mark.line + 1}
    _index(node, (), lines)
    return YamlDocument(path, data, lines)


def _untyped_line(node: yaml.Node) -> int | None:
    """The line of the first value whose explicit tag PyYAML cannot make it (`!!int version`:
    its constructors raise ValueError or TypeError, not a YAML error), if one is found."""
    for current in _each_node(node):
        if isinstance(current, yaml.ScalarNode):
            loader = yaml.SafeLoader("")
            try:
                loader.construct_object(current, deep=True)
            except (ValueError, TypeError, OverflowError, yaml.YAMLError):
                return int(current.start_mark.line) + 1
            finally:
                loader.dispose()
    return None


def _each_node(node: yaml.Node) -> Iterator[yaml.Node]:
    """Every node of a document once, a mapping's keys and values alike, in the text's order
    (an alias repeats a node, or holds its own mapping: each is given once)."""
    stack = [node]
    visited: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        yield current
        if isinstance(current, yaml.MappingNode):  # (reversed: taken in the text's order)
            stack.extend(reversed([part for pair in current.value for part in pair]))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))


def _syntax_error(exc: yaml.YAMLError, path: Path, lines: list[str]) -> ConfigError:
    """A ConfigError at the line where the mistake most likely is.

    The parser notices an unclosed `[` or `{` only on a later line. When that line is indented
    no deeper than the line where the flow collection started, the collection ran into the next
    entry: the bracket left open is on the starting line, so that line is named.
    """
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None) or ""
    start = getattr(exc, "context_mark", None)
    if context.startswith("while parsing a flow") and start is not None and line is not None \
            and start.line + 1 < line <= len(lines) \
            and _indent(lines[line - 1]) <= _indent(lines[start.line]):
        what = context.removeprefix("while parsing a ")
        return ConfigError(
            f"YAML syntax error: the {what} that starts on this line is not closed "
            f"(line {line}: {problem}); close its bracket on this line",
            file=path, line=start.line + 1,
        )
    return ConfigError(f"YAML syntax error: {problem}; fix the YAML at this line",
                       file=path, line=line)


def _refuse_duplicate_keys(node: yaml.Node, path: Path) -> None:
    """A key given twice in one mapping is an error naming both lines.

    YAML loaders keep the last value silently, so a second `rules:` appended to a policy would
    replace the first and change the gate without a word; here it stops the run instead.
    Merge keys (`<<: *base`) are left to YAML's own rules: only keys written out are compared.
    """
    stack = [node]
    visited: set[int] = set()  # an alias repeats a node; look at each node once
    while stack:
        current = stack.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, yaml.MappingNode):
            seen: dict[tuple[str, str], yaml.Node] = {}
            for key_node, value_node in current.value:
                stack.append(value_node)
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = (key_node.tag, key_node.value)  # `1` and "1" are different keys
                first = seen.get(key)
                if first is not None:
                    raise ConfigError(
                        f"key {key_node.value!r} is given twice in one mapping: first on line "
                        f"{first.start_mark.line + 1}, again on line "
                        f"{key_node.start_mark.line + 1}; YAML would keep only the last one, so "
                        "remove or merge one of them",
                        file=path, line=key_node.start_mark.line + 1,
                    )
                seen[key] = key_node
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


_BOOL = "tag:yaml.org,2002:bool"
_STR = "tag:yaml.org,2002:str"


def _keys_as_written(node: yaml.Node) -> None:
    """A plain key such as `on`, `off`, `yes` or `no` is the word itself, as in YAML 1.2 (YAML
    1.1, which PyYAML reads, makes them true and false: `retries: {on: [...]}` would have a
    key True). Only `true` and `false` stay booleans, to be refused as keys. (A plain
    scalar's style is None from PyYAML's parser, "" from LibYAML's.)"""
    for current in _each_node(node):
        if isinstance(current, yaml.MappingNode):
            for key_node, _ in current.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _BOOL \
                        and not key_node.style \
                        and key_node.value.lower() not in ("true", "false"):
                    key_node.tag = _STR


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            lines[loc + (key,)] = key_node.start_mark.line + 1
            _index(value_node, loc + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[loc + (i,)] = item.start_mark.line + 1
            _index(item, loc + (i,), lines)
