"""Partitioned reads through SrdpIOManager return what they returned before they were made fast.

A read filters by its slice's condition with the values written as SQL literals, on a lazy
relation over the lake table, instead of a relation built with bound parameters (which DuckDB
1.5 runs at once into a materialized copy, about 30 times slower to read). These tests hold the
new read to the old one:

* at the lake layer, differentially: for time windows over DATE, TIMESTAMP and TIMESTAMPTZ
  columns (UTC and New York windows), static keys holding quotes, backslashes, question marks and
  comment markers, multi-partitions and the empty slice, every input type
  gets the same rows and types from ``LakeSession.relation`` as from the old bound-parameter
  relation (rebuilt here from the same :class:`Slice`);
* through Dagster: one partition, a range and a self-dependent partition, as every input type,
  read exactly their partitions' rows at the snapshot their materializations committed;
* a partitioned relation input is a lazy plan over the lake table (the old one was a copy).
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    io_manager,
    lake,
    rows_of,
    sqlite_lake,
    view,
    write_sql,
)
from srdp.lake import LakeSession, TableRef, load_as
from srdp.lake.slices import Slice, slice_condition
from srdp.sql import literal

NEW_YORK = ZoneInfo("America/New_York")
# Keys a literal must carry unchanged. Not a NUL character: Dagster refuses it in a partition key,
# and DuckLake 1.0 fails on a filter holding one whichever way it is written (its file pruning
# writes the constant into the metadata query, where the NUL ends the text).
TRICKY = ["o'brien", "a\\b", "q?", "-- x", "/* y */", "é", "''"]
ANNOTATIONS = [pa.Table, pa.RecordBatchReader, pd.DataFrame, pl.DataFrame, pl.LazyFrame, duckdb.DuckDBPyRelation]


# --- the SQL text ---------------------------------------------------------------------------
def test_a_slice_carries_its_condition_with_literals_built_by_the_same_code() -> None:
    daily = slice_condition("day", (datetime(2024, 1, 2), datetime(2024, 1, 3)), ["2024-01-02"])
    bound = "CAST(CASE WHEN typeof((day)) = 'TIMESTAMP WITH TIME ZONE' THEN {} ELSE {} END AS TIMESTAMP)"
    assert daily.condition == f"(day) >= {bound.format('?', '?')} AND (day) < {bound.format('?', '?')}"
    assert daily.params == ["2024-01-02 00:00:00"] * 2 + ["2024-01-03 00:00:00"] * 2
    assert daily.read_condition == (
        f"(day) >= {bound.format(*[repr('2024-01-02 00:00:00')] * 2)} AND "
        f"(day) < {bound.format(*[repr('2024-01-03 00:00:00')] * 2)}"
    )
    keys = slice_condition("region", None, ["o'brien", "a\x00b"])
    assert keys.condition == "CAST((region) AS VARCHAR) IN (?, ?)"
    assert keys.read_condition == "CAST((region) AS VARCHAR) IN ('o''brien', ('a' || chr(0) || 'b'))"
    assert Slice().read_condition is None and Slice("false").read_condition == "false"


@pytest.mark.parametrize("value", [*TRICKY, "", "\x00", "a\x00b", "'; DROP TABLE t; --", "$$x$$"])
def test_a_literal_reads_back_as_the_same_string(value: str) -> None:
    con = duckdb.connect()
    assert con.execute(f"SELECT {literal(value)}").fetchone() == (value,)


# --- the lake layer: the new read against the old one -----------------------------------------
def _old_relation(session: LakeSession, table: TableRef, where: Slice) -> duckdb.DuckDBPyRelation:
    """The read as it was built before: the slice's ``?`` condition with bound parameters."""
    cursor = session.con.cursor()
    cursor.execute("SET TimeZone = 'UTC'")
    condition = f" WHERE {where.condition}" if where.condition else ""
    return cursor.sql(f"SELECT * FROM {table.sql}{condition}", params=where.params or None)


def _sorted(value: Any) -> Any:
    """A loaded value in a comparable form, ordered by ``n``: Arrow for Arrow and DuckDB values,
    pandas and polars frames as they are."""
    if isinstance(value, pa.RecordBatchReader):
        value = value.read_all()
    if isinstance(value, duckdb.DuckDBPyRelation):
        value = value.to_arrow_table()
    if isinstance(value, pl.LazyFrame):
        value = value.collect()
    if isinstance(value, pa.Table):
        return value.sort_by("n")
    if isinstance(value, pd.DataFrame):
        return value.sort_values("n").reset_index(drop=True)
    return value.sort("n")


def _same(new: Any, old: Any) -> None:
    if isinstance(new, pa.Table):
        assert new.schema == old.schema and new.equals(old)
    elif isinstance(new, pd.DataFrame):
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    else:
        assert new.schema == old.schema and new.equals(old)


