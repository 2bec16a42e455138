"""What a dagster-duckdb user relies on, on SrdpIOManager: op outputs, the first partition of a
self-dependent asset, DataFrame subclasses, ``load_input`` without an instance, lossless casts of
timestamp units, the schema order of metadata / key prefix / resource, odd column names, and the
extras that name what is missing. Each is checked on a real lake through srdp."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from iomanager_support import io_manager, sqlite_lake, view  # noqa: F401
from srdp.dagster.tables import IOManagerError


# --- 1. op outputs ------------------------------------------------------------------------
def test_an_op_output_is_stored_as_schema_dot_output_name_and_read_by_the_next_op(sqlite_lake: Path) -> None:
    @dg.op(out=dg.Out(metadata={"schema": "analytics"}))
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2, 3]})

    @dg.op(out={"named": dg.Out(metadata={"dagster/table_name": "marts.named_by_metadata"})})
    def total(orders: pa.Table) -> pa.Table:
        return pa.table({"total": [sum(orders.column("id").to_pylist())]})

    @dg.op(out=dg.Out(metadata={"schema": "marts", "table": "renamed"}))
    def renamed(orders: pa.Table) -> pa.Table:
        return orders

    @dg.job(resource_defs={"io_manager": io_manager(sqlite_lake)})
    def job() -> None:
        made = orders()
        total(made)
        renamed(made)

    assert job.execute_in_process().success
    with view(sqlite_lake) as v:
        assert v.table("analytics.result") == [(1,), (2,), (3,)]
        assert v.table("marts.named_by_metadata") == [(6,)]
        assert v.table("marts.renamed") == [(1,), (2,), (3,)]
        assert [s["author"] for s in v.snapshots()[-3:]] == ["io_manager"] * 3


def test_an_op_output_in_a_schema_the_io_manager_does_not_own_is_refused(sqlite_lake: Path) -> None:
    @dg.op(out=dg.Out(metadata={"schema": "reports"}))
    def orders() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.job(resource_defs={"io_manager": io_manager(sqlite_lake)})
    def job() -> None:
        orders()

    with pytest.raises(Exception, match="reports") as caught:
        job.execute_in_process()
    assert "asset_key" not in str(caught.value)


# --- 2. first partition of a self-dependent asset ------------------------------------------
def test_the_first_partition_of_a_self_dependent_asset_reads_an_empty_frame(sqlite_lake: Path) -> None:
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
    seen: list[int] = []

    @dg.asset(
        key_prefix=["analytics"],
        partitions_def=daily,
        metadata={"partition_expr": "day"},
        ins={
            "previous": dg.AssetIn(
                key=dg.AssetKey(["analytics", "running"]),
                partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
            )
        },
    )
    def running(context, previous: pa.Table) -> pa.Table:
        seen.append(previous.num_rows)
        day = dt.datetime.strptime(context.partition_key, "%Y-%m-%d")
        return pa.table({"day": [day], "n": [previous.num_rows + 1]})

    resources = {"io_manager": io_manager(sqlite_lake)}
    instance = dg.DagsterInstance.ephemeral()
    for key in ("2024-01-01", "2024-01-02"):
        assert dg.materialize([running], partition_key=key, resources=resources, instance=instance).success
    assert seen == [0, 1]
    with view(sqlite_lake) as v:
        assert v.rows("SELECT CAST(day AS DATE)::VARCHAR, n FROM lake.analytics.running ORDER BY 1") == [
            ("2024-01-01", 1),
            ("2024-01-02", 2),
        ]


# --- 4. DataFrame subclasses ----------------------------------------------------------------
class TaggedFrame(pd.DataFrame):
    @property
    def _constructor(self) -> Any:
        return TaggedFrame


class TaggedPolars(pl.DataFrame):
    pass


def test_subclasses_of_dataframes_are_stored(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def from_pandas() -> pd.DataFrame:
        return TaggedFrame({"a": [1, 2]})

    @dg.asset(key_prefix=["analytics"])
    def from_polars() -> pl.DataFrame:
        return TaggedPolars({"a": [3, 4]})

    assert dg.materialize([from_pandas, from_polars], resources={"io_manager": io_manager(sqlite_lake)}).success
    with view(sqlite_lake) as v:
        assert (v.table("analytics.from_pandas"), v.table("analytics.from_polars")) == ([(1,), (2,)], [(3,), (4,)])


# --- 5. load_input without an instance ------------------------------------------------------
def test_load_input_without_an_instance_reads_the_latest_version(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return pa.table({"id": [7, 8]})

    manager = io_manager(sqlite_lake)
    assert dg.materialize([orders], resources={"io_manager": manager}).success
    context = dg.build_input_context(asset_key=dg.AssetKey(["analytics", "orders"]), dagster_type=dg.PythonObjectDagsterType(pa.Table))
    loaded = manager.load_input(context)
    assert loaded.to_pydict() == {"id": [7, 8]}


# --- 6. timestamp units ----------------------------------------------------------------------
@pytest.mark.parametrize("schema", ["analytics", "raw_io"])
def test_a_polars_output_into_a_table_pandas_created_casts_microseconds_to_nanoseconds(sqlite_lake: Path, schema: str) -> None:
    first = pd.DataFrame({"ts": pd.to_datetime(["2024-01-01 10:00:00"]), "n": [1]})
    second = pl.DataFrame({"ts": [dt.datetime(2024, 1, 2, 11, 0, 0, 5)], "n": [2]})
    frames = iter([first, second])

    @dg.asset(key_prefix=[schema], metadata={"write_mode": "append"})
    def events() -> Any:
        return next(frames)

    for _ in range(2):
        assert dg.materialize([events], resources={"io_manager": io_manager(sqlite_lake)}).success
    with view(sqlite_lake) as v:
        assert v.rows(f"SELECT column_type FROM (DESCRIBE lake.{schema}.events) WHERE column_name = 'ts'") == [("TIMESTAMP_NS",)]
        assert v.rows(f"SELECT ts::VARCHAR, n FROM lake.{schema}.events ORDER BY n") == [
            ("2024-01-01 10:00:00", 1),
            ("2024-01-02 11:00:00.000005", 2),
        ]


def test_a_real_type_change_is_still_refused(sqlite_lake: Path) -> None:
    frames = iter([pa.table({"v": pa.array([1], pa.int64())}), pa.table({"v": ["not a number"]})])

    @dg.asset(key_prefix=["analytics"], metadata={"write_mode": "append"})
    def values() -> pa.Table:
        return next(frames)

    assert dg.materialize([values], resources={"io_manager": io_manager(sqlite_lake)}).success
    with pytest.raises(IOManagerError, match="column 'v' is BIGINT and the output has VARCHAR"):
        dg.materialize([values], resources={"io_manager": io_manager(sqlite_lake)})


# --- 7. schema order ---------------------------------------------------------------------------
def test_metadata_schema_wins_over_the_key_prefix_and_the_prefix_over_the_resource(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"], metadata={"schema": "marts"})
    def by_metadata() -> pa.Table:
        return pa.table({"a": [1]})

    @dg.asset(key_prefix=["analytics"])
    def by_prefix() -> pa.Table:
        return pa.table({"a": [2]})

    assert dg.materialize([by_metadata, by_prefix], resources={"io_manager": io_manager(sqlite_lake, schema="marts")}).success
    with view(sqlite_lake) as v:
        assert (v.table("marts.by_metadata"), v.table("analytics.by_prefix")) == ([(1,)], [(2,)])


def test_a_table_name_and_a_schema_that_disagree_are_refused(sqlite_lake: Path) -> None:
    @dg.asset(metadata={"schema": "marts", "dagster/table_name": "analytics.t"})
    def both() -> pa.Table:
        return pa.table({"a": [1]})

    with pytest.raises(
        IOManagerError,
        match=r"^asset 'both': metadata 'schema' \('marts'\) and 'dagster/table_name' \('analytics.t'\) name different schemas; give one of them$",
    ):
        dg.materialize([both], resources={"io_manager": io_manager(sqlite_lake)})


# --- 8. column names ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame([[1, 2]], columns=["a", "A"]), "columns 'a' and 'A' are one column in DuckDB (names ignore case)"),
        (pa.table({"": [1]}), "a column has an empty name"),
    ],
)
def test_odd_column_names_are_refused_by_name(sqlite_lake: Path, frame: Any, message: str) -> None:
    @dg.asset(key_prefix=["analytics"])
    def odd() -> Any:
        return frame

    with pytest.raises(IOManagerError, match="^" + re.escape(f"lake.analytics.odd: {message}")):
        dg.materialize([odd], resources={"io_manager": io_manager(sqlite_lake)})
    with view(sqlite_lake) as v:
        assert v.rows("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake' AND table_name = 'odd'") == [(0,)]


def test_a_column_differing_from_the_tables_only_by_case_is_refused(sqlite_lake: Path) -> None:
    frames = iter([pa.table({"id": [1]}), pa.table({"ID": [2]})])

    @dg.asset(key_prefix=["analytics"])
    def cased() -> pa.Table:
        return next(frames)

    assert dg.materialize([cased], resources={"io_manager": io_manager(sqlite_lake)}).success
    with pytest.raises(IOManagerError, match="^lake.analytics.cased: column 'ID' of the output is column 'id' of the table"):
        dg.materialize([cased], resources={"io_manager": io_manager(sqlite_lake)})
    with view(sqlite_lake) as v:
        assert v.table("analytics.cased") == [(1,)]


def test_a_columns_input_metadata_that_is_a_string_is_refused(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def wide() -> pa.Table:
        return pa.table({"a": [1], "b": [2]})

    @dg.asset(key_prefix=["analytics"], ins={"wide": dg.AssetIn(key=wide.key, metadata={"columns": "a"})})
    def narrow(wide: pa.Table) -> pa.Table:
        return wide

    with pytest.raises(IOManagerError, match=r"^input 'wide': metadata 'columns' must be a list of column names, not a string \('a'\); write \['a'\]$"):
        dg.materialize([wide, narrow], resources={"io_manager": io_manager(sqlite_lake)})


# --- 9. extras -----------------------------------------------------------------------------------
def test_the_wheel_has_pandas_and_polars_extras_pinned_like_the_rest() -> None:
    import tomllib

    from conftest import REPO

    extras = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {line.split("==")[0]: line for line in (REPO / "python" / "requirements.txt").read_text().split() if "==" in line}
    assert extras["pandas"] == [pins["pandas"], "pyarrow>=17"]
    assert extras["polars"] == [pins["polars"], "pyarrow>=17"]


def test_a_missing_optional_package_names_its_extra() -> None:
    from srdp.extras import missing_extra

    error = missing_extra("dagster_dbt", ModuleNotFoundError("No module named 'dagster_dbt'", name="dagster_dbt"))
    assert str(error) == (
        "srdp needs the Python package 'dagster_dbt' for this, and it is not installed: "
        "pip install 'srdp[dbt]'"
    )


# --- 3. time partitions in a timezone over naive timestamp columns ---------------------------
def test_a_naive_column_is_compared_with_the_partitions_own_wall_time(sqlite_lake: Path) -> None:
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01", timezone="America/New_York")
    seen: list[list[str]] = []

    @dg.asset(key_prefix=["analytics"], partitions_def=daily, metadata={"partition_expr": "ts"})
    def local_events(context) -> pa.Table:  # noqa: ANN001
        day = dt.datetime.strptime(context.partition_key, "%Y-%m-%d")
        # Local wall time, naive: 00:00 and 23:30 of the New York day.
        return pa.table({"ts": [day, day + dt.timedelta(hours=23, minutes=30)]})

    @dg.asset(key_prefix=["analytics"], partitions_def=daily)
    def local_report(local_events: pa.Table) -> None:
        seen.append([str(t) for t in local_events.column("ts").to_pylist()])

    resources = {"io_manager": io_manager(sqlite_lake)}
    instance = dg.DagsterInstance.ephemeral()
    for key in ("2024-01-01", "2024-01-02"):
        assert dg.materialize([local_events, local_report], partition_key=key, resources=resources, instance=instance).success
    assert seen == [
        ["2024-01-01 00:00:00", "2024-01-01 23:30:00"],
        ["2024-01-02 00:00:00", "2024-01-02 23:30:00"],
    ]
    with view(sqlite_lake) as v:
        assert v.rows("SELECT count(*), count(DISTINCT ts) FROM lake.analytics.local_events") == [(4, 4)]


def test_a_downstream_op_reads_back_an_op_output_written_under_a_table_name(sqlite_lake: Path) -> None:
    """An op output with ``table`` metadata is written to <schema>.<table> and read back from
    there by the op that takes it (not from <schema>.<output name>, which does not exist)."""
    seen: list[list[int]] = []

    @dg.op(out=dg.Out(metadata={"schema": "marts", "table": "renamed"}))
    def renamed() -> pa.Table:
        return pa.table({"id": [3, 1, 2]})

    @dg.op
    def downstream(rows: pa.Table) -> None:
        seen.append(sorted(rows.column("id").to_pylist()))

    @dg.job(resource_defs={"io_manager": io_manager(sqlite_lake)})
    def job() -> None:
        downstream(renamed())

    assert job.execute_in_process().success
    assert seen == [[1, 2, 3]]
    with view(sqlite_lake) as v:
        assert v.table("marts.renamed") == [(1,), (2,), (3,)]
        assert v.rows("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake' AND table_name = 'result'") == [(0,)]
