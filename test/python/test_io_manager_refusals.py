"""SrdpIOManager's refusals at the edges of srdp's rules, with real Dagster on real DuckLake
catalogs:

* ``drop_missing_columns`` on a raw table while rule raw_append_only is on (raw never loses a
  column); with the rule relaxed the column is dropped as before;
* a ``partition_expr`` that is more than one SQL expression over the table's columns (a statement,
  a comment that cuts the condition, a subquery, a parameter), on writes and on reads, each entry of
  a multi-partition mapping included; valid expressions still partition;
* an asset key that names another catalog (``["other", "analytics", "t"]``), refused like the same
  mismatch through ``dagster/table_name``; keys of four parts and more;
* a schema spelled in another case than srdp.toml's (``["Raw", "x"]`` while dlt owns ``raw``).

Each refusal is checked by its exact message (the pure checks of srdp.dagster.tables too) and by
what a connection of its own reads afterwards (iomanager_support.view): the rows of every table
involved (count and checksum), their columns, and the lake's latest snapshot.
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from datetime import date, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyarrow as pa
import pytest

from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    error_text,
    io_manager,
    lake,
    make_lake,
    materialization,
    sqlite_lake,
    view,
    write_sql,
)
from srdp.dagster.tables import IOManagerError, TableRef, check_partition_expr, resolve_table

DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")
DAYS = dg.StaticPartitionsDefinition(["2024-01-01", "2024-01-02"])
REGIONS = dg.StaticPartitionsDefinition(["eu", "us"])

#: What every partition_expr refusal ends with.
PARTITION_EXPR_RULE = (
    "partition_expr must be one SQL expression over the table's columns, such as 'order_date' or "
    "'CAST(ts AS DATE)' (for multi-partitions one per dimension); the IO manager ran nothing"
)


def fingerprint(v: Any, table: str) -> tuple[int, int]:
    """(row count, order-independent checksum of every row) of ``lake.<table>``."""
    count, checksum = v.rows(f"SELECT count(*), coalesce(sum(hash(t)), 0) FROM lake.{table} t")[0]
    return int(count), int(checksum)


def dlt_table(cfg: Path) -> tuple[int, int]:
    """Creates dlt's ``lake.raw.x`` with three rows (outside Dagster); returns its fingerprint."""
    write_sql(
        cfg,
        "CREATE SCHEMA lake.raw",
        "CREATE TABLE lake.raw.x (id INTEGER, note VARCHAR)",
        "INSERT INTO lake.raw.x VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    )
    with view(cfg) as v:
        return fingerprint(v, "raw.x")


# --- item: drop_missing_columns in raw ------------------------------------------------------


def test_drop_missing_columns_in_raw_is_refused_while_raw_append_only_is_on(lake: Path) -> None:
    @dg.asset(key=["raw_io", "events"])
    def events() -> pa.Table:
        return pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "note": ["n1", "n2"]})

    @dg.asset(key=["raw_io", "events"], metadata={"drop_missing_columns": True})
    def events_narrow() -> pa.Table:
        return pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]})

    io = {"io_manager": io_manager(lake)}
    dg.materialize([events], resources=io)
    with view(lake) as v:
        rows, columns, before = fingerprint(v, "raw_io.events"), v.columns("raw_io", "events"), v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([events_narrow], resources=io)
    assert str(error.value) == (
        "writing lake.raw_io.events with drop_missing_columns is refused: schema 'raw_io' is a raw layer and "
        "rule raw_append_only is on (raw keeps a complete audit trail and curated layers can always be rebuilt "
        "from it), so raw never loses a column. Leave drop_missing_columns out (a missing column is kept as "
        f"NULLs), or relax the rule with the line `raw_append_only = false` under [rules] in {lake}; nothing "
        "was written"
    )
    with view(lake) as v:
        assert fingerprint(v, "raw_io.events") == rows and rows[0] == 2
        assert v.columns("raw_io", "events") == columns and [c[0] for c in columns] == ["id", "v", "note"]
        assert v.latest_snapshot() == before