def _events_rows() -> pa.Table:
    """Rows around the edges of 2024-01-01 to 2024-01-04 in UTC and in New York, for every key."""
    moments = []
    for day in range(1, 5):
        utc = datetime(2024, 1, day, tzinfo=timezone.utc)
        ny = datetime(2024, 1, day, tzinfo=NEW_YORK)
        moments += [utc, utc + timedelta(hours=12), utc - timedelta(microseconds=1), ny, ny - timedelta(microseconds=1)]
    rows = []
    for i, moment in enumerate(moments):
        for j, region in enumerate([*TRICKY, "plain"]):  # 8 regions
            rows.append({
                "n": i * 100 + j,
                "d": moment.astimezone(timezone.utc).date(),
                "ts": moment.astimezone(timezone.utc).replace(tzinfo=None),
                "tz": moment,
                "region": region,
            })
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("n", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("us")),
        ("tz", pa.timestamp("us", tz="UTC")), ("region", pa.string()),
    ]))


def _slices() -> dict[str, Slice]:
    utc = timezone.utc
    return {
        "date day": slice_condition("d", (datetime(2024, 1, 2), datetime(2024, 1, 3)), ["2024-01-02"]),
        "date range": slice_condition("d", (datetime(2024, 1, 1), datetime(2024, 1, 4)), ["2024-01-01"]),
        "timestamp day": slice_condition("ts", (datetime(2024, 1, 2, tzinfo=utc), datetime(2024, 1, 3, tzinfo=utc)), ["x"]),
        "timestamp, New York day": slice_condition(
            "ts", (datetime(2024, 1, 2, tzinfo=NEW_YORK), datetime(2024, 1, 3, tzinfo=NEW_YORK)), ["x"]
        ),
        "timestamptz day": slice_condition("tz", (datetime(2024, 1, 2, tzinfo=utc), datetime(2024, 1, 3, tzinfo=utc)), ["x"]),
        "timestamptz, New York day": slice_condition(
            "tz", (datetime(2024, 1, 2, tzinfo=NEW_YORK), datetime(2024, 1, 3, tzinfo=NEW_YORK)), ["x"]
        ),
        "expression": slice_condition("CAST(tz AS DATE)", (datetime(2024, 1, 3), datetime(2024, 1, 4)), ["x"]),
        "static keys": slice_condition("region", None, TRICKY),
        "multi": slice_condition(
            {"date": "d", "region": "region"},
            None,
            [{"date": "2024-01-02", "region": "o'brien"}, {"date": "2024-01-03", "region": "a\\b"}],
            {"date": {
                "2024-01-02": (datetime(2024, 1, 2), datetime(2024, 1, 3)),
                "2024-01-03": (datetime(2024, 1, 3), datetime(2024, 1, 4)),
            }},
        ),
        "nothing": Slice("false"),
        "whole table": Slice(),
    }


def test_every_slice_reads_as_every_type_what_the_bound_parameter_read_returned(sqlite_lake: Path) -> None:
    rows = _events_rows()
    write_sql(sqlite_lake, "CREATE SCHEMA lake.analytics")
    session = LakeSession.get(str(sqlite_lake), "lake")
    table = TableRef("lake", "analytics", "events")
    session.attach("writer")
    session.con.register("rows", rows)
    session.con.execute(f"CREATE TABLE {table.sql} AS SELECT * FROM rows")
    session.con.unregister("rows")
    counts = {}
    for name, where in _slices().items():
        for annotation in ANNOTATIONS:
            new = _sorted(load_as(annotation, session.relation(table, None, where, None)))
            old = _sorted(load_as(annotation, _old_relation(session, table, where)))
            _same(new, old)
        counts[name] = len(rows_of(load_as(pa.Table, session.relation(table, None, where, None))))
    # The slices select what they say (each of the 20 moments has one row per region).
    regions = len(TRICKY) + 1
    assert counts == {
        "date day": 5 * regions, "date range": 15 * regions, "timestamp day": 5 * regions,
        "timestamp, New York day": 5 * regions, "timestamptz day": 5 * regions,
        "timestamptz, New York day": 5 * regions, "expression": 5 * regions,
        "static keys": 20 * len(TRICKY), "multi": 5 + 5, "nothing": 0, "whole table": 20 * regions,
    }


# --- through Dagster: shapes, types, pinned snapshots -------------------------------------------
DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")  # 3 days


def _day_rows(day: str, tag: str) -> pa.Table:
    start = date.fromisoformat(day)
    n = (start - date(2024, 1, 1)).days * 10
    return pa.table({"day": pa.array([start] * 3, pa.date32()), "n": pa.array([n, n + 1, n + 2], pa.int64()), "tag": [tag] * 3})


