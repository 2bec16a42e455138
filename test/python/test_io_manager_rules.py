"""SrdpIOManager's ownership check and raw safety rules with real Dagster on real DuckLake
catalogs: a schema owned by dlt, dbt or another writer, or one srdp.toml does not name, is refused
with srdp_check_writer's message; in a raw schema a replace is refused (raw_append_only) and so is a
changed column type (raw_validated), each before anything is written; a relaxed rule allows it.

Refusals are checked by their exact message and by the table's rows and the lake's latest
snapshot, read on a connection of their own (iomanager_support.view): both unchanged.
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from pathlib import Path

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
from srdp.dagster.tables import IOManagerError


def orders_table(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"{tag}{i}" for i in ids], pa.string())})


OWNER_REFUSALS = {
    "raw": "it is owned by 'dlt' (single_writer)",
    "curated": "it is owned by 'dbt' (single_writer)",
    "reports": "it is owned by 'reporting' (single_writer)",
    "misc": "it has no owner in the definition; define [catalogs.lake.schemas.misc] with writer and layer",
}


@pytest.mark.parametrize("schema", sorted(OWNER_REFUSALS))
def test_a_schema_the_io_manager_does_not_own_is_refused_and_its_table_and_snapshot_stay(
    sqlite_lake: Path, schema: str
) -> None:
    write_sql(
        sqlite_lake,
        f"CREATE SCHEMA lake.{schema}",
        f"CREATE TABLE lake.{schema}.events AS SELECT range AS id, 'old' AS v FROM range(3)",
    )

    @dg.asset(key=[schema, "events"])
    def events() -> pa.Table:
        return orders_table([7, 8], "new")

    with view(sqlite_lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(duckdb.BinderException) as error:
        dg.materialize([events], resources={"io_manager": io_manager(sqlite_lake)})
    assert error_text(error.value) == (
        f"Binder Error: srdp_check_writer: writer 'io_manager' may not write schema '{schema}' of catalog "
        f"'lake': {OWNER_REFUSALS[schema]}. 'io_manager' may write: analytics, marts, raw_io. To relax the "
        f"rule, add the line `single_writer = false` under [rules] in {sqlite_lake}"
    )
    with view(sqlite_lake) as v:
        assert v.table(f"{schema}.events") == [(0, "old"), (1, "old"), (2, "old")]
        assert v.latest_snapshot() == before


def test_a_schema_owned_by_another_writer_name_is_written_by_that_io_manager(sqlite_lake: Path) -> None:
    @dg.asset(key=["reports", "weekly"])
    def weekly() -> pa.Table:
        return orders_table([1, 2], "w")

    result = dg.materialize([weekly], resources={"io_manager": io_manager(sqlite_lake, writer="reporting")})
    with view(sqlite_lake) as v:
        assert v.table("reports.weekly") == [(1, "w1"), (2, "w2")]
        assert v.snapshot_of_run(result.run_id)["author"] == "reporting"


def test_raw_is_append_only_a_replace_is_refused_before_writing(lake: Path) -> None:
    @dg.asset(key=["raw_io", "events"])
    def events() -> pa.Table:
        return orders_table([1, 2], "a")

    @dg.asset(key=["raw_io", "events"], metadata={"write_mode": "replace"})
    def events_replace() -> pa.Table:
        return orders_table([9], "r")

    io = {"io_manager": io_manager(lake)}
    first, second = dg.materialize([events], resources=io), dg.materialize([events], resources=io)
    with view(lake) as v:
        # The default in raw is append: both runs' rows are there.
        assert v.table("raw_io.events") == [(1, "a1"), (1, "a1"), (2, "a2"), (2, "a2")]
        assert materialization(second, "raw_io__events")["srdp/write_mode"] == "append"
        assert materialization(second, "raw_io__events")["dagster/row_count"] == 4
        assert v.snapshot_of_run(second.run_id)["snapshot_id"] == v.snapshot_of_run(first.run_id)["snapshot_id"] + 1
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([events_replace], resources=io)
    assert str(error.value) == (
        "writing lake.raw_io.events with write_mode 'replace' is refused: schema 'raw_io' is a raw layer and "
        "rule raw_append_only is on (raw keeps a complete audit trail and curated layers can always be rebuilt "
        "from it). Write with write_mode 'append', or relax the rule with the line `raw_append_only = false` "
        f"under [rules] in {lake}; nothing was written"
    )
    with view(lake) as v:
        assert v.table("raw_io.events") == [(1, "a1"), (1, "a1"), (2, "a2"), (2, "a2")]
        assert v.latest_snapshot() == before


def test_raw_validated_refuses_a_changed_column_type_and_allows_a_new_column(lake: Path) -> None:
    @dg.asset(key=["raw_io", "events"])
    def events() -> pa.Table:
        return pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})

    @dg.asset(key=["raw_io", "events"])
    def events_wider() -> pa.Table:  # INTEGER -> BIGINT is lossless, but raw freezes types
        return pa.table({"id": pa.array([2**40], pa.int64()), "v": ["c"]})

    @dg.asset(key=["raw_io", "events"])
    def events_fitting() -> pa.Table:  # BIGINT values that INTEGER holds: cast, the type stays
        return pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]})

    @dg.asset(key=["raw_io", "events"])
    def events_more() -> pa.Table:
        return pa.table({"id": pa.array([4], pa.int32()), "v": ["d"], "note": ["new"]})

    io = {"io_manager": io_manager(lake)}
    dg.materialize([events], resources=io)
    with view(lake) as v:
        before = v.latest_snapshot()
    with pytest.raises(IOManagerError) as error:
        dg.materialize([events_wider], resources=io)
    assert str(error.value) == (
        "lake.raw_io.events: column 'id' is INTEGER and the output has BIGINT; rule raw_validated freezes "
        "column types in raw (new columns are allowed). Cast the column to the table's type, or relax the "
        f"rule with the line `raw_validated = false` under [rules] in {lake}"
    )
    with view(lake) as v:
        assert v.table("raw_io.events") == [(1, "a"), (2, "b")]
        assert v.latest_snapshot() == before
        assert [c[:2] for c in v.columns("raw_io", "events")] == [("id", "int32"), ("v", "varchar")]
    more = dg.materialize([events_more], resources=io)
    with view(lake) as v:
        assert v.table("raw_io.events") == [(1, "a", None), (2, "b", None), (4, "d", "new")]
        assert v.columns("raw_io", "events")[2] == ("note", "varchar", v.snapshot_of_run(more.run_id)["snapshot_id"], None)
    dg.materialize([events_fitting], resources=io)
    with view(lake) as v:
        assert v.table("raw_io.events") == [(1, "a", None), (2, "b", None), (3, "c", None), (4, "d", "new")]
        assert [c[:2] for c in v.columns("raw_io", "events")] == [("id", "int32"), ("v", "varchar"), ("note", "varchar")]


def test_with_raw_append_only_relaxed_a_raw_table_is_replaced_by_default(tmp_path: Path) -> None:
    cfg = make_lake(tmp_path / "lake", "sqlite", "\n[rules]\nraw_append_only = false   # ticket DATA-1\n")
    batches = iter([orders_table([1, 2], "a"), orders_table([3], "b")])

    @dg.asset(key=["raw_io", "events"])
    def events() -> pa.Table:
        return next(batches)

    io = {"io_manager": io_manager(cfg)}
    dg.materialize([events], resources=io)
    second = dg.materialize([events], resources=io)
    with view(cfg) as v:
        assert v.table("raw_io.events") == [(3, "b3")]
    assert materialization(second, "raw_io__events")["srdp/write_mode"] == "replace"
