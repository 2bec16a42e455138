"""SrdpIOManager's partitioned writes with real Dagster on real DuckLake catalogs (SQLite and
DuckDB-file): daily time windows, static and multi (static x daily) partitions and a backfill range
each replace exactly their own rows in one snapshot; output rows outside the partition are refused;
a failure after the partition's DELETE leaves the old rows.

Rows are read per partition with plain SQL on a connection of their own (iomanager_support.view),
snapshots from DuckLake's metadata tables.
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyarrow as pa
import pytest

from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    by_partition,
    extra_info,
    io_manager,
    lake,
    sqlite_lake,
    view,
    write_sql,
)
from srdp.dagster.tables import IOManagerError

DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-06")
REGIONS = dg.StaticPartitionsDefinition(["apac", "eu", "us"])
MULTI = dg.MultiPartitionsDefinition({"date": DAILY, "region": REGIONS})


def day_rows(day: str, tag: str, per_day: int = 3) -> pa.Table:
    """Rows at the start, the middle and the last microsecond of ``day``, tagged."""
    start = datetime.fromisoformat(day)
    moments = [start, start + timedelta(hours=12), start + timedelta(days=1, microseconds=-1)][:per_day]
    return pa.table({"ts": pa.array(moments, pa.timestamp("us")), "tag": [tag] * len(moments)})


def ts(day: str, hours: int = 0, last: bool = False) -> datetime:
    start = datetime.fromisoformat(day)
    return start + timedelta(days=1, microseconds=-1) if last else start + timedelta(hours=hours)


def daily_asset(versions: dict[str, str], **options: Any) -> dg.AssetsDefinition:
    """analytics/sales by day: each partition's rows tagged with ``versions[day]`` (default v1)."""

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "ts"}, **options)
    def sales(context) -> pa.Table:  # noqa: ANN001  (Dagster refuses a string annotation of context)
        keys = context.partition_keys
        return pa.concat_tables([day_rows(k, versions.get(k, "v1"), 2 if versions.get(k) == "v2" else 3) for k in keys])

    return sales


def rows_by_day(v: Any) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for moment, tag in v.table("analytics.sales"):
        out.setdefault(moment.date().isoformat(), []).append((moment, tag))
    return out


def test_a_daily_partition_replaces_exactly_its_time_window(lake: Path) -> None:
    versions: dict[str, str] = {}
    sales = daily_asset(versions)
    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        dg.materialize([sales], resources=io, partition_key=day, instance=instance)
    with view(lake) as v:
        table_id, before = v.table_id("analytics", "sales"), v.latest_snapshot()
    versions["2024-01-02"] = "v2"  # two rows instead of three, tagged v2
    again = dg.materialize([sales], resources=io, partition_key="2024-01-02", instance=instance)
    with view(lake) as v:
        assert rows_by_day(v) == {
            "2024-01-01": [(ts("2024-01-01"), "v1"), (ts("2024-01-01", 12), "v1"), (ts("2024-01-01", last=True), "v1")],
            "2024-01-02": [(ts("2024-01-02"), "v2"), (ts("2024-01-02", 12), "v2")],
            "2024-01-03": [(ts("2024-01-03"), "v1"), (ts("2024-01-03", 12), "v1"), (ts("2024-01-03", last=True), "v1")],
        }
        snapshot = v.snapshot_of_run(again.run_id)
        assert snapshot["snapshot_id"] == before + 1 == v.latest_snapshot()
        assert snapshot["changes"] == f"inlined_insert:{table_id},inlined_delete:{table_id}"
        assert snapshot["message"] == (
            f"dagster run {again.run_id} asset analytics/sales (time window [2024-01-02 00:00:00, 2024-01-03 00:00:00))"
        )
        assert extra_info(snapshot) == {
            "asset_key": "analytics/sales",
            "attempt": 1,
            "mode": "replace",
            "partitions": ["2024-01-02"],
            "run_id": again.run_id,
            "table_name": "lake.analytics.sales",
        }
    meta = by_partition(again, "analytics__sales")
    assert list(meta) == ["2024-01-02"]
    assert (meta["2024-01-02"]["dagster/partition_row_count"], meta["2024-01-02"]["srdp/rows_written"]) == (2, 2)
    assert meta["2024-01-02"]["srdp/snapshot_id"] == snapshot["snapshot_id"]
    assert "dagster/row_count" not in meta["2024-01-02"]


