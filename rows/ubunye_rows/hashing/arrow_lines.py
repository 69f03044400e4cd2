"""Canonical lines of an Arrow table, built a slice at a time with Arrow compute.

Arrow writes most values as rows-v1 wants them, or close enough to rewrite in bulk:
integers, booleans, strings, dates, decimals, doubles and floats (plain or d.dddE<n>),
timestamps in years 1000 to 9999, and lists and structs of those. Every other value
(control characters, NaN, subnormals, far years, maps, ...) is written by
:mod:`ubunye_rows.hashing.canonical` and put back in its place, so a slice's lines are
always the spec's lines; the tests hold the two paths together byte for byte.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ubunye_rows.hashing.canonical import (
    PLAIN_HIGH,
    PLAIN_LOW,
    json_string,
    list_item_kind,
    map_kinds,
    micros_text,
    struct_field_kinds,
    value_text,
)
from ubunye_rows.hashing.lanes import hash_threads
from ubunye_rows.hashing.types import canonical_type, plain_type

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: Rows per slice: bounds the memory of one slice's text and keeps its offsets in 32 bits.
SLICE_ROWS = 1 << 17

#: Raw bytes per slice: wide rows (long text, blobs) get fewer rows per slice, so a slice's
#: lines stay far inside Arrow's 2 GiB limit of one string array whatever the row width.
SLICE_BYTES = 64 << 20

#: A slice is cut in parts for threads only when each part gets at least this many rows.
_PART_ROWS = 8192

#: Microseconds since 1970 of 1000-01-01 and 10000-01-01: Arrow writes a four digit year here.
_FOUR_DIGIT_YEARS_US = (-30_610_224_000_000_000, 253_402_300_800_000_000)

#: First and last date32 day numbers rows-v1 writes (0001-01-01 and 9999-12-31).
_DATE32_RANGE = (-719_162, 2_932_896)


@dataclass(frozen=True)
class _Choices:
    """A line part that is one of a few texts per row: ``options[codes[row]]``.

    Fixed texts on either side are written into every option, so they cost the line's final
    join no part of their own; ``codes`` is an int8 array without nulls.
    """

    codes: pa.Array
    options: tuple[str, ...]

    def around(self, before: str = "", after: str = "") -> _Choices:
        return _Choices(self.codes, tuple(before + option + after for option in self.options))

    def texts(self) -> pa.Array:
        import pyarrow as pa

        return pa.array(self.options, pa.string()).take(self.codes)


def table_slices(table: pa.Table, names: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` (columns ``names`` in that order) in slices of at most SLICE_ROWS.

    Small chunks (a folder of small files keeps one per file) are joined up to a slice, since
    each slice costs about the same whatever its size; only one slice is copied at a time.
    """
    import pyarrow as pa

    selected = table.select(list(names))
    pending: list[pa.RecordBatch] = []
    pending_rows = 0

    def joined() -> pa.RecordBatch:
        if len(pending) == 1:
            return pending[0]
        return (
            pa.Table.from_batches(pending, schema=selected.schema).combine_chunks().to_batches()[0]
        )

    for batch in selected.to_batches():
        cap = _rows_within_byte_budget(batch)
        if batch.num_rows >= cap // 8:
            step = _even_step(batch.num_rows, cap)
            for start in range(0, batch.num_rows, step):
                yield batch.slice(start, step)
            continue
        if pending_rows + batch.num_rows > cap:
            yield joined()
            pending, pending_rows = [], 0
        pending.append(batch)
        pending_rows += batch.num_rows
    if pending_rows:
        yield joined()