def test_with_raw_append_only_relaxed_drop_missing_columns_drops_a_raw_column(tmp_path: Path) -> None:
    cfg = make_lake(tmp_path / "lake", "sqlite", "\n[rules]\nraw_append_only = false   # ticket DATA-2\n")

    @dg.asset(key=["raw_io", "events"])
    def events() -> pa.Table:
        return pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "note": ["n1", "n2"]})

    @dg.asset(key=["raw_io", "events"], metadata={"drop_missing_columns": True, "write_mode": "append"})
    def events_narrow() -> pa.Table:
        return pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]})

    io = {"io_manager": io_manager(cfg)}
    first = dg.materialize([events], resources=io)
    narrow = dg.materialize([events_narrow], resources=io)
    with view(cfg) as v:
        s1, s2 = (v.snapshot_of_run(r.run_id)["snapshot_id"] for r in (first, narrow))
        assert v.columns("raw_io", "events") == [
            ("id", "int64", s1, None),
            ("v", "varchar", s1, None),
            ("note", "varchar", s1, s2),
        ]
        assert v.table("raw_io.events") == [(1, "a"), (2, "b"), (3, "c")]


# --- item: partition_expr is one expression -------------------------------------------------

CHECKS: dict[str, Any] = {
    # valid: a column, expressions over columns, a comment that ends inside the expression
    "day": None,
    "CAST(ts AS DATE)": None,
    "strftime(ts, '%Y-%m-%d')": None,
    "\"order date\"": None,
    "coalesce(region, 'none') -- the region\n": None,
    "(a + b) * 2": None,
    "\"prix_€\" * (1 + taux)": None,  # DuckDB counts positions in UTF-8 bytes
    "strftime(ts, 'été %Y')": None,
    "(\"é\") OR (b": "its parentheses do not balance",
    # refused
    "day; INSERT INTO raw.x VALUES (1); --": "it is not one SQL expression (DuckDB's parser: syntax error at or near \";\")",
    "day --": "it is not one SQL expression (DuckDB's parser: syntax error at end of input)",
    "day) AS VARCHAR) IN (?) OR TRUE --": "its parentheses do not balance",
    "day IS NOT NULL), false)); COMMIT; --": "its parentheses do not balance",
    "(day": "its parentheses do not balance",
    "(SELECT max(id) FROM lake.raw.x)": "it holds a subquery; it may use only the table's own columns",
    "day IN (SELECT note FROM lake.raw.x)": "it holds a subquery; it may use only the table's own columns",
    "EXISTS (SELECT 1)": "it holds a subquery; it may use only the table's own columns",
    "day = ?": "it holds a parameter placeholder",
    "day = $1": "it holds a parameter placeholder",
    "day AS d": "it is not one SQL expression (DuckDB's parser: syntax error at or near \"AS\")",
    "": "it is empty",
    "  ": "it is empty",
}


@pytest.mark.parametrize("expr", list(CHECKS), ids=[repr(e) for e in CHECKS])
def test_partition_expr_check_accepts_one_expression_and_refuses_anything_else(expr: str) -> None:
    problem = CHECKS[expr]
    if problem is None:
        check_partition_expr("analytics/sales", expr)
        return
    with pytest.raises(IOManagerError) as error:
        check_partition_expr("analytics/sales", expr)
    assert str(error.value) == f"asset 'analytics/sales': partition_expr {expr!r} is refused: {problem}. {PARTITION_EXPR_RULE}"


def test_partition_expr_check_covers_every_dimension_of_a_mapping_and_the_value_types() -> None:
    check_partition_expr("analytics/sales", {"date": "CAST(ts AS DATE)", "region": "region"})
    check_partition_expr("analytics/sales", None)  # no partition_expr: slice_condition says what to add
    with pytest.raises(IOManagerError) as error:
        check_partition_expr("analytics/sales", {"date": "ts", "region": "region; DROP TABLE lake.raw.x"})
    assert str(error.value) == (
        "asset 'analytics/sales': partition_expr['region'] 'region; DROP TABLE lake.raw.x' is refused: it is "
        f"not one SQL expression (DuckDB's parser: syntax error at or near \";\"). {PARTITION_EXPR_RULE}"
    )
    with pytest.raises(IOManagerError) as error:
        check_partition_expr("analytics/sales", {"date": 42})
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr['date'] 42 is refused: it is of type int, not a string. {PARTITION_EXPR_RULE}"
    )
    with pytest.raises(IOManagerError) as error:
        check_partition_expr("analytics/sales", ["ts"])
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr ['ts'] is refused: it is of type list, not a string. {PARTITION_EXPR_RULE}"
    )