def test_a_backfill_range_replaces_its_partitions_in_one_snapshot(lake: Path) -> None:
    versions = {"2024-01-02": "v2", "2024-01-03": "v2", "2024-01-04": "v2"}
    sales = daily_asset({}, backfill_policy=dg.BackfillPolicy.single_run())
    ranged = daily_asset(versions, backfill_policy=dg.BackfillPolicy.single_run())
    instance = dg.DagsterInstance.ephemeral()
    io = {"io_manager": io_manager(lake)}
    for day in ("2024-01-01", "2024-01-02", "2024-01-05"):
        dg.materialize([sales], resources=io, partition_key=day, instance=instance)
    job = dg.Definitions(
        assets=[ranged], jobs=[dg.define_asset_job("backfill", selection=[ranged])], resources=io
    ).resolve_job_def("backfill")
    result = job.execute_in_process(
        instance=instance,
        tags={"dagster/asset_partition_range_start": "2024-01-02", "dagster/asset_partition_range_end": "2024-01-04"},
    )
    assert result.success
    with view(lake) as v:
        assert {day: [tag for _, tag in rows] for day, rows in rows_by_day(v).items()} == {
            "2024-01-01": ["v1"] * 3,
            "2024-01-02": ["v2"] * 2,
            "2024-01-03": ["v2"] * 2,
            "2024-01-04": ["v2"] * 2,
            "2024-01-05": ["v1"] * 3,
        }
        snapshot = v.snapshot_of_run(result.run_id)
        assert snapshot["snapshot_id"] == v.latest_snapshot()
        assert snapshot["message"] == (
            f"dagster run {result.run_id} asset analytics/sales (time window [2024-01-02 00:00:00, 2024-01-05 00:00:00))"
        )
        assert extra_info(snapshot)["partitions"] == ["2024-01-02", "2024-01-03", "2024-01-04"]
    meta = by_partition(result, "analytics__sales")
    assert {k: (m["dagster/partition_row_count"], m["srdp/snapshot_id"]) for k, m in meta.items()} == {
        "2024-01-02": (2, snapshot["snapshot_id"]),
        "2024-01-03": (2, snapshot["snapshot_id"]),
        "2024-01-04": (2, snapshot["snapshot_id"]),
    }
    assert {(m["srdp/rows_written"], m["srdp/rows_in_slice"]) for m in meta.values()} == {(6, 6)}


def test_a_backfill_of_exactly_two_partitions_reports_each_ones_row_count(lake: Path) -> None:
    """Two partitions are a range too: each partition's materialization carries its own count
    (2 rows and 3), not the range's 5."""
    ranged = daily_asset({"2024-01-02": "v2"}, backfill_policy=dg.BackfillPolicy.single_run())
    io = {"io_manager": io_manager(lake)}
    job = dg.Definitions(
        assets=[ranged], jobs=[dg.define_asset_job("backfill", selection=[ranged])], resources=io
    ).resolve_job_def("backfill")
    result = job.execute_in_process(
        tags={"dagster/asset_partition_range_start": "2024-01-02", "dagster/asset_partition_range_end": "2024-01-03"},
    )
    assert result.success
    with view(lake) as v:
        assert {day: len(rows) for day, rows in rows_by_day(v).items()} == {"2024-01-02": 2, "2024-01-03": 3}
    meta = by_partition(result, "analytics__sales")
    assert {k: m["dagster/partition_row_count"] for k, m in meta.items()} == {"2024-01-02": 2, "2024-01-03": 3}
    assert {(m["srdp/rows_written"], m["srdp/rows_in_slice"]) for m in meta.values()} == {(5, 5)}


