"""The rows-v1 canonical line, one row at a time: the specification written as code.

Each value is written the way Spark's ``to_json`` (Jackson) writes it with the rows-v1
options. The vectorised Arrow path is held to this module byte for byte by the tests,
and falls back to it for every value Arrow cannot write canonically.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ubunye_rows.hashing.types import Kind

#: Doubles in this magnitude range are written as plain decimals, all others as d.dddE<n>.
PLAIN_LOW, PLAIN_HIGH = 1e-3, 1e7

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROS_PER_DAY = 86_400_000_000

#: Jackson's escapes: the two JSON specials, five short forms, and ``\u00XX`` (upper-case hex)
#: for every other control character. Python's json writes lower-case hex, which would differ.
_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def json_string(text: str) -> str:
    """``text`` as a JSON string literal, escaped exactly as Jackson escapes it."""
    return '"' + text.translate(_ESCAPES) + '"'


def _scientific(sign: str, digits: str, power: int) -> str:
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{power}"


def _java_text(magnitude: float, shortest: str, reads_back: Any, negative: bool) -> str:
    """Java's toString of a finite, non-zero number whose shortest round-trip text is given."""
    sign = "-" if negative else ""
    if PLAIN_LOW <= magnitude < PLAIN_HIGH:
        text = format(decimal.Decimal(shortest), "f")
        return sign + (text if "." in text else text + ".0")
    _, digit_tuple, exponent = decimal.Decimal(shortest).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    power = len(digit_tuple) + int(exponent) - 1
    if len(digits) == 1:
        # Java writes at least two digits and, among those, the decimal nearest the value
        # that still reads back as it: 4.9E-324 for the smallest subnormal, not 5.0E-324.
        near = f"{magnitude:.1e}"
        if reads_back(near):
            mantissa, _, exp = near.partition("e")
            digits = mantissa.replace(".", "").rstrip("0") or "0"
            power = int(exp)
    return _scientific(sign, digits, power)


def java_double_text(x: float) -> str:
    """A float64 as Java's ``Double.toString`` writes it (finite values only)."""
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    magnitude = abs(x)
    return _java_text(magnitude, repr(magnitude), lambda t: float(t) == magnitude, x < 0)


def java_float_text(x: float) -> str:
    """A float32 as Java's ``Float.toString`` writes it (finite values only)."""
    import numpy as np

    single = np.float32(x)
    if single == 0:
        return "-0.0" if np.signbit(single) else "0.0"
    magnitude = np.abs(single)
    shortest = np.format_float_positional(magnitude, unique=True, trim="-")
    return _java_text(
        float(magnitude),
        shortest,
        lambda t: np.float32(float(t)) == magnitude,
        bool(np.signbit(single)),
    )


def float_text(x: float, kind: str = "float64") -> str:
    """A float64 or float32 value as its canonical JSON: NaN and infinities as strings."""
    if math.isnan(x):
        return '"NaN"'
    if math.isinf(x):
        return '"Infinity"' if x > 0 else '"-Infinity"'
    return java_float_text(x) if kind == "float32" else java_double_text(x)


def date_text(value: dt.date) -> str:
    """A date as ``"yyyy-MM-dd"``."""
    return f'"{value.year:04d}-{value.month:02d}-{value.day:02d}"'