#: Statements spliced into partition_expr: the issue's own, and one that made the old code commit
#: an INSERT into dlt's raw.x (it closes the check query, commits the open transaction, then
#: consumes the window's two parameters).
INJECTIONS = {
    "day; INSERT INTO raw.x VALUES (1); --": "it is not one SQL expression (DuckDB's parser: syntax error at or near \";\")",
    "day IS NOT NULL), false)); COMMIT; INSERT INTO lake.raw.x SELECT 9, 'x' WHERE ? IS NOT NULL AND ? IS NOT NULL; --": (
        "its parentheses do not balance"
    ),
}


@pytest.mark.parametrize("expr", list(INJECTIONS), ids=["issue", "commit-insert"])
def test_a_statement_in_partition_expr_is_refused_and_dlts_table_stays(sqlite_lake: Path, expr: str) -> None:
    x_before = dlt_table(sqlite_lake)

    @dg.asset(key=["analytics", "sales"], partitions_def=DAILY, metadata={"partition_expr": expr})
    def sales() -> pa.Table:
        return pa.table({"day": pa.array([datetime(2024, 1, 1, 12)], pa.timestamp("us"))})

    with view(sqlite_lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([sales], resources={"io_manager": io_manager(sqlite_lake)}, partition_key="2024-01-01")
    with view(sqlite_lake) as v:
        assert fingerprint(v, "raw.x") == x_before and x_before[0] == 3
        assert v.latest_snapshot() == before
        assert set(v.meta.datasets()) == {("raw", "x")}
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr {expr!r} is refused: {INJECTIONS[expr]}. {PARTITION_EXPR_RULE}"
    )


def daily_asset(expr: str, tag: str) -> dg.AssetsDefinition:
    """analytics/sales by day: two rows in each day's window, tagged ``tag``."""

    @dg.asset(key=["analytics", "sales"], partitions_def=DAILY, metadata={"partition_expr": expr})
    def sales(context) -> pa.Table:  # noqa: ANN001  (Dagster refuses a string annotation of context)
        day = datetime.fromisoformat(context.partition_key)
        return pa.table({"ts": pa.array([day, day.replace(hour=12)], pa.timestamp("us")), "tag": [tag, tag]})

    return sales


def days_asset(expr: str, tag: str) -> dg.AssetsDefinition:
    """analytics/sales by static day keys ('2024-01-01'), rows tagged ``tag``."""

    @dg.asset(key=["analytics", "sales"], partitions_def=DAYS, metadata={"partition_expr": expr})
    def sales(context) -> pa.Table:  # noqa: ANN001  (Dagster refuses a string annotation of context)
        day = datetime.fromisoformat(context.partition_key)
        return pa.table({"ts": pa.array([day, day.replace(hour=12)], pa.timestamp("us")), "tag": [tag, tag]})

    return sales


#: Conditions that reach out of their parentheses. Spliced into the window's
#: `(expr) >= start AND (expr) < end`, the first made the replace of one day delete every day
#: (`A OR (ts >= start AND A) OR ts < end`); the second comments out the rest of the condition.
ESCAPES = {
    "ts >= TIMESTAMP '2000-01-01') OR (ts": "its parentheses do not balance",
    "ts) >= TIMESTAMP '2000-01-01' --": "its parentheses do not balance",
    "ts --": "it is not one SQL expression (DuckDB's parser: syntax error at end of input)",
}


@pytest.mark.parametrize("expr", list(ESCAPES), ids=["parentheses", "parentheses-comment", "comment"])
def test_a_condition_that_reaches_out_of_its_parentheses_is_refused_and_other_partitions_stay(
    lake: Path, expr: str
) -> None:
    io = {"io_manager": io_manager(lake)}
    for day in ("2024-01-01", "2024-01-02"):
        dg.materialize([daily_asset("ts", "v1")], resources=io, partition_key=day)
    with view(lake) as v:
        rows, before = fingerprint(v, "analytics.sales"), v.latest_snapshot()
        assert v.rows("SELECT CAST(ts AS DATE), count(*) FROM lake.analytics.sales GROUP BY 1 ORDER BY 1") == [
            (date(2024, 1, 1), 2),
            (date(2024, 1, 2), 2),
        ]
    with pytest.raises(IOManagerError) as error:
        dg.materialize([daily_asset(expr, "v2")], resources=io, partition_key="2024-01-01")
    with view(lake) as v:
        assert fingerprint(v, "analytics.sales") == rows and rows[0] == 4
        assert v.latest_snapshot() == before
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr {expr!r} is refused: {ESCAPES[expr]}. {PARTITION_EXPR_RULE}"
    )


