"""Lane buckets and row digests of a whole table: the native kernel first, the Python path
where the kernel does not write a column or refuses a value.

A column whose type the kernel does not write is written by the Python path
(:func:`~ubunye_rows.hashing.arrow_lines.value_texts`) and handed to the kernel as finished
texts; a table holding a value the kernel refuses (a date outside the years 1 to 9999, an
infinite date or time, invalid UTF-8, a null map key), or one it panicked on (a bug, warned
of), is hashed by the Python path whole, which then gives the spec's digest or its error.
``native.fallbacks`` counts both. Without the kernel every table takes the Python path.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing import native
from ubunye_rows.hashing.arrow_lines import slice_lines, table_slices, value_texts
from ubunye_rows.hashing.canonical import list_item_kind, map_kinds, struct_field_kinds
from ubunye_rows.hashing.infinities import refuse_infinite_times
from ubunye_rows.hashing.lanes import (
    bucket_slices_lanes,
    hash_threads,
    lending_may_end,
    line_digests,
)
from ubunye_rows.hashing.types import UnsupportedTypeError, canonical_type, plain_type

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def kernel_writes(arrow_type: pa.DataType, kind: str) -> bool:
    """True when the kernel writes values of ``arrow_type`` (already plain) as the spec writes
    them under the canonical type name ``kind``, nested types included."""
    import pyarrow as pa

    try:
        if kind != canonical_type(arrow_type):
            return False  # the spec would read the values by another kind
    except UnsupportedTypeError:
        return False
    t = pa.types
    if t.is_float16(arrow_type) or t.is_date64(arrow_type) or t.is_dictionary(arrow_type):
        return False
    if isinstance(arrow_type, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return kernel_writes(arrow_type.value_type, list_item_kind(kind))
    if t.is_map(arrow_type):
        key = arrow_type.key_type
        if not (t.is_string(key) or t.is_large_string(key) or t.is_integer(key)):
            return False
        return kernel_writes(arrow_type.item_type, map_kinds(kind)[1])
    if t.is_struct(arrow_type):
        names = [field.name for field in arrow_type]
        if len(set(names)) != len(names):
            return False  # the spec's rows are dicts: a repeated field name keeps one value
        if any("\x00" in name for name in names):
            return False  # the C Data interface passes names NUL-terminated: they would be cut
        fields = struct_field_kinds(kind)
        return all(kernel_writes(f.type, fields.get(f.name, "")) for f in arrow_type)
    scalars = (t.is_integer, t.is_floating, t.is_boolean, t.is_string, t.is_large_string)
    more = (t.is_binary, t.is_large_binary, t.is_date32, t.is_timestamp, t.is_decimal, t.is_null)
    return any(check(arrow_type) for check in scalars + more)


def _texts_by_python(column: pa.ChunkedArray, kind: str) -> pa.ChunkedArray:
    import pyarrow as pa

    return pa.chunked_array([value_texts(chunk, kind) for chunk in column.chunks], pa.string())


def kernel_type(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with the forms the kernel does not read (dictionaries, string and binary
    views, half floats) replaced by ones it does, nested included; the values and their
    canonical names stay. List views stay as they are: :func:`kernel_writes` leaves them to the
    Python path, since pyarrow casts a list view without its last offset (a valid, wrong array)."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        return kernel_type(t.value_type)
    if pa.types.is_float16(t):
        return pa.float32()  # every half float is exactly a float, and named float32
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return plain_type(t)
    if isinstance(t, pa.ListType | pa.LargeListType):
        layout = pa.list_ if isinstance(t, pa.ListType) else pa.large_list
        return layout(t.value_field.with_type(kernel_type(t.value_type)))
    if isinstance(t, pa.FixedSizeListType):
        return pa.list_(t.value_field.with_type(kernel_type(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(kernel_type(t.key_type)),
            t.item_field.with_type(kernel_type(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(kernel_type(f.type)) for f in t])
    return t


def _as_kernel_reads(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """The column cast to :func:`kernel_type` (no copy when it already is); None when the cast
    fails, so that the Python path writes it (and says what is wrong)."""
    import pyarrow as pa

    wanted = kernel_type(column.type)
    if wanted == column.type:
        return column
    try:
        cast = column.cast(wanted)
        cast.validate(full=True)
    except (pa.ArrowException, ValueError, TypeError):
        return None
    return cast


def kernel_input(
    table: pa.Table, names: Sequence[str], kinds: Sequence[str]
) -> tuple[pa.Table, list[bool]]:
    """``table``'s columns ``names`` in that order as the kernel reads them, and which of them
    the Python path has written as texts (``raw``)."""
    import pyarrow as pa

    columns, raw = [], []
    for name, kind in zip(names, kinds, strict=True):
        column = _as_kernel_reads(table.column(name))
        if column is not None and kernel_writes(column.type, kind):
            columns.append(column)
            raw.append(False)
        else:
            columns.append(_texts_by_python(table.column(name), kind))
            raw.append(True)
            native.fallbacks["columns"] += 1
    positional = [f"c{i}" for i in range(len(columns))]
    return pa.table(columns, names=positional), raw


def _by_kernel(output: str, table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> Any:
    """The kernel's ``output`` (``buckets`` or ``digests``) of the table's lines; None when the
    kernel is missing or hands the table back (the Python path then hashes it)."""
    module = native.kernel()
    if module is None:
        return None
    data, raw = kernel_input(table, names, kinds)
    return native.call_or_fall_back(
        module, "hash_table", data, list(names), raw, output, hash_threads()
    )


#: Rows a hash takes at a time while a core it lent may come back (``lanes.lending_may_end``).
LENDING_SLICE_ROWS = 1 << 17


def table_buckets(table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    """Per-bucket row counts and lane sums ((3, 256) uint64) of the canonical lines of ``table``'s
    columns ``names`` (sorted by name) written under ``kinds``."""
    if lending_may_end() and table.num_rows > LENDING_SLICE_ROWS:
        return _sliced_table_buckets(table, names, kinds)
    return _whole_table_buckets(table, names, kinds)


def _whole_table_buckets(table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    packed = _by_kernel("buckets", table, names, kinds)
    if packed is None:
        return python_table_buckets(table, names, kinds)
    return native.buckets_from_bytes(packed)


def _sliced_table_buckets(
    table: pa.Table, names: Sequence[str], kinds: Sequence[str]
) -> np.ndarray:
    """The buckets of ``table`` summed slice by slice, each slice hashed on the threads free when
    it starts (a row's bucket and lanes depend on the row alone; the sums wrap modulo 2**64)."""
    total = None
    for start in range(0, table.num_rows, LENDING_SLICE_ROWS):
        buckets = _whole_table_buckets(table.slice(start, LENDING_SLICE_ROWS), names, kinds)
        total = buckets if total is None else total + buckets
    return total


def table_digests(table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    """Each row's SHA-256 (of its canonical line, as :func:`table_buckets` writes it) as an
    (n, 32) uint8 array in row order."""
    packed = _by_kernel("digests", table, names, kinds)
    if packed is None:
        return python_table_digests(table, names, kinds)
    return native.digests_from_bytes(packed)


def python_table_buckets(table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    """:func:`table_buckets` by the Python path: Arrow compute lines, hashed a slice at a time."""
    refuse_infinite_times(table, names)
    return bucket_slices_lanes(table_slices(table, names), lambda batch: slice_lines(batch, kinds))


def python_table_digests(table: pa.Table, names: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    """:func:`table_digests` by the Python path."""
    import numpy as np

    refuse_infinite_times(table, names)

    def digests(batch: pa.RecordBatch) -> np.ndarray:
        return line_digests(slice_lines(batch, kinds))

    slices = table_slices(table, names)
    with ThreadPoolExecutor(max_workers=hash_threads(), thread_name_prefix="ubunye-diff") as pool:
        parts = list(pool.map(digests, slices))
    if not parts:
        return np.zeros((0, 32), dtype=np.uint8)
    return np.concatenate(parts)