def _rows_within_byte_budget(batch: pa.RecordBatch) -> int:
    """Most rows of ``batch`` a slice may take: SLICE_ROWS, fewer when its rows are wide."""
    if batch.num_rows == 0:
        return SLICE_ROWS
    per_row = max(1, batch.nbytes // batch.num_rows)
    return max(1, min(SLICE_ROWS, SLICE_BYTES // per_row))


def _even_step(rows: int, cap: int = SLICE_ROWS) -> int:
    """Rows per slice for a batch of ``rows``: at most ``cap``, in a count of even slices
    that is a multiple of the threads, so no thread is left with a short last slice alone."""
    count = -(-rows // cap)
    if count > 1:
        threads = hash_threads()
        count = -(-count // threads) * threads
    return -(-rows // count)


def _written_by_spec(kind: str, values: list) -> list[str | None]:
    """Each value's canonical text by the row-at-a-time spec, None for a null."""
    return [None if v is None else value_text(v, kind) for v in values]


def _put_back(text: pa.Array, col: pa.Array, mask: pa.Array, kind: str, head: str = "") -> pa.Array:
    """``text`` with the masked positions replaced by ``head`` + the spec's text of the value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mask = mask.fill_null(False)
    if not pc.any(mask).as_py():
        return text
    written = [
        head + m for m in _written_by_spec(kind, col.filter(mask).to_pylist()) if m is not None
    ]
    return pc.replace_with_mask(text, mask, pa.array(written, pa.string()))


def _floor_micros(col: pa.Array) -> pa.Array:
    """A timestamp column as int64 microseconds since 1970, sub-microseconds floored."""
    import pyarrow as pa
    import pyarrow.compute as pc

    unit = col.type.unit
    raw = col.cast(pa.int64())
    if unit == "ns":
        quotient = pc.divide(raw, 1000)  # truncates toward zero
        below = pc.less(pc.subtract(raw, pc.multiply(quotient, 1000)), 0)
        return pc.if_else(below, pc.subtract(quotient, 1), quotient)
    factor = {"s": 1_000_000, "ms": 1000, "us": 1}[unit]
    return raw if factor == 1 else pc.multiply_checked(raw, factor)


#: The smallest normal float64 and float32: below them Java's two-digit rule can matter.
_SMALLEST_NORMAL = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38}

#: Arrow's shortest text of a float: sign, integer digits, fraction digits, exponent.
_FLOAT_PARTS = r"^(?P<sign>-?)(?P<whole>\d+)(?:\.(?P<fraction>\d+))?(?:e\+?(?P<exp>-?\d+))?$"


def _scientific_texts(text: pa.Array) -> pa.Array:
    """Arrow's shortest text of finite, normal, non-zero floats rewritten as Java's d.dddE<n>.

    The digits are the same (both are the shortest that read back); only the layout moves.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = pc.extract_regex(text, _FLOAT_PARTS)
    sign, whole = pc.struct_field(parts, "sign"), pc.struct_field(parts, "whole")
    fraction, exp = pc.struct_field(parts, "fraction"), pc.struct_field(parts, "exp")
    exp = pc.if_else(pc.equal(exp, ""), "0", exp).cast(pa.int64())
    digits = pc.binary_join_element_wise(whole, fraction, "")
    significant = pc.utf8_ltrim(digits, "0")
    leading_zeros = pc.subtract(pc.utf8_length(digits), pc.utf8_length(significant))
    power = pc.add(pc.subtract(pc.subtract(pc.utf8_length(whole), leading_zeros), 1), exp)
    significant = pc.utf8_rtrim(significant, "0")
    first = pc.utf8_slice_codeunits(significant, 0, 1)
    rest = pc.utf8_slice_codeunits(significant, 1)
    rest = pc.if_else(pc.equal(rest, ""), "0", rest)
    return pc.binary_join_element_wise(sign, first, ".", rest, "E", power.cast(pa.string()), "")


def _float_texts(col: pa.Array, kind: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_float16(col.type):
        col = col.cast(pa.float32())
    size = pc.abs(col)
    # NaN compares false everywhere, so it is never plain.
    plain = pc.and_(pc.greater_equal(size, PLAIN_LOW), pc.less(size, PLAIN_HIGH))
    # Arrow writes the shortest round-trip digits (at the column's precision) but no ".0";
    # in the plain range a value has no fraction exactly when it is a whole number.
    text = pc.cast(col, pa.string())
    whole = pc.equal(pc.floor(col), col)
    if pc.any(whole).as_py():
        # One pass over the text: the suffix array holds no text worth copying twice.
        text = pc.binary_join_element_wise(text, pc.if_else(whole, ".0", ""), "")
    zero = pc.equal(size, 0.0)
    if pc.any(zero).as_py():
        plain = pc.or_(plain, zero)  # Arrow writes "0" and "-0": with ".0" those are Java's
    not_plain = pc.invert(plain).fill_null(False)
    if not pc.any(not_plain).as_py():
        return text
    smallest = _SMALLEST_NORMAL["float32" if pa.types.is_float32(col.type) else "float64"]
    scientific = pc.and_(
        not_plain, pc.and_(pc.is_finite(col), pc.greater_equal(size, smallest))
    ).fill_null(False)
    if pc.any(scientific).as_py():
        chosen = pc.cast(col.filter(scientific), pa.string())
        text = pc.replace_with_mask(text, scientific, _scientific_texts(chosen))
        not_plain = pc.and_(not_plain, pc.invert(scientific))
    # NaN and the infinities are fixed strings; only subnormals (Java's two-digit rule) are
    # left for the spec.
    nan = pc.is_nan(col).fill_null(False)
    if pc.any(nan).as_py():
        text = pc.if_else(nan, pa.scalar('"NaN"'), text)
        not_plain = pc.and_(not_plain, pc.invert(nan))
    infinite = pc.is_inf(col).fill_null(False)
    if pc.any(infinite).as_py():
        signed = pc.if_else(pc.less(col, 0.0), '"-Infinity"', '"Infinity"')
        text = pc.if_else(infinite, signed, text)
        not_plain = pc.and_(not_plain, pc.invert(infinite))
    return _put_back(text, col, not_plain, kind)


def _timestamp_texts(col: pa.Array, head: str = "") -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    zoned = col.type.tz is not None
    micros = _floor_micros(col)
    low, high = _FOUR_DIGIT_YEARS_US
    outside = pc.or_(pc.less(micros, low), pc.greater_equal(micros, high)).fill_null(False)
    any_outside = pc.any(outside).as_py()
    # An aware timestamp holds UTC: read as naive, its text is the UTC wall time.
    wall = micros.cast(pa.timestamp("us"))
    if any_outside:
        wall = pc.if_else(outside, pa.scalar(None, pa.timestamp("us")), wall)
    # "yyyy-MM-dd HH:mm:ss.ffffff" with a four digit year: the space is always byte 10.
    text = pc.binary_replace_slice(pc.cast(wall, pa.string()), 10, 11, "T")
    text = pc.binary_join_element_wise(head + '"', text, 'Z"' if zoned else '"', "")
    if any_outside:
        written = [head + micros_text(v, zoned) for v in micros.filter(outside).to_pylist()]
        text = pc.replace_with_mask(text, outside, pa.array(written, pa.string()))
    return text


def _text_bytes(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's value offsets (from 0) and its values' UTF-8 bytes, as numpy views."""
    import numpy as np

    _, offset_buffer, data_buffer = col.buffers()
    if data_buffer is None or len(col) == 0:
        return np.zeros(len(col) + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    offsets = np.frombuffer(
        offset_buffer, dtype=np.int32, count=len(col) + 1, offset=col.offset * 4
    )
    start, end = int(offsets[0]), int(offsets[-1])
    raw = np.frombuffer(data_buffer, dtype=np.uint8, count=end - start, offset=start)
    return offsets - start, raw


def _rows_holding(col: pa.Array, offsets: np.ndarray, hits: np.ndarray) -> pa.Array:
    """True for each valid value of ``col`` with a byte marked in ``hits``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = np.zeros(len(col), dtype=bool)
    rows[np.searchsorted(offsets, np.flatnonzero(hits), side="right") - 1] = True
    mask = pa.array(rows)
    return pc.and_(mask, col.is_valid()) if col.null_count else mask


def _string_texts(col: pa.Array, kind: str, head: str = "") -> pa.Array:
    import pyarrow.compute as pc

    # Invalid UTF-8 must fail here, as it does on the spec path, not be hashed as bytes.
    col.validate(full=True)
    # One scan of the raw bytes finds the values that need escaping at all (most text has no
    # quote, backslash or control character); only those go through the slower passes.
    offsets, raw = _text_bytes(col)
    text = pc.binary_join_element_wise(head + '"', _escaped_quotes(col, offsets, raw), '"', "")
    control = raw < 0x20
    if control.any():
        text = _put_back(text, col, _rows_holding(col, offsets, control), kind, head)
    return text


def _list_texts(col: pa.Array, kind: str) -> pa.Array:
    """``[a,b,...]`` per list, elements by their own kind and nulls as ``null``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rebased, first, last = _offsets_from_zero(col)
    items = col.values.slice(first, last - first)
    texts = value_texts(items, list_item_kind(kind)).fill_null("null")
    lists = pa.ListArray.from_arrays(rebased, texts, mask=col.is_null())
    return pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")


def _map_texts(col: pa.Array, kind: str) -> pa.Array | None:
    """``{"key":value,...}`` per map, entries sorted by key, null values kept; None if the
    keys are neither text nor integers (the spec writes those maps)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key_type = col.type.key_type
    if not (pa.types.is_string(key_type) or pa.types.is_integer(key_type)):
        return None
    rebased, first, last = _offsets_from_zero(col)
    keys = col.keys.slice(first, last - first)
    items = col.items.slice(first, last - first)
    # The row each entry belongs to, so one sort by (row, key) sorts every map by its keys.
    entries = pa.ListArray.from_arrays(rebased, pa.nulls(last - first, pa.null()))
    rows = pc.list_parent_indices(entries)
    order = pc.sort_indices(
        pa.table({"row": rows, "key": keys}), sort_keys=[("row", "ascending"), ("key", "ascending")]
    )
    if pa.types.is_string(key_type):
        key_texts = _string_texts(keys, "string")
    else:
        key_texts = pc.binary_join_element_wise('"', pc.cast(keys, pa.string()), '"', "")
    _, value_kind = map_kinds(kind)
    value_texts_ = value_texts(items, value_kind).fill_null("null")
    members = pc.binary_join_element_wise(key_texts, ":", value_texts_, "").take(order)
    maps = pa.ListArray.from_arrays(rebased, members, mask=col.is_null())
    return pc.binary_join_element_wise("{", pc.binary_join(maps, ","), "}", "")


def _struct_texts(col: pa.Array, kind: str) -> pa.Array:
    """``{"field":value,...}`` per struct, fields in declared order, null fields left out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    field_kinds = struct_field_kinds(kind)
    parts: list = ["{"]
    for field, values in zip(col.type, col.flatten(), strict=True):
        text = value_texts(values, field_kinds.get(field.name, ""))
        if text.null_count < len(text):
            parts.append(pc.binary_join_element_wise("," + json_string(field.name) + ":", text, ""))
    parts.append("}")
    if len(parts) == 2:
        body = pa.array(["{}"] * len(col), pa.string())
    else:
        body = pc.binary_join_element_wise(*parts, "", null_handling="replace", null_replacement="")
        body = pc.replace_substring(body, "{,", "{", max_replacements=1)
    return pc.if_else(col.is_null(), pa.scalar(None, pa.string()), body)


def _kind_decides_text(t: pa.DataType) -> bool:
    """True where the spec's text depends on the kind name, not only on the Python value."""
    import pyarrow as pa

    return (
        pa.types.is_floating(t)
        or pa.types.is_list(t)
        or pa.types.is_struct(t)
        or pa.types.is_map(t)
    )


def _member_texts(col: pa.Array, kind: str, head: str) -> pa.Array | None:
    """``head`` + each value's text, for the kinds whose text takes a join pass anyway (so the
    head costs nothing); None for every other kind."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if plain_type(t) != t:
        return None
    if pa.types.is_boolean(t):
        return pc.if_else(col, head + "true", head + "false")
    if pa.types.is_string(t):
        return _string_texts(col, kind, head)
    if pa.types.is_timestamp(t):
        return _timestamp_texts(col, head)
    if pa.types.is_date32(t):
        return pc.binary_join_element_wise(head + '"', _date_texts(col), '"', "")
    return None


def _member_pieces(col: pa.Array, kind: str, head: str) -> list | None:
    """``head`` + each value's text as pieces the line's final join puts together (scalars and
    arrays), for a column without nulls whose text would otherwise take a join pass of its own;
    None when the column needs the general path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if col.null_count or len(col) == 0 or plain_type(t) != t:
        return None
    if pa.types.is_boolean(t):
        return [head, _Choices(pc.cast(col, pa.int8()), ("false", "true"))]
    if pa.types.is_floating(t) and kind == canonical_type(t):
        return _float_pieces(col, head)
    if pa.types.is_timestamp(t):
        micros = _floor_micros(col)
        low, high = _FOUR_DIGIT_YEARS_US
        bounds = pc.min_max(micros)
        if bounds["min"].as_py() < low or bounds["max"].as_py() >= high:
            return None
        # "yyyy-MM-dd HH:mm:ss.ffffff" with a four digit year: the space is always byte 10.
        text = pc.binary_replace_slice(
            pc.cast(micros.cast(pa.timestamp("us")), pa.string()), 10, 11, "T"
        )
        return [head + '"', text, 'Z"' if t.tz is not None else '"']
    if pa.types.is_date32(t):
        return [head + '"', _date_texts(col), '"']
    if pa.types.is_string(t):
        col.validate(full=True)
        offsets, raw = _text_bytes(col)
        if (raw < 0x20).any():
            return None
        return [head + '"', _escaped_quotes(col, offsets, raw), '"']
    return None


def _float_pieces(col: pa.Array, head: str) -> list | None:
    """A float column without nulls as ``[head, digits, suffix]``: the suffix is ``.0`` after a
    whole number, or the whole text of NaN and the infinities (their digits are left empty);
    None when a value is written in scientific form or by the spec."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_float16(col.type):
        return None
    values = col.to_numpy(zero_copy_only=True)
    # The spec decides on the value as a double, whatever the column's precision.
    wide = values.astype(np.float64, copy=False)
    size = np.abs(wide)
    finite = np.isfinite(wide)
    plain = ((size >= PLAIN_LOW) & (size < PLAIN_HIGH)) | (size == 0.0)
    if not (plain | ~finite).all():
        return None
    # Codes into the suffixes: 0 "", 1 ".0", 2 NaN, 3 +Infinity, 4 -Infinity.
    code = (np.floor(wide) == wide).astype(np.int8)
    special = ~finite
    if special.any():
        code[np.isnan(wide)] = 2
        code[wide == np.inf] = 3
        code[wide == -np.inf] = 4
        col = pa.array(values, col.type, mask=special)  # their digits are left out
    suffix = _Choices(pa.array(code), ("", ".0", '"NaN"', '"Infinity"', '"-Infinity"'))
    return [head, pc.cast(col, pa.string()), suffix]


def _escaped_quotes(col: pa.Array, offsets: np.ndarray, raw: np.ndarray) -> pa.Array:
    """String values with every backslash and double quote escaped by a backslash."""
    import pyarrow.compute as pc

    special = (raw == ord('"')) | (raw == ord("\\"))
    if not special.any():
        return col
    rows = _rows_holding(col, offsets, special)
    # Many such values: one pass over the whole slice is cheaper than a filter.
    chosen = col if pc.sum(rows).as_py() * 4 > len(col) else col.filter(rows)
    escaped = pc.replace_substring(pc.replace_substring(chosen, "\\", "\\\\"), '"', '\\"')
    return escaped if chosen is col else pc.replace_with_mask(col, rows, escaped)


def _date_texts(col: pa.Array) -> pa.Array:
    """Dates as ``yyyy-MM-dd`` (unquoted); refuses dates outside the years 1 to 9999."""
    import pyarrow as pa
    import pyarrow.compute as pc

    days = col.cast(pa.int32())
    low, high = pc.min(days).as_py(), pc.max(days).as_py()
    if low is not None and (low < _DATE32_RANGE[0] or high > _DATE32_RANGE[1]):
        raise ValueError("a date column holds a date outside the years 1 to 9999")
    return pc.cast(col, pa.string())


def _as_plain(col: pa.Array, plain: pa.DataType) -> pa.Array:
    """``col`` with the values it holds, as a valid array of its :func:`plain_type` ``plain``.

    Lists, maps and structs are rebuilt from their children here, not cast: pyarrow (26.0.1)
    casts a list's null-typed values as long as the list, not as its offsets span, and a list
    view without its last offset, so its casts of those give arrays that read wrong or abort.
    """
    import pyarrow as pa

    t = col.type
    if t == plain:
        return col
    if pa.types.is_dictionary(t):
        return _as_plain(col.dictionary_decode(), plain)
    mask = col.is_null() if col.null_count else None
    if pa.types.is_struct(t):
        children = [_as_plain(col.field(i), f.type) for i, f in enumerate(plain)]
        return pa.StructArray.from_arrays(children, fields=list(plain), mask=mask)
    if pa.types.is_map(t):
        offsets, first, last = _offsets_from_zero(col)
        keys = _as_plain(col.keys.slice(first, last - first), plain.key_type)
        items = _as_plain(col.items.slice(first, last - first), plain.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=plain, mask=mask)
    if pa.types.is_list(plain):
        offsets, values = _list_parts(col)
        values = _as_plain(values, plain.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=plain, mask=mask)
    return col.cast(plain)


def _list_parts(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Any list layout's int32 offsets from zero and the values they span, in row order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if isinstance(t, pa.ListViewType | pa.LargeListViewType):
        # A view's lists may lie anywhere in its values: flattening puts them in row order.
        sizes = pc.list_value_length(col).fill_null(0).to_numpy()
        return pa.array(np.concatenate([[0], np.cumsum(sizes)]), pa.int32()), pc.list_flatten(col)
    if isinstance(t, pa.FixedSizeListType):
        size = t.list_size
        offsets = pa.array(np.arange(len(col) + 1) * size, pa.int32())
        return offsets, col.values.slice(col.offset * size, len(col) * size)
    offsets, first, last = _offsets_from_zero(col)
    return offsets, col.values.slice(first, last - first)


def _offsets_from_zero(col: pa.Array) -> tuple[pa.Array, int, int]:
    """A list's or map's offsets moved to start at zero (int32), and its first and last."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = col.offsets  # already moved by the slice, not yet starting at zero
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, first).cast(pa.int32()), first, last


def value_texts(col: pa.Array, kind: str) -> pa.Array:
    """One column's canonical value texts as a string array; null where the value is null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = plain_type(col.type)
    if plain != col.type:
        col = _as_plain(col, plain)
    t = col.type
    if _kind_decides_text(t) and kind != canonical_type(t):
        # A struct field whose name holds ':', ',', '<' or '>' makes its kind text ambiguous;
        # the spec then reads a kind other than the Arrow type, and its text is the one kept.
        return pa.array(_written_by_spec(kind, col.to_pylist()), pa.string())
    if pa.types.is_integer(t):
        return pc.cast(col, pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(col, "true", "false")
    if pa.types.is_string(t):
        return _string_texts(col, kind)
    if pa.types.is_floating(t):
        return _float_texts(col, kind)
    if pa.types.is_timestamp(t):
        return _timestamp_texts(col)
    if pa.types.is_date32(t):
        return pc.binary_join_element_wise('"', _date_texts(col), '"', "")
    if pa.types.is_decimal(t) and t.scale >= 0:
        return pc.cast(col, pa.string())
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.string())
    if pa.types.is_binary(t):
        encode = binascii.b2a_base64
        return pa.array(
            [
                None if v is None else '"' + encode(v, newline=False).decode("ascii") + '"'
                for v in col.to_pylist()
            ],
            pa.string(),
        )
    if pa.types.is_map(t):
        texts = _map_texts(col, kind)
        if texts is not None:
            return texts
    elif pa.types.is_list(t):
        return _list_texts(col, kind)
    if pa.types.is_struct(t) and t.num_fields:
        return _struct_texts(col, kind)
    return pa.array(_written_by_spec(kind, col.to_pylist()), pa.string())


def slice_lines(batch: pa.RecordBatch, kinds: Sequence[str]) -> pa.Array:
    """The canonical line of every row of ``batch``, whose columns are sorted by name.

    A large slice is cut in parts built on ``hash_threads()`` threads (Arrow's kernels
    release the GIL) and joined back in order, so the lines never depend on the threads.
    """
    import pyarrow as pa

    rows = batch.num_rows
    parts = min(hash_threads(), rows // _PART_ROWS)
    if parts < 2:
        return _part_lines(batch, kinds)
    step = -(-rows // parts)
    pieces = [batch.slice(start, step) for start in range(0, rows, step)]
    with ThreadPoolExecutor(max_workers=len(pieces), thread_name_prefix="ubunye-lines") as pool:
        built = list(pool.map(lambda piece: _part_lines(piece, kinds), pieces))
    return pa.concat_arrays(built)


def _merged_parts(parts: list) -> list:
    """``parts`` ready to join: neighbouring texts as one, and texts next to a choice of texts
    folded into it (the join's cost grows with its parts, text or not)."""
    joined: list = []
    for part in parts:
        last = joined[-1] if joined else None
        if isinstance(part, str) and isinstance(last, str):
            joined[-1] += part
        elif isinstance(part, str) and isinstance(last, _Choices):
            joined[-1] = last.around(after=part)
        elif isinstance(part, _Choices) and isinstance(last, str):
            joined[-1] = part.around(before=last)
        else:
            joined.append(part)
    return [part.texts() if isinstance(part, _Choices) else part for part in joined]


def _joined_lines(joined: list, opened: bool, rows: int) -> pa.Array:
    """The ``rows`` lines the ``joined`` parts make (``opened``: the first member wrote "{")."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # Not null_handling="skip": some pyarrow versions drop rows where every input is null.
    body = pc.binary_join_element_wise(*joined, "", null_handling="replace", null_replacement="")
    if not isinstance(body, pa.Array):  # every part was a scalar: impossible with a column
        raise RuntimeError("the canonical lines of a slice came back as one value")
    # Unless the first member opened the line, every member starts with a comma and the
    # first one follows the brace.
    lines = body if opened else pc.replace_substring(body, "{,", "{", max_replacements=1)
    if len(lines) != rows or lines.null_count:
        raise RuntimeError("the vectorised canonical lines lost rows")  # never expected
    return lines if lines.type == pa.string() else lines.cast(pa.string())


def _part_lines(batch: pa.RecordBatch, kinds: Sequence[str]) -> pa.Array:
    """The canonical lines of ``batch``, built on the calling thread."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts: list = []
    # When the first member written has a value in every row it opens the line itself
    # ('{"name":' instead of ',"name":'): no pass to drop the comma after the brace.
    opened = False
    for i, (name, kind) in enumerate(zip(batch.schema.names, kinds, strict=True)):
        head = "," + json_string(name) + ":"
        col = batch.column(i)
        if not parts and col.null_count == 0:
            head = "{" + head[1:]  # this member opens every line (no null can drop it)
        pieces = _member_pieces(col, kind, "," + head[1:])
        if pieces is not None:
            if not parts:
                pieces[0], opened = "{" + pieces[0][1:], True
            parts += pieces
            continue
        member = _member_texts(col, kind, head)
        if member is not None:
            if member.null_count and head[0] == "{":
                member = _member_texts(col, kind, "," + head[1:])
            elif head[0] == "{":
                opened = True
            # The head is already in: a null member (head and all) is left out of the line.
            if member.null_count < len(member):
                parts.append(member)
            continue
        if head[0] == "{":
            head = "," + head[1:]
        text = value_texts(col, kind)
        if text.null_count == 0:
            if not parts:
                head, opened = "{" + head[1:], True
            parts += [head, text]  # a scalar head costs no pass over the column
        elif text.null_count < len(text):
            # A null member is left out of the line, head and all.
            parts.append(pc.binary_join_element_wise(head, text, ""))
    if not parts:
        return pa.array(["{}"] * batch.num_rows, pa.string())
    if not opened:
        parts.insert(0, "{")
    return _joined_lines(_merged_parts([*parts, "}"]), opened, batch.num_rows)
