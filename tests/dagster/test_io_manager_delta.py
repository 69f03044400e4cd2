"""UbunyeIOManager(format="delta"): every materialisation a Delta table version that stays."""

from __future__ import annotations

import json
import subprocess
import sys

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest

from ubunye_core.cli import main
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.io.io_manager import UnverifiedReadError
from ubunye_rows import fingerprint

deltalake = pytest.importorskip("deltalake")

PRICES = pd.DataFrame({"sku": ["a", "b", "c", "d"], "price": [1.5, 2.0, 3.25, 4.0]})


def io_manager(root, **settings) -> UbunyeIOManager:
    return UbunyeIOManager(
        base_path=str(root / "data"),
        format="delta",
        ubunye=UbunyeResource(usecase_dir=str(root)),
        **settings,
    )


def prices_asset(frame_of):
    @dg.asset(name="prices")
    def prices(context):
        return frame_of(context)

    return prices


def records(root, task: str):
    store = LineageStore.for_usecase_dir(root)
    return list(reversed(store.list_runs(f"dagster/default/{task}")))


def cli(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["lineage", *args])
    return code, capsys.readouterr().out


def test_each_materialisation_is_a_new_table_version_named_in_the_record(tmp_path):
    frames = iter([PRICES, PRICES.assign(price=PRICES["price"] * 2)])
    asset = prices_asset(lambda context: next(frames))
    for _ in range(2):
        assert dg.materialize([asset], resources={"io_manager": io_manager(tmp_path)}).success
    table = tmp_path / "data" / "prices.delta"
    first, second = (record.outputs[0] for record in records(tmp_path, "prices"))
    assert (first.format, first.location) == ("delta", str(table))
    assert [first.source_version["version"], second.source_version["version"]] == [0, 1]
    old = deltalake.DeltaTable(str(table), version=0).to_pyarrow_table()
    assert fingerprint(old.to_pandas()).data_hash == first.data_hash


@pytest.mark.parametrize(
    "convert",
    [pa.Table.from_pandas, lambda frame: pytest.importorskip("polars").from_pandas(frame)],
    ids=["pyarrow", "polars"],
)
def test_pyarrow_and_polars_frames_are_stored_as_delta_and_read_back_verified(tmp_path, convert):
    prices = prices_asset(lambda context: convert(PRICES))

    @dg.asset
    def doubled(prices):
        return prices

    result = dg.materialize([prices, doubled], resources={"io_manager": io_manager(tmp_path)})
    assert result.success
    record = records(tmp_path, "doubled")[-1]
    assert record.inputs[0].format == "delta"
    assert record.inputs[0].source_note.startswith("verified")
    assert record.inputs[0].data_hash == records(tmp_path, "prices")[-1].outputs[0].data_hash


days = dg.StaticPartitionsDefinition(["d1", "d2", "d3"])


@dg.asset(partitions_def=days, metadata={"partition_expr": "day"})
def visits(context):
    day = context.partition_key
    count = int(day[1:]) + (10 if context.run.tags.get("more") else 0)
    return pd.DataFrame({"day": [day] * count, "n": list(range(count))})


def test_a_partition_replaces_only_its_own_rows_in_one_table(tmp_path):
    resources = {"io_manager": io_manager(tmp_path)}
    for day in ("d1", "d2", "d3"):
        dg.materialize([visits], resources=resources, partition_key=day)
    dg.materialize([visits], resources=resources, partition_key="d2", tags={"more": "1"})
    table = deltalake.DeltaTable(str(tmp_path / "data" / "visits.delta"))
    counts = table.to_pyarrow_table().to_pandas().groupby("day").size().to_dict()
    assert counts == {"d1": 1, "d2": 12, "d3": 3}
    assert table.version() == 3


def test_a_read_of_a_table_changed_behind_dagsters_back_fails(tmp_path):
    prices = prices_asset(lambda context: PRICES)

    @dg.asset
    def copied(prices):
        return prices

    resources = {"io_manager": io_manager(tmp_path)}
    assert dg.materialize([prices], resources=resources).success
    deltalake.write_deltalake(
        str(tmp_path / "data" / "prices.delta"),
        pa.Table.from_pandas(PRICES.head(2)),
        mode="overwrite",
    )
    with pytest.raises(UnverifiedReadError, match="was changed after it was written"):
        dg.materialize([prices, copied], resources=resources, selection=[copied])


def test_lineage_diff_time_travels_to_the_two_recorded_versions(tmp_path, capsys):
    frames = iter([PRICES, PRICES.assign(price=[1.5, 2.5, 3.25, 4.0])])
    asset = prices_asset(lambda context: next(frames))
    for _ in range(2):
        dg.materialize([asset], resources={"io_manager": io_manager(tmp_path)})
    args = ["-d", str(tmp_path), "--asset", "prices"]
    code, out = cli(capsys, "diff", *args, "--key", "sku", "--json")
    assert code == 1, out
    document = json.loads(out)
    assert document["changed"] == 1 and document["removed"] == document["added"] == 0
    changed = document["sample"]["changed"][0]
    assert (changed["key"], changed["columns"]) == ({"sku": "b"}, ["price"])
    assert (changed["before"]["price"], changed["after"]["price"]) == (2.0, 2.5)
    assert document["before"]["location"].endswith("prices.delta@v0")
    code, out = cli(capsys, "diff", *args)
    assert code == 1 and '+ {"sku": "b", "price": 2.5}' in out


def test_the_reference_cli_reads_the_records_of_delta_materialisations(tmp_path):
    pytest.importorskip("ubunye.lineage.recorder")
    frames = iter([PRICES, PRICES.head(3)])
    asset = prices_asset(lambda context: next(frames))
    for _ in range(2):
        dg.materialize([asset], resources={"io_manager": io_manager(tmp_path)})
    args = ["-d", str(tmp_path), "-u", "dagster", "-p", "default", "-t", "prices", "--json"]
    first, second = (record.run_id for record in records(tmp_path, "prices"))
    for command in ("list", "show", "trace", f"compare --run-id1 {first} --run-id2 {second}"):
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from ubunye.cli.main import main; sys.exit(main())",
             "lineage", *command.split(), *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)