def test_a_valid_expression_still_replaces_exactly_its_partition(sqlite_lake: Path) -> None:
    io = {"io_manager": io_manager(sqlite_lake)}
    for day in ("2024-01-01", "2024-01-02"):
        dg.materialize([days_asset("strftime(ts, '%Y-%m-%d')", "v1")], resources=io, partition_key=day)
    dg.materialize([days_asset("strftime(ts, '%Y-%m-%d')", "v2")], resources=io, partition_key="2024-01-02")
    with view(sqlite_lake) as v:
        assert v.rows("SELECT strftime(ts, '%Y-%m-%d'), tag, count(*) FROM lake.analytics.sales GROUP BY ALL ORDER BY ALL") == [
            ("2024-01-01", "v1", 2),
            ("2024-01-02", "v2", 2),
        ]


def test_a_subquery_reading_another_table_is_refused_before_anything_is_written(sqlite_lake: Path) -> None:
    x_before = dlt_table(sqlite_lake)
    expr = "CASE WHEN (SELECT count(*) FROM lake.raw.x) > 0 THEN ts END"
    with view(sqlite_lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([days_asset(expr, "v1")], resources={"io_manager": io_manager(sqlite_lake)}, partition_key="2024-01-01")
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr {expr!r} is refused: it holds a subquery; it may use only "
        f"the table's own columns. {PARTITION_EXPR_RULE}"
    )
    with view(sqlite_lake) as v:
        assert fingerprint(v, "raw.x") == x_before
        assert (set(v.meta.datasets()), v.latest_snapshot()) == ({("raw", "x")}, before)


