"""SrdpIOManager with real Dagster (``dg.materialize`` and the ``dagster`` CLI) on real DuckLake
catalogs (SQLite and DuckDB-file): which table an asset is, who may write it, the write modes, a
failure inside the write's transaction, schema changes, and the materialization's metadata and
the snapshot's audit fields.

Every check reads the lake on a connection of its own (iomanager_support.view) with plain SQL and
DuckLake's metadata tables; the IO manager's own metadata is only ever compared against that.
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

import os
import subprocess
import textwrap
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from conftest import REPO
from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    column_schema,
    extra_info,
    io_manager,
    lake,
    materialization,
    sqlite_lake,
    view,
    write_sql,
)
from srdp.dagster.tables import IOManagerError


def orders_table(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"{tag}{i}" for i in ids], pa.string())})


# --- which table ----------------------------------------------------------------------------


def test_the_table_comes_from_table_name_metadata_then_the_asset_key_then_a_schema(lake: Path) -> None:
    @dg.asset(key=["elsewhere", "ignored"], metadata={"dagster/table_name": "lake.analytics.named"})
    def named() -> pa.Table:
        return orders_table([1], "named")

    @dg.asset(key=["other", "short"], metadata={"dagster/table_name": "marts.short_named"})
    def short_named() -> pa.Table:
        return orders_table([2], "short")

    @dg.asset(key_prefix=["analytics"])
    def by_key() -> pa.Table:
        return orders_table([3], "key")

    @dg.asset(key=["lake", "marts", "deep"])  # a three-part key: [<catalog>, <schema>, <table>]
    def deep() -> pa.Table:
        return orders_table([4], "deep")

    @dg.asset(metadata={"schema": "marts"})
    def solo_meta() -> pa.Table:
        return orders_table([5], "meta")

    @dg.asset
    def solo_config() -> pa.Table:
        return orders_table([6], "config")

    assets = [named, short_named, by_key, deep, solo_meta, solo_config]
    result = dg.materialize(assets, resources={"io_manager": io_manager(lake, schema="analytics")})
    assert result.success
    expected = {
        "elsewhere__ignored": ("analytics", "named", [(1, "named1")]),
        "other__short": ("marts", "short_named", [(2, "short2")]),
        "analytics__by_key": ("analytics", "by_key", [(3, "key3")]),
        "lake__marts__deep": ("marts", "deep", [(4, "deep4")]),
        "solo_meta": ("marts", "solo_meta", [(5, "meta5")]),
        "solo_config": ("analytics", "solo_config", [(6, "config6")]),
    }
    with view(lake) as v:
        assert set(v.meta.datasets()) == {(s, t) for s, t, _ in expected.values()}
        for node, (schema, table, rows) in expected.items():
            assert v.table(f"{schema}.{table}") == rows
            assert materialization(result, node)["dagster/table_name"] == f"lake.{schema}.{table}"


def test_a_table_name_in_another_catalog_is_refused_and_nothing_is_written(lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"], metadata={"dagster/table_name": "other_lake.analytics.orders"})
    def orders() -> pa.Table:
        return orders_table([1], "x")

    with view(lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([orders], resources={"io_manager": io_manager(lake)})
    assert str(error.value) == (
        "dagster/table_name 'other_lake.analytics.orders' names catalog 'other_lake', but this IO manager "
        "writes catalog 'lake'; give the asset an io_manager_key for that catalog"
    )
    with view(lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, before)


def test_a_one_part_key_without_a_schema_is_refused(sqlite_lake: Path) -> None:
    @dg.asset
    def lonely() -> pa.Table:
        return orders_table([1], "x")

    with pytest.raises(IOManagerError) as error:
        dg.materialize([lonely], resources={"io_manager": io_manager(sqlite_lake)})
    assert str(error.value) == (
        "asset 'lonely' has a one-part key: give it a key prefix (key_prefix=['analytics']), a 'schema' or "
        "'dagster/table_name' metadata entry, or set schema= on SrdpIOManager"
    )
    with view(sqlite_lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, 0)


# --- write modes ----------------------------------------------------------------------------


def test_replace_keeps_the_table_identity_and_its_history(lake: Path) -> None:
    batches = iter([orders_table([1, 2, 3], "first"), orders_table([4, 5], "second")])

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return next(batches)

    io = {"io_manager": io_manager(lake)}
    first = dg.materialize([orders], resources=io)
    with view(lake) as v:
        table_id = v.table_id("analytics", "orders")
        first_snapshot = v.snapshot_of_run(first.run_id)["snapshot_id"]
    second = dg.materialize([orders], resources=io)
    with view(lake) as v:
        assert v.table("analytics.orders") == [(4, "second4"), (5, "second5")]
        assert v.table_id("analytics", "orders") == table_id
        assert v.rows(f"SELECT * FROM lake.analytics.orders AT (VERSION => {first_snapshot}) ORDER BY id") == [
            (1, "first1"),
            (2, "first2"),
            (3, "first3"),
        ]
        second_snapshot = v.snapshot_of_run(second.run_id)
        assert second_snapshot["snapshot_id"] == first_snapshot + 1 == v.latest_snapshot()
        assert materialization(second, "analytics__orders")["dagster/row_count"] == 2


def test_append_adds_the_rows_in_one_snapshot(lake: Path) -> None:
    batches = iter([orders_table([1, 2], "a"), orders_table([3], "b")])

    @dg.asset(key_prefix=["analytics"], metadata={"write_mode": "append"})
    def log() -> pa.Table:
        return next(batches)

    io = {"io_manager": io_manager(lake)}
    dg.materialize([log], resources=io)
    second = dg.materialize([log], resources=io)
    with view(lake) as v:
        assert v.table("analytics.log") == [(1, "a1"), (2, "a2"), (3, "b3")]
        assert v.snapshot_of_run(second.run_id)["snapshot_id"] == v.latest_snapshot()
    meta = materialization(second, "analytics__log")
    assert (meta["srdp/write_mode"], meta["srdp/rows_written"], meta["dagster/row_count"]) == ("append", 1, 3)
    assert "srdp/note" not in meta


def test_an_unknown_write_mode_is_refused(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"], metadata={"write_mode": "upsert"})
    def log() -> pa.Table:
        return orders_table([1], "a")

    with pytest.raises(IOManagerError) as error:
        dg.materialize([log], resources={"io_manager": io_manager(sqlite_lake)})
    assert str(error.value) == "write_mode 'upsert' of lake.analytics.log is not one of replace, append"


def test_an_empty_output_replaces_the_table_with_zero_rows_and_says_so(lake: Path) -> None:
    batches = iter([orders_table([1, 2], "a"), orders_table([], "a")])

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return next(batches)

    io = {"io_manager": io_manager(lake)}
    dg.materialize([orders], resources=io)
    empty = dg.materialize([orders], resources=io)
    with view(lake) as v:
        assert v.table("analytics.orders") == []
        snapshot = v.snapshot_of_run(empty.run_id)
        assert snapshot["snapshot_id"] == v.latest_snapshot()
        assert snapshot["changes"].startswith("inlined_delete:")  # the old rows are deleted in it
    meta = materialization(empty, "analytics__orders")
    assert (meta["dagster/row_count"], meta["srdp/rows_written"], meta["srdp/snapshot_id"]) == (0, 0, snapshot["snapshot_id"])
    assert meta["srdp/note"] == "replaced whole table with 0 rows (the output was empty)"


def test_a_failure_after_the_delete_leaves_the_old_rows_and_snapshot(lake: Path) -> None:
    # The table's NOT NULL constraint fails the INSERT, which runs after the DELETE of the old
    # rows, inside the same transaction.
    write_sql(
        lake,
        "CREATE SCHEMA lake.analytics",
        "CREATE TABLE lake.analytics.strict (id INTEGER NOT NULL, v VARCHAR)",
        "INSERT INTO lake.analytics.strict VALUES (1, 'old1'), (2, 'old2')",
    )

    @dg.asset(key_prefix=["analytics"])
    def strict() -> pa.Table:
        return pa.table({"id": pa.array([3, None], pa.int32()), "v": ["new3", "new4"]})

    with view(lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([strict], resources={"io_manager": io_manager(lake)})
    assert str(error.value) == (
        "writing lake.analytics.strict failed after 1 attempt(s); nothing was written (the transaction "
        "rolled back): Constraint Error: NOT NULL constraint failed: strict.id"
    )
    with view(lake) as v:
        assert v.table("analytics.strict") == [(1, "old1"), (2, "old2")]
        assert v.latest_snapshot() == before


def test_columns_are_matched_by_name_and_odd_names_are_quoted(lake: Path) -> None:
    @dg.asset(key=["analytics", "odd"], metadata={"dagster/table_name": 'analytics.we"ird table'})
    def odd() -> pa.Table:
        return pa.table({"id": pa.array([1], pa.int64()), 'a "b"': ["x"]})

    @dg.asset(key=["analytics", "odd"], metadata={"dagster/table_name": 'analytics.we"ird table', "write_mode": "append"})
    def odd_reordered() -> pa.Table:  # columns in another order, one of them new
        return pa.table({'a "b"': ["y"], "new col": pa.array([7], pa.int64()), "id": pa.array([2], pa.int64())})

    io = {"io_manager": io_manager(lake)}
    first = dg.materialize([odd], resources=io)
    second = dg.materialize([odd_reordered], resources=io)
    with view(lake) as v:
        assert set(v.meta.datasets()) == {("analytics", 'we"ird table')}
        assert v.rows('SELECT * FROM lake.analytics."we""ird table" ORDER BY id') == [(1, "x", None), (2, "y", 7)]
        assert [c[0] for c in v.columns("analytics", 'we"ird table')] == ["id", 'a "b"', "new col"]
    assert materialization(first, "analytics__odd")["dagster/table_name"] == 'lake.analytics.we"ird table'
    assert materialization(second, "analytics__odd")["srdp/added_columns"] == "new col"


def test_an_output_of_an_unsupported_type_is_refused_before_anything_is_written(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def numbers() -> list:
        return [1, 2, 3]

    with pytest.raises(TypeError) as error:
        dg.materialize([numbers], resources={"io_manager": io_manager(sqlite_lake)})
    assert str(error.value) == (
        "SrdpIOManager cannot store a builtins.list: return a pyarrow Table or RecordBatchReader, a pandas or "
        "polars DataFrame, a polars LazyFrame or a DuckDB relation"
    )
    with view(sqlite_lake) as v:
        assert (v.meta.datasets(), v.latest_snapshot()) == ({}, 0)


# --- metadata and audit ---------------------------------------------------------------------


def test_the_materialization_metadata_and_the_snapshot_audit_fields_are_exact(lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return orders_table([1, 2, 3], "o")

    result = dg.materialize([orders], resources={"io_manager": io_manager(lake)})
    with view(lake) as v:
        snapshot = v.snapshot_of_run(result.run_id)
        table_id = v.table_id("analytics", "orders")
        assert snapshot["snapshot_id"] == v.latest_snapshot() == 1
        assert v.table("analytics.orders") == [(1, "o1"), (2, "o2"), (3, "o3")]
        assert [c[:2] for c in v.columns("analytics", "orders")] == [("id", "int64"), ("v", "varchar")]
    assert snapshot["changes"] == (
        f'created_schema:"analytics",created_table:"analytics"."orders",inlined_insert:{table_id}'
    )
    assert (snapshot["author"], snapshot["message"]) == (
        "io_manager",
        f"dagster run {result.run_id} asset analytics/orders (whole table)",
    )
    assert extra_info(snapshot) == {
        "asset_key": "analytics/orders",
        "attempt": 1,
        "mode": "replace",
        "partitions": None,
        "run_id": result.run_id,
        "table_name": "lake.analytics.orders",
    }
    meta = materialization(result, "analytics__orders")
    assert column_schema(meta) == [("id", "BIGINT"), ("v", "VARCHAR")]
    del meta["dagster/column_schema"]
    assert meta == {
        "dagster/table_name": "lake.analytics.orders",
        "dagster/storage_kind": "ducklake",
        "dagster/row_count": 3,
        "srdp/snapshot_id": snapshot["snapshot_id"],
        "srdp/write_mode": "replace",
        "srdp/rows_written": 3,
        "srdp/slice": "whole table",
        "srdp/attempts": 1,
    }


# --- the dagster CLI ------------------------------------------------------------------------

CLI_DEFINITIONS = """
import os

