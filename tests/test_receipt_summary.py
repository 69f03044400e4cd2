"""The receipt at a glance: the ``ubunye/summary`` Markdown entry of each materialisation."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd

from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.metadata import DATA_HASH, INPUTS, RECORD_PATH, SUMMARY

ROWS = {"n": 3}


@dg.asset
def raw() -> pd.DataFrame:
    return pd.DataFrame({"n": list(range(ROWS["n"]))})


@dg.asset
def doubled(raw: pd.DataFrame) -> pd.DataFrame:
    return raw.assign(n=raw["n"] * 2)


def materialise(root: Path, instance: dg.DagsterInstance, selection: str | None = None):
    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    return dg.materialize(
        [raw, doubled], resources={"io_manager": manager}, instance=instance, selection=selection
    )


def summary_of(result: dg.ExecuteInProcessResult, key: str) -> str:
    [event] = [
        m for m in result.get_asset_materialization_events() if m.asset_key.to_user_string() == key
    ]
    metadata = event.materialization.metadata
    return metadata[SUMMARY].value, {k: v.value for k, v in metadata.items()}


def test_the_first_materialisation_says_there_is_nothing_to_compare_with(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        text, _ = summary_of(materialise(tmp_path, instance), "raw")
    assert text.startswith("**Not compared**: no previous materialisation of this asset and")


def test_a_rerun_with_the_same_rows_says_same_rows(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        first = materialise(tmp_path, instance)
        second = materialise(tmp_path, instance)
    text, _ = summary_of(second, "doubled")
    assert text.startswith(
        f"**Same rows** as the previous materialisation (run `{first.run_id[:8]}`)"
    )


def test_changed_rows_are_explained_in_the_drift_judgements_words_naming_the_input(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        materialise(tmp_path, instance)
        ROWS["n"] = 4
        second = materialise(tmp_path, instance)
    text, _ = summary_of(second, "doubled")
    assert "**Rows changed** since the previous materialisation" in text
    assert "explained (inputs changed: raw)." in text


def test_each_input_shows_its_digest_and_how_it_was_proven(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        result = materialise(tmp_path, instance)
    text, values = summary_of(result, "doubled")
    digest = values[INPUTS]["raw"]["data_hash"]
    [row] = [line for line in text.splitlines() if line.startswith("| raw |")]
    assert row.startswith("| raw | raw | 3 | ")
    assert f"`{digest[: digest.rindex(':') + 17]}…`" in row
    assert row.endswith(
        "| verified: its stored bytes are those written (byte digest), rows not hashed again |"
    )


def test_the_summary_names_the_output_digest_and_where_the_record_is(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        result = materialise(tmp_path, instance, selection="raw")
    text, values = summary_of(result, "raw")
    data_hash = values[DATA_HASH]
    assert f"Output: 3 rows, digest `{data_hash[: data_hash.rindex(':') + 17]}…`." in text
    assert "Inputs: none (reads no asset)." in text
    assert text.endswith(f"Record: `{values[RECORD_PATH]}`")
    assert Path(values[RECORD_PATH]).is_file()


def test_the_summary_stays_short_enough_for_the_ui_to_show_it_in_place(tmp_path):
    names = [f"source_{i}" for i in range(30)]  # more inputs than fit in place

    def source(name: str) -> dg.AssetsDefinition:
        @dg.asset(name=name)
        def _source() -> pd.DataFrame:
            return pd.DataFrame({"n": [1, 2]})

        return _source

    @dg.asset(ins={name: dg.AssetIn() for name in names})
    def everything(**sources: pd.DataFrame) -> pd.DataFrame:
        return pd.concat(list(sources.values()))

    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [*map(source, names), everything], resources={"io_manager": manager}, instance=instance
        )
    text, _ = summary_of(result, "everything")
    assert len(text) < 1000
    assert "more input(s): see ubunye/inputs." in text