def test_each_dimension_of_a_multi_partition_expr_is_checked(sqlite_lake: Path) -> None:
    multi = dg.MultiPartitionsDefinition({"date": DAILY, "region": REGIONS})

    def asset(expr: dict[str, str]) -> dg.AssetsDefinition:
        @dg.asset(key=["analytics", "sales"], partitions_def=multi, metadata={"partition_expr": expr})
        def sales() -> pa.Table:
            return pa.table({"ts": pa.array([datetime(2024, 1, 2, 3)], pa.timestamp("us")), "region": ["eu"]})

        return sales

    io = {"io_manager": io_manager(sqlite_lake)}
    key = dg.MultiPartitionKey({"date": "2024-01-02", "region": "eu"})
    dg.materialize([asset({"date": "ts", "region": "lower(region)"})], resources=io, partition_key=key)
    with view(sqlite_lake) as v:
        assert v.table("analytics.sales") == [(datetime(2024, 1, 2, 3), "eu")]
    bad = {"date": "ts", "region": "lower(region) OR TRUE --"}
    with view(sqlite_lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([asset(bad)], resources=io, partition_key=key)
    assert str(error.value) == (
        "asset 'analytics/sales': partition_expr['region'] 'lower(region) OR TRUE --' is refused: it is not one "
        f"SQL expression (DuckDB's parser: syntax error at end of input). {PARTITION_EXPR_RULE}"
    )
    with view(sqlite_lake) as v:
        assert v.latest_snapshot() == before


def test_a_read_through_an_upstream_partition_expr_is_checked_too(sqlite_lake: Path) -> None:
    io = {"io_manager": io_manager(sqlite_lake)}
    for day in ("2024-01-01", "2024-01-02"):
        dg.materialize([daily_asset("ts", "v1")], resources=io, partition_key=day)
    expr = "ts >= TIMESTAMP '2000-01-01') OR (ts"
    seen: list[Any] = []

    @dg.asset(key=["analytics", "report"], partitions_def=DAILY, ins={"sales": dg.AssetIn(key=["analytics", "sales"])})
    def report(sales: pa.Table) -> None:
        seen.append(sales.num_rows)

    with pytest.raises(IOManagerError) as error:
        dg.materialize([daily_asset(expr, "unused"), report], selection=[report], resources=io, partition_key="2024-01-01")
    assert seen == []
    assert str(error.value) == (
        f"asset 'analytics/sales': partition_expr {expr!r} is refused: its parentheses do not balance. "
        f"{PARTITION_EXPR_RULE}"
    )


# --- item: an asset key that names another catalog -------------------------------------------

CATALOG_MISMATCH = (
    "asset key {key!r} names catalog {catalog!r}, but this IO manager writes catalog 'lake'; give the "
    "asset an io_manager_key for that catalog (a key of three parts is [<catalog>, <schema>, <table>])"
)
LONG_KEY = (
    "asset key {key!r} has {n} parts; the IO manager reads a key as [<schema>, <table>] or [<catalog>, "
    "<schema>, <table>]: give the asset a shorter key or a 'dagster/table_name' metadata entry "
    "(<catalog>.<schema>.<table>)"
)


def test_resolve_table_reads_a_key_of_two_or_three_parts_and_refuses_another_catalog() -> None:
    assert resolve_table("lake", ["analytics", "t"], {}, None) == TableRef("lake", "analytics", "t")
    assert resolve_table("lake", ["lake", "analytics", "t"], {}, None) == TableRef("lake", "analytics", "t")
    assert resolve_table("lake", ["t"], {"schema": "marts"}, None) == TableRef("lake", "marts", "t")
    # dagster/table_name comes first: the key is not read at all
    named = {"dagster/table_name": "lake.marts.named"}
    assert resolve_table("lake", ["other", "x", "y", "z"], named, None) == TableRef("lake", "marts", "named")
    for key in (["other", "analytics", "t"], ["Lake", "analytics", "t"], ["team", "marts", "deep"]):
        with pytest.raises(IOManagerError) as error:
            resolve_table("lake", key, {}, None)
        assert str(error.value) == CATALOG_MISMATCH.format(key="/".join(key), catalog=key[0])
    for key in (["lake", "lake", "analytics", "t"], ["a", "b", "c", "d", "e"]):
        with pytest.raises(IOManagerError) as error:
            resolve_table("lake", key, {}, None)
        assert str(error.value) == LONG_KEY.format(key="/".join(key), n=len(key))


def test_a_three_part_key_naming_another_catalog_is_refused_and_nothing_is_written(lake: Path) -> None:
    @dg.asset(key=["other", "analytics", "t"])
    def elsewhere() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.asset(key=["lake", "analytics", "t"])
    def here() -> pa.Table:
        return pa.table({"id": [2]})

    io = {"io_manager": io_manager(lake)}
    with view(lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([elsewhere], resources=io)
    assert str(error.value) == CATALOG_MISMATCH.format(key="other/analytics/t", catalog="other")
    with view(lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, before)
    result = dg.materialize([here], resources=io)
    assert materialization(result, "lake__analytics__t")["dagster/table_name"] == "lake.analytics.t"
    with view(lake) as v:
        assert v.table("analytics.t") == [(2,)]


def test_a_four_part_key_is_refused_and_nothing_is_written(sqlite_lake: Path) -> None:
    @dg.asset(key=["team", "lake", "analytics", "t"])
    def deep() -> pa.Table:
        return pa.table({"id": [1]})

    with pytest.raises(IOManagerError) as error:
        dg.materialize([deep], resources={"io_manager": io_manager(sqlite_lake)})
    assert str(error.value) == LONG_KEY.format(key="team/lake/analytics/t", n=4)
    with view(sqlite_lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, 0)


# --- a schema named in another case than srdp.toml's ----------------------------------------


def test_a_schema_spelled_in_another_case_is_dlts_raw_and_is_refused(sqlite_lake: Path) -> None:
    # DuckDB resolves "Raw" to dlt's raw: the IO manager may not write it (srdp_check_writer
    # resolves schema names as DuckDB does).
    x_before = dlt_table(sqlite_lake)

    @dg.asset(key=["Raw", "x"])
    def x() -> pa.Table:
        return pa.table({"id": pa.array([9], pa.int32()), "note": ["io"]})

    with view(sqlite_lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(duckdb.Error) as error:
        dg.materialize([x], resources={"io_manager": io_manager(sqlite_lake)})
    message = error_text(error.value)
    assert "srdp_check_writer: writer 'io_manager' may not write schema" in message
    assert "it is owned by 'dlt' (single_writer)" in message
    with view(sqlite_lake) as v:
        assert fingerprint(v, "raw.x") == x_before
        assert (set(v.meta.datasets()), v.latest_snapshot()) == ({("raw", "x")}, before)
