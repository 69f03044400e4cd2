"""Lane sums: the native kernel and the hashlib fallback give the spec's sums, on any threads."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubunye_rows import fingerprint
from ubunye_rows.hashing import lanes, native
from ubunye_rows.hashing.arrow_lines import slice_lines, table_slices
from ubunye_rows.hashing.canonical import arrow_canonical_lines
from ubunye_rows.hashing.digest import LANE_MASK, line_lanes
from ubunye_rows.hashing.fingerprint import arrow_fingerprint_or_raise
from ubunye_rows.hashing.types import schema_pairs

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

LINES = [
    '{"a":1}',
    "{}",
    "",
    '{"name":"Zoë \\"q\\" ☃ 𝄞 \u2028"}',
    '{"x":"NaN","y":-0.0,"z":1.0E-4}',
    "x" * 5000,  # long enough that hashlib would release the GIL
] * 7


def spec_sums(texts: list[str]) -> tuple[int, int]:
    """The lanes of each line by the row-at-a-time spec, summed modulo 2**64."""
    total_a = total_b = 0
    for text in texts:
        a, b = line_lanes(text)
        total_a, total_b = total_a + a, total_b + b
    return total_a & LANE_MASK, total_b & LANE_MASK


def shapes() -> dict[str, tuple[object, list[str]]]:
    """Arrays of the same lines in every layout a caller may hand over."""
    base = pa.array(LINES, pa.string())
    sliced = base.slice(3, 30)
    shapes = {
        "string": (base, LINES),
        "large_string": (base.cast(pa.large_string()), LINES),
        "sliced with an offset": (sliced, LINES[3:33]),
        "large_string sliced": (base.cast(pa.large_string()).slice(5, 20), LINES[5:25]),
        "chunked": (
            pa.chunked_array([base.slice(0, 10), base.slice(10, 0), base.slice(10)]),
            LINES,
        ),
        "empty": (pa.array([], pa.string()), []),
        "empty chunked": (pa.chunked_array([], pa.string()), []),
        "only empty lines": (pa.array(["", ""], pa.string()), ["", ""]),
    }
    if hasattr(pa, "string_view"):
        shapes["string_view"] = (base.cast(pa.string_view()), LINES)
    return shapes


@pytest.mark.parametrize("shape", list(shapes()))
def test_fallback_gives_the_spec_sums(shape):
    lines, texts = shapes()[shape]
    assert lanes.sum_line_lanes_hashlib(lines) == spec_sums(texts)


@pytest.mark.parametrize("shape", list(shapes()))
def test_fast_engine_and_fallback_give_identical_sums(shape):
    lines, _ = shapes()[shape]
    assert lanes.sum_line_lanes_kernel(lines) == lanes.sum_line_lanes_hashlib(lines)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(), max_size=60), st.integers(0, 5))
def test_fast_engine_agrees_with_the_spec_on_any_text(texts, cut):
    array = pa.array(texts, pa.string())
    chunked = pa.chunked_array([array.slice(0, cut), array.slice(cut)], pa.string())
    expected = spec_sums(texts)
    assert lanes.sum_line_lanes_kernel(chunked, threads=3) == expected
    assert lanes.sum_line_lanes_hashlib(chunked) == expected


def test_number_of_threads_does_not_change_the_sums():
    lines = pa.array([f'{{"i":{i},"t":"é{i * 7}"}}' for i in range(70_000)], pa.string())
    sums = {lanes.sum_line_lanes_kernel(lines, threads=n) for n in (1, 2, 3)}
    assert sums == {lanes.sum_line_lanes_hashlib(lines)}


def test_slices_hashed_on_any_number_of_threads_give_the_same_sums():
    pieces = [[f"row {i}-{j}" for j in range(i * 10)] for i in range(9)]
    expected = spec_sums([t for piece in pieces for t in piece])

    def build(piece: list[str]) -> pa.Array:
        return pa.array(piece, pa.string())

    for count in (1, 2, 3):
        assert lanes.sum_slices_lanes(iter(pieces), build, threads=count) == expected


def test_a_failing_slice_fails_the_whole_sum():
    def build(piece: int) -> pa.Array:
        if piece == 5:
            raise ValueError("slice 5 cannot be written")
        return pa.array([str(piece)])

    with pytest.raises(ValueError, match="slice 5"):
        lanes.sum_slices_lanes(iter(range(10)), build, threads=2)


def test_a_null_line_is_refused():
    lines = pa.array(['{"a":1}', None], pa.string())
    with pytest.raises(ValueError, match="never null"):
        lanes.sum_line_lanes(lines)
    with pytest.raises(ValueError, match="never null"):
        lanes.sum_line_lanes_hashlib(lines)


def test_lines_that_are_not_text_are_refused():
    with pytest.raises(TypeError, match="string or large_string"):
        lanes.sum_line_lanes(pa.array([1, 2]))
    with pytest.raises(TypeError, match="pyarrow array"):
        lanes.sum_line_lanes(["{}"])  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_setting_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(lanes.HASH_THREADS_ENV, value)
    with pytest.raises(ValueError, match=lanes.HASH_THREADS_ENV):
        lanes.hash_threads()


def test_the_thread_setting_is_read(monkeypatch):
    monkeypatch.setenv(lanes.HASH_THREADS_ENV, "3")
    assert lanes.hash_threads() == 3
    monkeypatch.delenv(lanes.HASH_THREADS_ENV)
    assert lanes.hash_threads() >= 1


def test_cores_left_to_other_work_are_taken_from_the_hash_threads_in_this_thread_only(
    monkeypatch,
):
    monkeypatch.setenv(lanes.HASH_THREADS_ENV, "4")
    seen_elsewhere = []
    with lanes.leaving_cores(1):
        assert lanes.hash_threads() == 3
        with lanes.leaving_cores(5):
            assert lanes.hash_threads() == 1  # never below one thread
        other = threading.Thread(target=lambda: seen_elsewhere.append(lanes.hash_threads()))
        other.start()
        other.join()
        assert lanes.hash_threads() == 3
    assert lanes.hash_threads() == 4
    assert seen_elsewhere == [4]
    with pytest.raises(ValueError, match="cores to leave"), lanes.leaving_cores(-1):
        pass


def test_a_core_lent_while_other_work_runs_comes_back_when_that_work_ends(monkeypatch):
    monkeypatch.setenv(lanes.HASH_THREADS_ENV, "2")
    encoding = [True]
    with lanes.leaving_cores(1, while_busy=lambda: encoding[0]):
        assert (lanes.hash_threads(), lanes.lending_may_end()) == (1, True)
        encoding[0] = False
        assert (lanes.hash_threads(), lanes.lending_may_end()) == (2, False)
    assert lanes.hash_threads() == 2


def test_a_table_hashed_a_slice_at_a_time_while_a_lent_core_comes_back_has_the_whole_digest(
    monkeypatch,
):
    from ubunye_rows.hashing import table_lanes

    table = pa.table(
        {
            "id": pa.array(range(5_500), pa.int64()),
            "name": pa.array([f"n\u00e9{i % 37}" if i % 11 else None for i in range(5_500)]),
            "x": pa.array([i / 7 if i % 13 else float("nan") for i in range(5_500)]),
        }
    )
    whole = fingerprint(table)
    monkeypatch.setattr(table_lanes, "LENDING_SLICE_ROWS", 1_000)
    threads_per_slice = []
    hash_slice = table_lanes._whole_table_buckets

    def noted(part, names, kinds):
        threads_per_slice.append(lanes.hash_threads())
        return hash_slice(part, names, kinds)

    monkeypatch.setattr(table_lanes, "_whole_table_buckets", noted)
    monkeypatch.setenv(lanes.HASH_THREADS_ENV, "2")
    with lanes.leaving_cores(1, while_busy=lambda: len(threads_per_slice) < 3):
        sliced = fingerprint(table)
    assert threads_per_slice == [1, 1, 1, 2, 2, 2]
    assert (sliced.data_hash, sliced.schema_hash, sliced.row_count) == (
        whole.data_hash,
        whole.schema_hash,
        whole.row_count,
    )
    assert sliced.sketch == whole.sketch


def test_the_kernel_setting_picks_the_fallback(monkeypatch):
    monkeypatch.setenv(native.KERNEL_ENV, "python")
    assert lanes.lane_engine() == "hashlib"
    monkeypatch.setenv(native.KERNEL_ENV, "md5")
    with pytest.raises(ValueError, match=native.KERNEL_ENV):
        lanes.lane_engine()


def test_an_unknown_kernel_setting_fails_the_hash_naming_the_setting(monkeypatch):
    monkeypatch.setenv(native.KERNEL_ENV, "hashlib")
    result = fingerprint(pa.table({"id": [1, 2]}))
    assert result.data_hash is None
    assert result.error is not None and native.KERNEL_ENV in result.error


def big_table(rows: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "name": pa.array([f"n{i % 977}é" for i in range(rows)], pa.string()),
            "x": pa.array([i / 7 if i % 11 else None for i in range(rows)], pa.float64()),
        }
    )


@pytest.mark.parametrize("setting", ["python", "auto"])
def test_digest_is_the_same_whatever_the_number_of_workers(monkeypatch, setting):
    table = big_table(120_000)
    monkeypatch.setenv(native.KERNEL_ENV, setting)
    digests = set()
    for count in ("1", "2", "3"):
        monkeypatch.setenv(lanes.HASH_THREADS_ENV, count)
        result = fingerprint(table)
        assert result.error is None
        digests.add(result.data_hash)
    assert len(digests) == 1


def test_hashing_leaves_no_helper_process_or_thread_behind():
    before = set(threading.enumerate())
    # Children started before (a test session's Spark JVM) are not the hash's to end.
    children_before = set(_child_processes())
    result = fingerprint(big_table(150_000))
    assert result.is_complete
    assert set(threading.enumerate()) <= before
    assert set(_child_processes()) <= children_before


def _child_processes() -> list[int]:
    """Process ids whose parent is this process (Linux /proc; empty elsewhere)."""
    children = []
    if not os.path.isdir("/proc"):
        return children
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            children.append(int(entry))
    return children


def mixed_table(rows: int) -> pa.Table:
    """Flat and nested columns, with nulls, NaN and text that needs escaping."""
    return pa.table(
        {
            "b": pa.array([i % 3 == 0 for i in range(rows)]),
            "f": pa.array([float("nan") if i % 13 == 0 else i / 3 for i in range(rows)]),
            "l": pa.array(
                [None if i % 17 == 0 else [i, None, -i] for i in range(rows)], pa.list_(pa.int64())
            ),
            "m": pa.array(
                [[("z", i), ("a", None)] if i % 2 else [] for i in range(rows)],
                pa.map_(pa.string(), pa.int64()),
            ),
            "s": pa.array([f'say "{i}" \\ é' if i % 5 else None for i in range(rows)]),
        }
    )


def vectorised_lines(table: pa.Table) -> list[str]:
    names = sorted(table.column_names)
    kinds = dict(schema_pairs(table.schema))
    return [
        line
        for batch in table_slices(table, names)
        for line in slice_lines(batch, [kinds[n] for n in names]).to_pylist()
    ]


def test_lines_are_the_same_whatever_the_number_of_threads(monkeypatch):
    table = mixed_table(40_000)
    expected = arrow_canonical_lines(table)
    for count in ("1", "2", "3"):
        monkeypatch.setenv(lanes.HASH_THREADS_ENV, count)
        assert vectorised_lines(table) == expected


def test_a_slice_worker_builds_on_its_own_thread_only():
    seen = []

    def build(piece: int) -> pa.Array:
        seen.append(lanes.hash_threads())
        return pa.array([str(piece)])

    for count in (1, 2):
        lanes.sum_slices_lanes(iter(range(6)), build, threads=count)
    assert seen == [1] * 12


def test_without_the_kernel_the_fallback_gives_the_same_digest(monkeypatch):
    table = mixed_table(3000)
    expected = fingerprint(table)
    assert lanes.lane_engine() == "kernel"
    monkeypatch.setitem(native._state, "module", None)
    assert lanes.lane_engine() == "hashlib"
    assert fingerprint(table) == expected
    monkeypatch.setenv(native.KERNEL_ENV, "native")
    with pytest.raises(ImportError, match="ubunye-rows"):
        lanes.lane_engine()


def test_the_native_setting_refuses_to_hash_a_table_without_the_kernel(monkeypatch):
    monkeypatch.setitem(native._state, "module", None)
    monkeypatch.setenv(native.KERNEL_ENV, "native")
    with pytest.raises(ImportError, match=f"{native.KERNEL_ENV}=native"):
        arrow_fingerprint_or_raise(mixed_table(10))
