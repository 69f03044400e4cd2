"""A record's JSON text: ``json.dumps(value, indent=2, ensure_ascii=False)``, byte for byte, in
half its time for plain JSON values (Python's indenting encoder has no C path before 3.13, and a
record is written twice a step)."""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

_INFINITIES = {float("inf"): "Infinity", float("-inf"): "-Infinity"}


class _NotPlain(Exception):
    """A value the fast path leaves to ``json.dumps`` (a subclass, a tuple, a non-text key)."""


def indented_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``; dicts with text keys, lists, text,
    numbers, booleans and None are written here, anything else by ``json.dumps`` itself."""
    parts: list[str] = []
    try:
        _write(value, parts, "\n")
    except _NotPlain:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


def _write(value: Any, parts: list[str], newline: str) -> None:
    """Append ``value``'s text, its nested lines starting with ``newline`` plus two spaces."""
    kind = type(value)
    if kind is str:
        parts.append(encode_basestring(value))
    elif value is None or value is True or value is False:
        parts.append("null" if value is None else "true" if value else "false")
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append("NaN" if value != value else _INFINITIES.get(value) or float.__repr__(value))
    elif kind is dict or kind is list:
        _write_container(value, parts, newline, kind is dict)
    else:
        raise _NotPlain


def _write_container(value: Any, parts: list[str], newline: str, is_dict: bool) -> None:
    """A dict or list: empty on one line, else one item a line, indented one level deeper."""
    opening, closing = ("{", "}") if is_dict else ("[", "]")
    if not value:
        parts.append(opening + closing)
        return
    inner = newline + "  "
    parts.append(opening)
    separator = inner
    for item in value.items() if is_dict else value:
        parts.append(separator)
        separator = "," + inner
        if is_dict:
            key, item = item
            if type(key) is not str:
                raise _NotPlain
            parts.append(encode_basestring(key))
            parts.append(": ")
        _write(item, parts, inner)
    parts.append(newline + closing)
