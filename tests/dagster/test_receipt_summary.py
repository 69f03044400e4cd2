"""The receipt at a glance: the ``ubunye/summary`` Markdown entry of each materialisation."""

from __future__ import annotations

import threading
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_dagster import UbunyeIOManager, UbunyeResource, build_reproducibility_checks
from ubunye_dagster.drift.summary import WIDTH_BUDGET
from ubunye_dagster.receipts.metadata import DATA_HASH, INPUTS, RECORD_PATH, SUMMARY

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


@pytest.mark.smoke
def test_the_first_materialisation_says_there_is_nothing_to_compare_with(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        text, _ = summary_of(materialise(tmp_path, instance), "raw")
    assert one_line(text, "**Not compared**") == (
        "**Not compared**: no previous materialisation of this asset and partition."
    )


@pytest.mark.smoke
def test_a_rerun_with_the_same_rows_says_same_rows(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        first = materialise(tmp_path, instance)
        second = materialise(tmp_path, instance)
    text, _ = summary_of(second, "doubled")
    assert one_line(text, "**Same rows**") == (
        f"**Same rows** as the previous materialisation (run\u00a0`{first.run_id[:8]}`)."
    )


@pytest.mark.smoke
def test_changed_rows_are_explained_in_the_drift_judgements_words_naming_the_input(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        materialise(tmp_path, instance)
        ROWS["n"] = 4
        second = materialise(tmp_path, instance)
    text, _ = summary_of(second, "doubled")
    assert "**Rows changed** since the previous materialisation" in text
    assert "explained (inputs changed: raw)." in text


@pytest.mark.smoke
def test_the_summary_judges_with_the_drift_settings_the_asset_was_declared_with(tmp_path):
    # The check flags changed inputs too: the summary says so in the check's own terms.
    checks = build_reproducibility_checks([doubled], flag_reasons=["same inputs", "inputs changed"])
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    with dg.instance_for_test() as instance:
        for rows in (3, 4):
            ROWS["n"] = rows
            second = dg.materialize(
                [raw, doubled, *checks], resources={"io_manager": manager}, instance=instance
            )
    text, _ = summary_of(second, "doubled")
    assert "drift (inputs changed: raw)." in text


def test_each_input_shows_its_digest_and_how_it_was_proven(tmp_path):

    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        result = materialise(tmp_path, instance)
    text, values = summary_of(result, "doubled")
    digest = values[INPUTS]["raw"]["data_hash"]
    [row] = [line for line in text.splitlines() if line.startswith("| raw |")]
    assert row == f"| raw | 3 | `{digest[: digest.rindex(':') + 9]}…` | bytes match |"
    assert one_line(text, "bytes match: ") == (
        "bytes match: its stored bytes hash to the byte digest recorded when it was written, "
        "so its rows are those of that digest (not hashed again)."
    )


def test_an_input_whose_digest_is_not_proven_shows_its_own_note(tmp_path):
    ROWS["n"] = 3
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"),
        ubunye=UbunyeResource(usecase_dir=str(tmp_path), hash_inputs=False),
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [raw, doubled], resources={"io_manager": manager}, instance=instance
        )
    text, _ = summary_of(result, "doubled")
    assert "| raw | — | — | not hashed |" in text.splitlines()
    assert one_line(text, "raw: ") == "raw: not hashed: hash_inputs is off."


def test_the_summary_names_the_output_digest_and_where_the_record_is(tmp_path):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        result = materialise(tmp_path, instance, selection="raw")
    text, values = summary_of(result, "raw")
    data_hash = values[DATA_HASH]
    assert f"Output: 3 rows, digest `{data_hash[: data_hash.rindex(':') + 9]}…`." in text
    assert "Inputs: none (reads no asset)." in text
    record = Path(values[RECORD_PATH])
    assert record.is_file()
    assert text.rpartition("\n\n")[2].startswith("Record: ")
    assert one_line(text, "Record: ") == (
        f"Record: `{record.name}` in `…/{record.parent.name}/` (full path: {RECORD_PATH})."
    )


def test_a_write_the_check_judges_reads_the_previous_materialisation_once_and_shows_its_verdict(
    tmp_path, monkeypatch
):
    # Strict sources: the check judges `raw` otherwise than default settings would, so a summary
    # judged on its own would disagree with the check.
    checks = build_reproducibility_checks([raw], strict_sources=True)
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    resources = {"io_manager": manager}
    with dg.instance_for_test() as instance:
        ROWS["n"] = 3
        dg.materialize([raw, *checks], resources=resources, instance=instance)
        ROWS["n"] = 4
        queries = []
        fetch = instance.fetch_materializations

        def counted(records_filter, *args, **kwargs):
            queries.append(records_filter)
            return fetch(records_filter, *args, **kwargs)

        monkeypatch.setattr(instance, "fetch_materializations", counted)
        second = dg.materialize([raw, *checks], resources=resources, instance=instance)

    assert len(queries) == 1
    [evaluation] = second.get_asset_check_evaluations()
    outcome = evaluation.metadata["ubunye/outcome"].value
    assert outcome == "drift (same inputs)"
    text, _ = summary_of(second, "raw")
    assert one_line(text, "**Rows changed**").endswith(f": {outcome}.")


@pytest.mark.smoke
def test_a_run_of_several_assets_finds_their_previous_materialisations_in_one_query(
    tmp_path, monkeypatch
):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        first = materialise(tmp_path, instance)
        asked: list[list[str]] = []
        single = []
        records, fetch = instance.get_asset_records, instance.fetch_materializations

        def asset_records(keys=None):
            asked.append(sorted(key.to_user_string() for key in keys or []))
            return records(keys)

        def fetched(*args, **kwargs):
            single.append(args)
            return fetch(*args, **kwargs)

        monkeypatch.setattr(instance, "get_asset_records", asset_records)
        monkeypatch.setattr(instance, "fetch_materializations", fetched)
        second = materialise(tmp_path, instance)

    assert asked.count(["doubled", "raw"]) == 1
    assert single == []
    for key in ("raw", "doubled"):
        text, _ = summary_of(second, key)
        assert one_line(text, "**Same rows**") == (
            f"**Same rows** as the previous materialisation (run\u00a0`{first.run_id[:8]}`)."
        )


def test_a_steps_previous_materialisation_is_asked_ahead_on_a_helper_thread_as_its_read_starts(
    tmp_path, monkeypatch
):
    ROWS["n"] = 3
    with dg.instance_for_test() as instance:
        materialise(tmp_path, instance)
        first = materialise(tmp_path, instance, selection="doubled")
        asked: list[tuple[str, str]] = []
        fetch = instance.fetch_materializations

        def noted(records_filter, *args, **kwargs):
            thread = threading.current_thread().name
            asked.append((records_filter.asset_key.to_user_string(), thread))
            return fetch(records_filter, *args, **kwargs)

        monkeypatch.setattr(instance, "fetch_materializations", noted)
        second = materialise(tmp_path, instance, selection="doubled")

    # One query, made beside the step while it reads `raw`; the judgement is the same.
    assert [(key, thread.startswith("ubunye-beside")) for key, thread in asked] == [
        ("doubled", True)
    ]
    text, _ = summary_of(second, "doubled")
    assert one_line(text, "**Same rows**") == (
        f"**Same rows** as the previous materialisation (run\u00a0`{first.run_id[:8]}`)."
    )


# The summary as the UI lays it out: CommonMark paragraphs (a backslash at a line's end breaks
# the line), and tables whose cells do not wrap while the column is wider than what shows.
HARD_BREAK = "\\\n"
#: A table cell's padding beside its text, in characters (18 px at 8.4 px a character).
CELL_PADDING = 2.2


def shown(markdown: str) -> str:
    return markdown.replace("**", "").replace("`", "")


def one_line(text: str, opening: str) -> str:
    """The paragraph of the summary that opens with `opening`, its lines joined."""
    [paragraph] = [p for p in text.split("\n\n") if p.startswith(opening)]
    return paragraph.replace(HARD_BREAK, " ")


def rendered_widths(text: str) -> list[float]:
    """The width, in characters, of every line the UI renders for the summary's Markdown."""
    widths: list[float] = []
    for block in text.split("\n\n"):
        lines = block.split("\n")
        if lines[0].startswith("|"):
            rows = [line.strip("|").split("|") for line in lines if not line.startswith("|---")]
            columns = zip(*rows, strict=True)
            widths.append(
                sum(max(len(shown(c.strip())) for c in col) for col in columns)
                + CELL_PADDING * len(rows[0])
            )
            continue
        for line in block.replace(HARD_BREAK, "\0").replace("\n", " ").split("\0"):
            widths.append(len(shown(line)))
    return widths


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


@dg.asset(key=["raw", "orders"])
def orders() -> pd.DataFrame:
    return pd.DataFrame({"order_id": list(range(ROWS["n"])), "product_id": [1] * ROWS["n"]})


@dg.asset(key=["raw", "products"])
def products() -> pd.DataFrame:
    return pd.DataFrame({"product_id": [1, 2], "unit_price": [9.5, 3.25]})


@dg.asset(
    key=["sales", "order_lines"],
    ins={"orders": dg.AssetIn(["raw", "orders"]), "products": dg.AssetIn(["raw", "products"])},
)
def order_lines(orders: pd.DataFrame, products: pd.DataFrame) -> pd.DataFrame:
    return orders.merge(products, on="product_id")


def test_every_line_of_the_summary_fits_the_overview_column_at_1600_px(tmp_path):
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    texts = []
    with dg.instance_for_test() as instance:
        for n in (4000, 4000, 4001):  # not compared, same rows, rows changed
            ROWS["n"] = n
            result = dg.materialize(
                [orders, products, order_lines],
                resources={"io_manager": manager},
                instance=instance,
            )
            texts.append(summary_of(result, "sales/order_lines")[0])
    assert [text.split(" ", 2)[:2] for text in texts] == [
        ["**Not", "compared**:"],
        ["**Same", "rows**"],
        ["**Rows", "changed**"],
    ]
    for text in texts:
        assert max(rendered_widths(text)) <= WIDTH_BUDGET, text


@dg.asset(key=["customers", "customer_statistics_by_country"])
def statistics() -> pd.DataFrame:
    return pd.DataFrame({"country": ["ZA", "KE"], "customers": [3, 1]})


@dg.asset(ins={"statistics": dg.AssetIn(["customers", "customer_statistics_by_country"])})
def ranked(statistics: pd.DataFrame) -> pd.DataFrame:
    return statistics.sort_values("customers")


def test_an_input_too_long_for_the_table_is_a_paragraph_within_the_overview_column(tmp_path):
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [statistics, ranked], resources={"io_manager": manager}, instance=instance
        )
    text, values = summary_of(result, "ranked")
    digest = values[INPUTS]["statistics"]["data_hash"]
    assert not any(line.startswith("|") for line in text.splitlines())
    assert one_line(text, "Input ") == (
        "Input statistics (customers/customer_statistics_by_country): 2 rows, digest "
        f"`{digest[: digest.rindex(':') + 9]}…`, bytes match."
    )
    assert max(rendered_widths(text)) <= WIDTH_BUDGET, text