def test_a_static_partition_replaces_exactly_its_key(lake: Path) -> None:
    versions: dict[str, int] = {}

    @dg.asset(key_prefix=["analytics"], partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def customers(context) -> pa.Table:  # noqa: ANN001
        region, version = context.partition_key, versions.get(context.partition_key, 1)
        ids = list(range(version * 10, version * 10 + (2 if region == "eu" else 3)))
        return pa.table({"region": [region] * len(ids), "id": pa.array(ids, pa.int64())})

    io = {"io_manager": io_manager(lake)}
    for region in ("eu", "us"):
        dg.materialize([customers], resources=io, partition_key=region)
    versions["eu"] = 2
    again = dg.materialize([customers], resources=io, partition_key="eu")
    with view(lake) as v:
        assert v.table("analytics.customers") == [("eu", 20), ("eu", 21), ("us", 10), ("us", 11), ("us", 12)]
        snapshot = v.snapshot_of_run(again.run_id)
        assert snapshot["message"] == f"dagster run {again.run_id} asset analytics/customers (partitions eu)"
    assert by_partition(again, "analytics__customers")["eu"]["dagster/partition_row_count"] == 2


def test_a_multi_partition_replaces_exactly_its_region_and_day(lake: Path) -> None:
    versions: dict[str, str] = {}

    @dg.asset(
        key_prefix=["analytics"],
        partitions_def=MULTI,
        metadata={"partition_expr": {"date": "ts", "region": "region"}},
    )
    def visits(context) -> pa.Table:  # noqa: ANN001
        key = context.partition_key.keys_by_dimension
        rows = day_rows(key["date"], versions.get(str(context.partition_key), "v1"))
        return rows.append_column("region", pa.array([key["region"]] * rows.num_rows))

    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    cells = ["2024-01-01|eu", "2024-01-01|us", "2024-01-02|eu"]
    for cell in cells:
        dg.materialize([visits], resources=io, partition_key=cell, instance=instance)
    versions["2024-01-01|eu"] = "v2"
    again = dg.materialize([visits], resources=io, partition_key="2024-01-01|eu", instance=instance)
    with view(lake) as v:
        tags = v.rows(
            "SELECT strftime(ts, '%Y-%m-%d') || '|' || region, list(tag ORDER BY ts) FROM lake.analytics.visits "
            "GROUP BY ALL ORDER BY 1"
        )
        assert tags == [("2024-01-01|eu", ["v2"] * 3), ("2024-01-01|us", ["v1"] * 3), ("2024-01-02|eu", ["v1"] * 3)]
        snapshot = v.snapshot_of_run(again.run_id)
        assert snapshot["message"] == f"dagster run {again.run_id} asset analytics/visits (partitions 2024-01-01|eu)"
        assert extra_info(snapshot)["partitions"] == ["2024-01-01|eu"]
    meta = by_partition(again, "analytics__visits")
    assert {k: m["dagster/partition_row_count"] for k, m in meta.items()} == {"2024-01-01|eu": 3}


def as_kind(rows: pa.Table, kind: str) -> Any:
    """``rows`` as a pyarrow Table, a RecordBatchReader or a DuckDB relation (streamed outputs)."""
    if kind == "pyarrow.Table":
        return rows
    if kind == "pyarrow.RecordBatchReader":
        return pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches(max_chunksize=1))
    return duckdb.connect().from_arrow(rows)


@pytest.mark.parametrize("kind", ["pyarrow.Table", "pyarrow.RecordBatchReader", "duckdb relation"])
def test_output_rows_outside_the_partition_are_refused(sqlite_lake: Path, kind: str) -> None:
    stray = [True]

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "ts"})
    def sales(context) -> Any:  # noqa: ANN001
        rows = [day_rows(context.partition_key, "v2")] + ([day_rows("2024-01-02", "stray", 1)] if stray[0] else [])
        return as_kind(pa.concat_tables(rows), kind)

    io = {"io_manager": io_manager(sqlite_lake)}
    dg.materialize([daily_asset({})], resources=io, partition_key="2024-01-02")
    with view(sqlite_lake) as v:
        before = (v.table("analytics.sales"), v.latest_snapshot())
    with pytest.raises(IOManagerError) as error:
        dg.materialize([sales], resources=io, partition_key="2024-01-01")
    assert str(error.value) == (
        "the output for lake.analytics.sales has rows outside time window [2024-01-01 00:00:00, 2024-01-02 00:00:00); "
        "a partitioned asset writes only its own partition's rows (check partition_expr)"
    )
    with view(sqlite_lake) as v:
        assert (v.table("analytics.sales"), v.latest_snapshot()) == before
    stray[0] = False  # the same output without the stray row is written
    dg.materialize([sales], resources=io, partition_key="2024-01-01")
    with view(sqlite_lake) as v:
        assert {day: [tag for _, tag in rows] for day, rows in rows_by_day(v).items()} == {
            "2024-01-01": ["v2"] * 3,
            "2024-01-02": ["v1"] * 3,
        }


