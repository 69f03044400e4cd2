"""Names in the lineage store.

Each of usecase, package, task and run id is one path segment. The store refuses a segment that
could escape the root or break a path: empty, ``.``, ``..``, one holding ``/``, ``\\``, NUL or
another control character, or one longer than 255 UTF-8 bytes. Names that come from elsewhere (a
Dagster asset key, a partition key) are made safe first with ``encode_name``: ``A-Z a-z 0-9 _ -``
stay as they are and every other character becomes its UTF-8 bytes written ``%XX`` with
upper-case hex (``.`` is ``%2E``, ``%`` is ``%25``, ``/`` is ``%2F``, a space ``%20``, ``é``
``%C3%A9``). ``decode_name`` reverses it and refuses text ``encode_name`` could not have
produced, so the two are exact inverses. An asset key becomes one task name with
``task_name_for_key``: each part encoded, the parts joined with ``.`` (``["raw", "orders"]`` is
``raw.orders``; ``["a.b"]`` is ``a%2Eb``), and ``key_for_task_name`` splits it back.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Where a use case folder keeps its records.
LINEAGE_SUBDIR = (".ubunye", "lineage")

#: Longest name ``encode_name`` returns: room for a 36-character run id, a dot and ``.json``
#: in one 255-byte file name.
MAX_ENCODED_NAME = 200

_MAX_SEGMENT_BYTES = 255
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HEX = "0123456789ABCDEF"


def encode_name(text: str) -> str:
    """Path-safe, reversible form of ``text``: ``[A-Za-z0-9_-]`` kept, all else as ``%XX`` bytes."""
    if not isinstance(text, str):
        raise TypeError(f"a name is text, not {type(text).__name__}")
    if text == "":
        raise ValueError("a name cannot be empty")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"name {text!r} is not valid Unicode text: {exc}") from exc
    pieces = []
    for byte in raw:
        char = chr(byte)
        if byte < 0x80 and char in _KEPT:
            pieces.append(char)
        else:
            pieces.append("%" + _HEX[byte >> 4] + _HEX[byte & 0xF])
    encoded = "".join(pieces)
    if len(encoded) > MAX_ENCODED_NAME:
        raise ValueError(
            f"name {text[:40]!r}... is too long: {len(encoded)} characters once encoded, "
            f"the limit is {MAX_ENCODED_NAME}"
        )
    return encoded


def decode_name(text: str) -> str:
    """The name ``encode_name`` turned into ``text``; ValueError for text it could not produce."""
    if text == "":
        raise ValueError("an encoded name cannot be empty")
    raw = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char in _KEPT:
            raw.append(ord(char))
            i += 1
            continue
        if char != "%":
            raise ValueError(f"{text!r} is not an encoded name: {char!r} should be %-encoded")
        pair = text[i + 1 : i + 3]
        if len(pair) != 2 or any(c not in _HEX for c in pair):
            raise ValueError(f"{text!r} is not an encoded name: bad escape at position {i}")
        byte = int(pair, 16)
        if byte < 0x80 and chr(byte) in _KEPT:
            raise ValueError(f"{text!r} is not an encoded name: {chr(byte)!r} is never encoded")
        raw.append(byte)
        i += 3
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{text!r} is not an encoded name: not UTF-8 ({exc})") from exc


def task_name_for_key(parts: Sequence[str]) -> str:
    """One task name for an asset key: each part ``encode_name``-d, joined with ``.``."""
    if isinstance(parts, str):
        raise TypeError("an asset key is a sequence of parts, not one string")
    if not parts:
        raise ValueError("an asset key needs at least one part")
    return ".".join(encode_name(part) for part in parts)


def key_for_task_name(name: str) -> list[str]:
    """The asset key parts ``task_name_for_key`` joined into ``name``."""
    return [decode_name(part) for part in name.split(".")]


def check_segment(text: str, what: str = "name") -> str:
    """``text`` unchanged when it is one safe path segment; ValueError naming the problem if not."""
    if not isinstance(text, str) or text == "":
        raise ValueError(f"{what} must be non-empty text, not {text!r}")
    if text in (".", ".."):
        raise ValueError(f"{what} {text!r} would leave its folder")
    bad = sorted({c for c in text if c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        raise ValueError(
            f"{what} {text!r} holds {', '.join(repr(c) for c in bad)}, which cannot be in a path "
            f"segment (encode it with encode_name)"
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} {text!r} is not valid Unicode text") from exc
    if size > _MAX_SEGMENT_BYTES:
        raise ValueError(f"{what} {text[:40]!r}... is longer than {_MAX_SEGMENT_BYTES} bytes")
    return text


def split_task_path(task_path: str) -> tuple[str, str, str]:
    """``usecase/package/task`` as its three checked parts."""
    parts = task_path.strip("/").split("/") if isinstance(task_path, str) else []
    if len(parts) != 3:
        raise ValueError(f"a task path is 'usecase/package/task', not {task_path!r}")
    usecase, package, task = parts
    return (
        check_segment(usecase, "usecase"),
        check_segment(package, "package"),
        check_segment(task, "task"),
    )
