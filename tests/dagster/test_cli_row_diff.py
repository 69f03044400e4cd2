"""``lineage digest`` and ``lineage diff`` on what a real Dagster run left behind."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ubunye_core.cli import main
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_rows import fingerprint

days = dg.StaticPartitionsDefinition(["2024-01-01", "2024-01-02", "2024-01-03"])


def day_rows(day: str) -> pd.DataFrame:
    number = int(day[-1])
    return pd.DataFrame({"day": [day] * (number + 1), "n": list(range(number + 1))})


@dg.asset(partitions_def=days)
def visits(context) -> pd.DataFrame:
    return day_rows(context.partition_key)


def cli(capsys, *args: str) -> tuple[int, str]:
    """Exit code and stdout (+ stderr unless --json) of ``ubunye-dagster lineage <args>``."""
    capsys.readouterr()  # what the runs before logged
    code = main(["lineage", *args])
    out, err = capsys.readouterr()
    return code, out if "--json" in args else out + err


def test_lineage_digest_of_a_three_partition_asset_is_the_fingerprint_of_the_partitions_together(
    tmp_path, capsys
):
    resources = {
        "io_manager": UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    }
    for day in days.get_partition_keys():
        dg.materialize([visits], resources=resources, partition_key=day)
    dg.materialize([visits], resources=resources, partition_key="2024-01-02")  # newest counts
    code, out = cli(capsys, "digest", "-d", str(tmp_path), "--asset", "visits", "--json")
    assert code == 0, out
    document = json.loads(out)
    whole = pd.concat([day_rows(d) for d in days.get_partition_keys()], ignore_index=True)
    expected = fingerprint(whole)
    assert (document["data_hash"], document["row_count"]) == (expected.data_hash, 9)
    assert [p["partition"] for p in document["partitions"]] == days.get_partition_keys()
    code, out = cli(capsys, "digest", "-d", str(tmp_path), "--asset", "visits")
    assert expected.data_hash in out and "2024-01-03" in out


def write(path, table: pa.Table) -> str:
    pq.write_table(table, path)
    return str(path)


def test_lineage_diff_of_two_paths_prints_the_rows_and_exits_1_when_different(tmp_path, capsys):
    ids = list(range(2000))
    before = pa.table({"id": ids, "city": ["Durban"] * 2000})
    after = pa.table({"id": ids, "city": ["Durban"] * 1999 + ["Soweto"]})
    a, b = write(tmp_path / "a.parquet", before), write(tmp_path / "b.parquet", after)
    code, out = cli(capsys, "diff", a, b)
    assert code == 1
    assert '- {"id": 1999, "city": "Durban"}' in out
    assert '+ {"id": 1999, "city": "Soweto"}' in out
    code, out = cli(capsys, "diff", a, b, "--key", "id", "--json")
    document = json.loads(out)
    assert document["changed"] == 1 and document["sample"]["changed"][0]["columns"] == ["city"]
    assert cli(capsys, "diff", a, a)[0] == 0


def test_lineage_diff_exits_2_when_it_cannot_compare(tmp_path, capsys):
    a = write(tmp_path / "a.parquet", pa.table({"id": [1]}))
    code, out = cli(capsys, "diff", a, str(tmp_path / "gone.parquet"))
    assert code == 2 and "gone.parquet" in out


@dg.asset(ins={"visits": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def visit_total(visits):
    return pd.DataFrame({"total": [sum(len(frame) for frame in visits.values())]})


def test_a_step_loading_three_partitions_records_their_combined_digest_without_rehashing(tmp_path):
    resources = {
        "io_manager": UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    }
    for day in days.get_partition_keys():
        dg.materialize([visits], resources=resources, partition_key=day)
    assert dg.materialize(
        [visits, visit_total], resources=resources, selection=[visit_total]
    ).success
    record = LineageStore.for_usecase_dir(tmp_path).latest("dagster/default/visit_total")
    steps = {step.name: step for step in record.inputs}
    assert set(steps) == {"visits", *(f"visits[{d}]" for d in days.get_partition_keys())}
    whole = pd.concat([day_rows(d) for d in days.get_partition_keys()], ignore_index=True)
    assert steps["visits"].data_hash == fingerprint(whole).data_hash
    assert steps["visits"].hash_seconds == 0.0
    assert "combined from the digests of 3 partitions" in steps["visits"].source_note


def test_a_diff_of_records_without_sketches_never_compares_a_rewritten_file_with_itself(
    tmp_path, capsys
):
    frames = iter([day_rows("2024-01-02"), day_rows("2024-01-03")])

    @dg.asset(name="counts")
    def counts():
        return next(frames)

    resources = {
        "io_manager": UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    }
    for _ in range(2):
        dg.materialize([counts], resources=resources)
    for path in (tmp_path / ".ubunye").rglob("*.json"):  # records from before sketches
        document = json.loads(path.read_text())
        for step in document["outputs"]:
            step.pop("sketch")
        path.write_text(json.dumps(document))
    code, out = cli(capsys, "diff", "-d", str(tmp_path), "--asset", "counts")
    assert code == 2 and "no longer the rows it wrote" in out