def micros_text(micros: int, zoned: bool) -> str:
    """Microseconds since 1970 as ``"yyyy-MM-ddTHH:mm:ss.ffffff"``, with ``Z`` when zoned (UTC).

    Every value of a 64-bit timestamp is written, as Spark's ``to_json`` writes it: a year
    outside 0 to 9999 (a zone can carry year 1 or 9999 across) gets its sign, ``+10000``.
    """
    days, rest = divmod(micros, _MICROS_PER_DAY)
    year, month, day = _civil_date(days)
    seconds, fraction = divmod(rest, 1_000_000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = (
        f"{_iso_year(year)}-{month:02d}-{day:02d}"
        f"T{hours:02d}:{minutes:02d}:{seconds:02d}.{fraction:06d}"
    )
    return f'"{text}Z"' if zoned else f'"{text}"'


def _iso_year(year: int) -> str:
    """A proleptic Gregorian year as java.time writes it: four digits, a sign past them."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"+{year}" if year > 0 else f"-{-year:04d}"


def _civil_date(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day number since 1970-01-01 in the proleptic Gregorian calendar,
    for any year (Python's ``date`` stops at 1 and 9999); H. Hinnant's days_to_civil."""
    shifted = days + 719_468
    era = shifted // 146_097
    day_of_era = shifted - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def timestamp_text(value: dt.datetime) -> str:
    """A datetime: an aware one as its UTC instant with ``Z``, a naive one as its wall time."""
    if value.tzinfo is not None and value.utcoffset() is not None:
        return micros_text((value - _EPOCH) // dt.timedelta(microseconds=1), zoned=True)
    wall = value.replace(tzinfo=dt.timezone.utc) - _EPOCH
    return micros_text(wall // dt.timedelta(microseconds=1), zoned=False)


def binary_text(value: bytes | bytearray | memoryview) -> str:
    """Bytes as standard base64 in quotes."""
    return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'


@lru_cache(maxsize=4096)
def split_top_level(text: str) -> tuple[str, ...]:
    """Split ``text`` on the commas that are not inside ``<...>``.

    Parentheses are not counted, so ``decimal(10,2)`` splits too, as the reference reads kind
    texts. Only a bare kind text comes here (a schema given as text): a :class:`Kind` made from
    an Arrow type carries its parts, which is how a map keyed by a decimal or a struct field
    named ``a,b`` keeps its value types, as Spark writes them.
    """
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text:
        parts.append(text[start:])
    return tuple(parts)


def struct_field_kinds(kind: str) -> dict[str, str]:
    """Field name to kind of a struct kind, e.g. ``struct<a:int32,b:string>`` gives
    ``{"a": "int32", "b": "string"}``; empty for any other kind. A :class:`Kind` made from an
    Arrow type gives its fields; a bare text is split at its top-level commas."""
    if isinstance(kind, Kind) and kind.fields is not None:
        return kind.fields
    return _struct_field_kinds_of_text(str(kind))


@lru_cache(maxsize=4096)
def _struct_field_kinds_of_text(kind: str) -> dict[str, str]:
    if not kind.startswith("struct<"):
        return {}
    fields = {}
    for part in split_top_level(kind[7:-1]):
        name, _, child = part.partition(":")
        fields[name] = child
    return fields


def list_item_kind(kind: str) -> str:
    """``list<int64>`` -> ``int64``; ``""`` for other kinds."""
    if isinstance(kind, Kind) and kind.item is not None:
        return kind.item
    return kind[5:-1] if kind.startswith("list<") else ""


def map_kinds(kind: str) -> tuple[str, str]:
    """``map<string,int64>`` -> ``("string", "int64")``; empty names for other kinds. A
    :class:`Kind` made from an Arrow type gives its own (a ``decimal(p,s)`` key included)."""
    if isinstance(kind, Kind) and kind.key is not None and kind.value is not None:
        return kind.key, kind.value
    parts = split_top_level(kind[4:-1]) if kind.startswith("map<") and kind.endswith(">") else ()
    return (parts[0] if parts else "", parts[1] if len(parts) > 1 else "")


def map_key_text(key: Any) -> str:
    """A map key as the text of its JSON member name (Spark writes the key's toString)."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int | str | decimal.Decimal):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key) or math.isinf(key):
            return float_text(key).strip('"')
        return java_double_text(key)
    if isinstance(key, dt.date) and not isinstance(key, dt.datetime):
        return date_text(key).strip('"')
    raise TypeError(f"rows-v1 cannot write a map key of type {type(key).__name__}")


def map_text(entries: Iterable[tuple[Any, Any]], kind: str) -> str:
    """Map entries as one JSON object, keys ascending; a null value is written as ``null``."""
    _, value_kind = map_kinds(kind)
    members = [
        json_string(map_key_text(key)) + ":" + value_text(val, value_kind)
        for key, val in sorted(entries, key=lambda entry: entry[0])
    ]
    return "{" + ",".join(members) + "}"


def object_text(items: Iterable[tuple[Any, Any]], kinds: Mapping[str, str]) -> str:
    """A JSON object of ``items`` in the order given, null members left out."""
    members = [
        json_string(str(name)) + ":" + value_text(val, kinds.get(str(name), ""))
        for name, val in items
        if val is not None
    ]
    return "{" + ",".join(members) + "}"


def _native(value: Any) -> Any:
    """A numpy scalar as the Python value it holds; anything else unchanged."""
    module = type(value).__module__
    if module == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def value_text(value: Any, kind: str = "") -> str:
    """The canonical JSON text of a single value, typed by ``kind`` (a canonical type name)
    when the caller knows it."""
    value = _native(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value, kind)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return timestamp_text(value)
    if isinstance(value, dt.date):
        return date_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return binary_text(value)
    if isinstance(value, Mapping):
        if kind.startswith("map<"):
            return map_text(value.items(), kind)
        return object_text(value.items(), struct_field_kinds(kind))
    if isinstance(value, list | tuple):
        if kind.startswith("map<"):
            return map_text(value, kind)  # to_pylist hands a map over as (key, value) tuples
        item_kind = list_item_kind(kind)
        return "[" + ",".join(value_text(item, item_kind) for item in value) + "]"
    raise TypeError(f"rows-v1 cannot write a value of type {type(value).__name__}")


def canonical_line(row: Mapping[str, Any], kinds: Mapping[str, str] | None = None) -> str:
    """A row's canonical line: a JSON object with members in column-name order, nulls omitted."""
    kinds = kinds or {}
    return object_text(((name, row[name]) for name in sorted(row)), kinds)


def canonical_lines(
    rows: Iterable[Mapping[str, Any]], schema: Sequence[tuple[str, str]]
) -> list[str]:
    """The canonical line of every row, given the table's ``(name, canonical type)`` pairs."""
    kinds = {str(name): str(kind) for name, kind in schema}
    return [canonical_line(row, kinds) for row in rows]


def arrow_canonical_lines(table: Any) -> list[str]:
    """Every row of an Arrow table as its canonical line, one row at a time (the spec path)."""
    from ubunye_rows.hashing.types import schema_pairs

    kinds = dict(schema_pairs(table.schema))
    return [canonical_line(row, kinds) for row in table.to_pylist()]