import dagster as dg
import pyarrow as pa

from srdp.dagster.io_manager import SrdpIOManager


@dg.asset(key_prefix=["analytics"])
def orders() -> pa.Table:
    return pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([10.0, 20.5, 4.25])})


@dg.asset(key_prefix=["analytics"])
def totals(orders: pa.Table) -> pa.Table:
    return pa.table({"orders": [orders.num_rows], "amount": [sum(orders.column("amount").to_pylist())]})


defs = dg.Definitions(
    assets=[orders, totals],
    resources={"io_manager": SrdpIOManager(config_path=os.environ["SRDP_CONFIG"])},
)
"""


def test_the_dagster_cli_materializes_through_the_io_manager_and_a_later_run_reads_it(sqlite_lake: Path, tmp_path: Path) -> None:
    home, app = tmp_path / "dagster_home", tmp_path / "app"
    home.mkdir()
    app.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (app / "io_cli_definitions.py").write_text(textwrap.dedent(CLI_DEFINITIONS))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SRDP_CONFIG": str(sqlite_lake),
        "PYTHONPATH": os.pathsep.join([str(app), os.environ.get("PYTHONPATH", "")]),
    }
    for selection in ("analytics/orders", "analytics/totals"):  # two runs, two processes
        done = subprocess.run(
            [str(REPO / ".venv" / "bin" / "dagster"), "asset", "materialize", "-m", "io_cli_definitions", "--select", selection],
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    with view(sqlite_lake) as v:
        assert v.table("analytics.orders") == [(1, 10.0), (2, 20.5), (3, 4.25)]
        assert v.table("analytics.totals") == [(3, 34.75)]
        with dg.DagsterInstance.from_config(str(home)) as instance:
            runs = list(reversed(instance.get_runs()))  # newest first -> in order
            assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * 2
            for run, key in zip(runs, ("orders", "totals")):
                event = instance.get_latest_materialization_event(dg.AssetKey(["analytics", key]))
                assert event is not None and event.run_id == run.run_id
                snapshot = v.snapshot_of_run(run.run_id)
                assert event.asset_materialization.metadata["srdp/snapshot_id"].value == snapshot["snapshot_id"]
                assert snapshot["message"] == f"dagster run {run.run_id} asset analytics/{key} (whole table)"