def _sales(seen: dict[str, Any] | None = None, annotation: Any = None) -> dg.AssetsDefinition:
    """analytics/sales by day; with ``seen``, it reads its previous partition (as ``annotation``)
    into ``seen`` and writes its own rows."""
    if seen is None:
        @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "day"})
        def sales(context) -> pa.Table:  # noqa: ANN001
            return _day_rows(context.partition_key, "v1")

        return sales

    @dg.asset(
        key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "day"},
        ins={"previous": dg.AssetIn(
            key=["analytics", "sales"],
            partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
        )},
    )
    def sales(context, previous: annotation) -> pa.Table:  # noqa: ANN001  # type: ignore[valid-type]
        seen["rows"] = _rows(previous)
        return _day_rows(context.partition_key, "v1")

    return sales


def _rows(value: Any) -> list[dict[str, Any]]:
    """A loaded value's rows ordered by ``n``, ``day`` as a date (pandas loads DATE as datetime64)."""
    rows = rows_of(value)
    for row in rows:
        if isinstance(row["day"], datetime):
            row["day"] = row["day"].date()
    return sorted(rows, key=lambda r: r["n"])


def _consumer(seen: dict[str, Any], annotation: Any, partitioned: bool) -> dg.AssetsDefinition:
    options: dict[str, Any] = {"partitions_def": DAILY} if partitioned else {}

    @dg.asset(key_prefix=["analytics"], ins={"sales": dg.AssetIn(key=["analytics", "sales"])}, **options)
    def consumer(sales: annotation) -> None:  # type: ignore[valid-type]
        seen["rows"] = _rows(sales)

    return consumer


def _expected(*days: str) -> list[dict[str, Any]]:
    return [r for d in days for r in _day_rows(d, "v1").to_pylist()]


@pytest.mark.parametrize("annotation", ANNOTATIONS, ids=lambda a: f"{a.__module__.split('.')[0]}.{a.__name__}")
def test_partitioned_inputs_read_their_partitions_at_their_snapshot_as_every_type(lake: Path, annotation: Any) -> None:
    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        assert dg.materialize([_sales()], resources=io, partition_key=day, instance=instance).success
    # Rows written after the materializations, outside Dagster: pinned reads do not see them.
    write_sql(lake, "INSERT INTO lake.analytics.sales VALUES (DATE '2024-01-02', 99, 'late'), (DATE '2024-01-01', 98, 'late')")

    one: dict[str, Any] = {}
    assert dg.materialize([_sales(), _consumer(one, annotation, True)], selection=["analytics/consumer"],
                          resources=io, partition_key="2024-01-02", instance=instance).success
    assert one["rows"] == _expected("2024-01-02")

    every: dict[str, Any] = {}
    assert dg.materialize([_sales(), _consumer(every, annotation, False)], selection=["analytics/consumer"],
                          resources=io, instance=instance).success
    assert every["rows"] == _expected("2024-01-01", "2024-01-02", "2024-01-03")

    previous: dict[str, Any] = {}
    assert dg.materialize([_sales(previous, annotation)], resources=io, partition_key="2024-01-03", instance=instance).success
    assert previous["rows"] == _expected("2024-01-02")

    unpinned: dict[str, Any] = {}
    io_latest = {"io_manager": io_manager(lake, pin_inputs=False)}
    assert dg.materialize([_sales(), _consumer(unpinned, annotation, True)], selection=["analytics/consumer"],
                          resources=io_latest, partition_key="2024-01-02", instance=instance).success
    assert unpinned["rows"] == [*_expected("2024-01-02"), {"day": date(2024, 1, 2), "n": 99, "tag": "late"}]


def test_a_partitioned_relation_input_is_a_lazy_plan_over_the_lake_table(sqlite_lake: Path) -> None:
    io, instance = {"io_manager": io_manager(sqlite_lake)}, dg.DagsterInstance.ephemeral()
    for day in ("2024-01-01", "2024-01-02"):
        assert dg.materialize([_sales()], resources=io, partition_key=day, instance=instance).success
    seen: dict[str, Any] = {}

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, ins={"sales": dg.AssetIn(key=["analytics", "sales"])})
    def consumer(sales: duckdb.DuckDBPyRelation) -> None:
        seen["plan"] = sales.explain()
        seen["rows"] = sorted(rows_of(sales), key=lambda r: r["n"])

    assert dg.materialize([_sales(), consumer], selection=[consumer], resources=io, partition_key="2024-01-02",
                          instance=instance).success
    assert seen["rows"] == _expected("2024-01-02")
    # The plan scans the DuckLake table with the slice's filter; the old read scanned a copy
    # materialized before the asset got it (COLUMN_DATA_SCAN).
    assert "DUCKLAKE_SCAN" in seen["plan"] and "COLUMN_DATA_SCAN" not in seen["plan"], seen["plan"]
    assert "2024-01-02 00:00:00" in seen["plan"]