def test_a_failure_after_a_partition_delete_leaves_its_old_rows(lake: Path) -> None:
    write_sql(
        lake,
        "CREATE SCHEMA lake.analytics",
        "CREATE TABLE lake.analytics.sales (ts TIMESTAMP, tag VARCHAR NOT NULL)",
        "INSERT INTO lake.analytics.sales VALUES ('2024-01-01 01:00', 'old'), ('2024-01-02 01:00', 'old')",
    )

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "ts"})
    def sales() -> pa.Table:
        return pa.table({"ts": pa.array([datetime(2024, 1, 1, 2)], pa.timestamp("us")), "tag": pa.array([None], pa.string())})

    with view(lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([sales], resources={"io_manager": io_manager(lake)}, partition_key="2024-01-01")
    assert str(error.value) == (
        "writing lake.analytics.sales failed after 1 attempt(s); nothing was written (the transaction rolled "
        "back): Constraint Error: NOT NULL constraint failed: sales.tag"
    )
    with view(lake) as v:
        assert v.table("analytics.sales") == [(datetime(2024, 1, 1, 1), "old"), (datetime(2024, 1, 2, 1), "old")]
        assert v.latest_snapshot() == before


def test_a_partitioned_asset_without_partition_expr_is_refused(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"], partitions_def=REGIONS)
    def customers() -> pa.Table:
        return pa.table({"region": ["eu"]})

    with pytest.raises(IOManagerError) as error:
        dg.materialize([customers], resources={"io_manager": io_manager(sqlite_lake)}, partition_key="eu")
    assert str(error.value) == (
        "a partitioned asset needs 'partition_expr' metadata: the column (or SQL expression) that holds the "
        "partition, e.g. metadata={'partition_expr': 'order_date'}; for multi-partitions one per dimension: "
        "{'partition_expr': {'date': 'day', 'region': 'region'}}"
    )
    with view(sqlite_lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, 0)


def test_partition_dates_are_plain_days(sqlite_lake: Path) -> None:
    # A DATE partition column compares with the window's timestamps as a day.
    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "day"})
    def daily_totals(context) -> pa.Table:  # noqa: ANN001
        return pa.table({"day": [date.fromisoformat(context.partition_key)], "total": pa.array([1], pa.int64())})

    io = {"io_manager": io_manager(sqlite_lake)}
    for day in ("2024-01-01", "2024-01-02", "2024-01-01"):
        dg.materialize([daily_totals], resources=io, partition_key=day)
    with view(sqlite_lake) as v:
        assert v.table("analytics.daily_totals") == [(date(2024, 1, 1), 1), (date(2024, 1, 2), 1)]


def test_an_empty_partition_output_replaces_the_partition_with_zero_rows(lake: Path) -> None:
    empty: list[str] = []

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "ts"})
    def sales(context) -> pa.Table:  # noqa: ANN001
        rows = day_rows(context.partition_key, "v1")
        return rows.slice(0, 0) if context.partition_key in empty else rows

    io = {"io_manager": io_manager(lake)}
    for day in ("2024-01-01", "2024-01-02"):
        dg.materialize([sales], resources=io, partition_key=day)
    empty.append("2024-01-01")
    again = dg.materialize([sales], resources=io, partition_key="2024-01-01")
    with view(lake) as v:
        assert list(rows_by_day(v)) == ["2024-01-02"]
        assert len(rows_by_day(v)["2024-01-02"]) == 3
        assert v.snapshot_of_run(again.run_id)["snapshot_id"] == v.latest_snapshot()
    meta = by_partition(again, "analytics__sales")["2024-01-01"]
    assert (meta["dagster/partition_row_count"], meta["srdp/rows_written"]) == (0, 0)
    assert meta["srdp/note"] == "replaced time window [2024-01-01 00:00:00, 2024-01-02 00:00:00) with 0 rows (the output was empty)"
