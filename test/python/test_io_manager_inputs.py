"""SrdpIOManager's type handlers and inputs with real Dagster on real DuckLake catalogs (SQLite and
DuckDB-file): every supported output type is written and loaded back as every supported input type
with the same values; ``columns`` input metadata selects columns; a partitioned input reads only its
partitions; an input reads the upstream table at the snapshot its materialization committed (and
the latest with ``pin_inputs=False``).

Loaded values are compared with the rows written, and the stored columns and rows are read with
plain SQL on a connection of their own (iomanager_support.view).
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from srdp.dagster.pins import RECORDS_PER_PARTITION, PinRequest, pinned_snapshot

from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    io_manager,
    lake,
    make_lake,
    rows_of,
    sqlite_lake,
    view,
    write_sql,
)

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["a", None, "c"], pa.string()),
        "amount": pa.array([1.5, 2.25, -3.0], pa.float64()),
        "flag": pa.array([True, False, True], pa.bool_()),
        "at": pa.array([datetime(2024, 1, 1, 8), datetime(2024, 1, 2, 9, 30), None], pa.timestamp("us")),
    }
)

# Output types: how an asset returns ROWS as each.
WRITERS: dict[str, Callable[[pa.Table], Any]] = {
    "pyarrow.Table": lambda t: t,
    "pyarrow.RecordBatchReader": lambda t: pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=2)),
    "pandas.DataFrame": lambda t: t.to_pandas(),
    "polars.DataFrame": lambda t: pl.from_arrow(t),
    "polars.LazyFrame": lambda t: pl.from_arrow(t).lazy(),
    "duckdb relation": lambda t: duckdb.connect().from_arrow(t),
}

# Input annotations.
READERS: dict[str, Any] = {
    "pyarrow.Table": pa.Table,
    "pyarrow.RecordBatchReader": pa.RecordBatchReader,
    "pandas.DataFrame": pd.DataFrame,
    "polars.DataFrame": pl.DataFrame,
    "polars.LazyFrame": pl.LazyFrame,
    "duckdb relation": duckdb.DuckDBPyRelation,
}


def reader(kind: str, seen: dict[str, Any], upstream: list[str], **asset_in: Any) -> dg.AssetsDefinition:
    """An asset whose input ``source`` (annotated as READERS[kind]) is recorded in ``seen[kind]``
    as (its type, its rows, its columns); it stores nothing."""
    annotation = READERS[kind]

    @dg.asset(name="read_" + kind.replace(".", "_").replace(" ", "_"), ins={"source": dg.AssetIn(key=upstream, **asset_in)})
    def read(source: annotation) -> None:  # type: ignore[valid-type]
        value = source.collect() if isinstance(source, pl.LazyFrame) else source
        columns = value.column_names if isinstance(value, pa.Table) else list(getattr(value, "columns", []))
        seen[kind] = (type(source), rows_of(value), columns)

    return read


def sample_cases() -> list[Any]:
    cases = [pytest.param("sqlite", kind, id=f"sqlite-{kind}") for kind in WRITERS]
    return cases + [pytest.param("duckdb", "pyarrow.Table", id="duckdb-pyarrow.Table")]


@pytest.mark.parametrize(("backend", "written"), sample_cases())
def test_every_output_type_is_written_and_loaded_as_every_input_type(tmp_path: Path, backend: str, written: str) -> None:
    cfg = make_lake(tmp_path / "lake", backend)

    @dg.asset(key_prefix=["analytics"])
    def source() -> Any:
        return WRITERS[written](ROWS)

    seen: dict[str, Any] = {}
    readers = [reader(kind, seen, ["analytics", "source"]) for kind in READERS]
    result = dg.materialize([source, *readers], resources={"io_manager": io_manager(cfg)})
    assert result.success
    expected = ROWS.to_pylist()
    with view(cfg) as v:
        assert [c[:2] for c in v.columns("analytics", "source")] == [
            ("id", "int64"),
            ("name", "varchar"),
            ("amount", "float64"),
            ("flag", "boolean"),
            ("at", "timestamp"),
        ]
        assert [tuple(r.values()) for r in expected] == v.table("analytics.source", order="id")
    assert set(seen) == set(READERS)
    for kind, (loaded_type, rows, _) in seen.items():
        assert issubclass(loaded_type, READERS[kind]), (kind, loaded_type)
        assert sorted(rows, key=lambda r: r["id"]) == expected, kind


def test_columns_input_metadata_selects_the_columns_in_that_order(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def source() -> pa.Table:
        return ROWS

    seen: dict[str, Any] = {}
    readers = [
        reader(kind, seen, ["analytics", "source"], metadata={"columns": ["amount", "id"]})
        for kind in ("pyarrow.Table", "pandas.DataFrame", "polars.LazyFrame")
    ]
    assert dg.materialize([source, *readers], resources={"io_manager": io_manager(sqlite_lake)}).success
    expected = [{"amount": r["amount"], "id": r["id"]} for r in ROWS.to_pylist()]
    for kind, (_, rows, columns) in seen.items():
        assert (columns, rows) == (["amount", "id"], expected), kind


DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-06")


def _daily_sum(seen: list[list[int]]) -> dg.AssetsDefinition:
    """A daily asset reading analytics/events' matching partitions (a range in one run), noting
    the sorted ``n`` it read."""

    @dg.asset(
        key_prefix=["analytics"],
        partitions_def=DAILY,
        ins={"events": dg.AssetIn(key=["analytics", "events"])},
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def daily_sum(events: pa.Table) -> None:
        seen.append(sorted(events.column("n").to_pylist()))

    return daily_sum


def _run_range(assets: list[Any], target: Any, io: dict[str, Any], instance: dg.DagsterInstance, start: str, end: str) -> Any:
    """One run of ``target`` over the partitions ``start`` to ``end`` (a single-run backfill)."""
    job = dg.Definitions(
        assets=assets, jobs=[dg.define_asset_job("ranged", selection=[target])], resources=io
    ).resolve_job_def("ranged")
    return job.execute_in_process(
        instance=instance,
        tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
    )


def test_a_partitioned_input_reads_only_its_partitions_at_their_snapshot(lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "day"})
    def events(context) -> pa.Table:  # noqa: ANN001  (Dagster refuses a string annotation of context)
        day = datetime.fromisoformat(context.partition_key).date()
        return pa.table({"day": [day, day], "n": pa.array([day.day * 10, day.day * 10 + 1], pa.int64())})

    seen: list[list[int]] = []
    daily_sum = _daily_sum(seen)

    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    snapshots = {}
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        run = dg.materialize([events], resources=io, partition_key=day, instance=instance)
        snapshots[day] = run.asset_materializations_for_node("analytics__events")[0].metadata["srdp/snapshot_id"].value
    one = dg.materialize([events, daily_sum], selection=[daily_sum], resources=io, partition_key="2024-01-02", instance=instance)
    ranged = _run_range([events, daily_sum], daily_sum, io, instance, "2024-01-01", "2024-01-02")
    assert seen == [[20, 21], [10, 11, 20, 21]]
    assert input_log(instance, one.run_id) == [
        f"lake.analytics.events: reading time window [2024-01-02 00:00:00, 2024-01-03 00:00:00) at snapshot {snapshots['2024-01-02']}"
    ]
    # A range reads at the newest snapshot of its partitions' materializations.
    assert input_log(instance, ranged.run_id) == [
        f"lake.analytics.events: reading time window [2024-01-01 00:00:00, 2024-01-03 00:00:00) at snapshot {snapshots['2024-01-02']}"
    ]
    with view(lake) as v:  # each snapshot is the one that wrote its day
        messages = {s["snapshot_id"]: s["message"] for s in v.snapshots()}
        assert all(f"(time window [{day} 00:00:00, " in messages[s] for day, s in snapshots.items())


def test_a_range_reads_at_its_partitions_snapshot_when_one_was_rematerialized_many_times_since(lake: Path) -> None:
    """The pin's first query reads RECORDS_PER_PARTITION materializations per wanted partition;
    a partition whose latest is older than that many of the others' is looked up by itself, not
    given up on (which would read the latest version, rows written outside Dagster included)."""

    @dg.asset(key_prefix=["analytics"], partitions_def=DAILY, metadata={"partition_expr": "day"})
    def events(context) -> pa.Table:  # noqa: ANN001
        day = datetime.fromisoformat(context.partition_key).date()
        return pa.table({"day": [day], "n": pa.array([day.day], pa.int64())})

    seen: list[list[int]] = []
    total = _daily_sum(seen)

    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    assert dg.materialize([events], resources=io, partition_key="2024-01-01", instance=instance).success
    for _ in range(2 * RECORDS_PER_PARTITION + 1):
        run = dg.materialize([events], resources=io, partition_key="2024-01-02", instance=instance)
    newest = run.asset_materializations_for_node("analytics__events")[0].metadata["srdp/snapshot_id"].value
    write_sql(lake, "INSERT INTO lake.analytics.events VALUES (DATE '2024-01-01', 99)")  # outside Dagster

    read = _run_range([events, total], total, io, instance, "2024-01-01", "2024-01-02")
    assert seen == [[1, 2]]
    assert input_log(instance, read.run_id) == [
        f"lake.analytics.events: reading time window [2024-01-01 00:00:00, 2024-01-03 00:00:00) at snapshot {newest}"
    ]
    # The log line is written before Dagster's LOADED_INPUT event of the step.
    kinds = [e.dagster_event.event_type_value if e.dagster_event else e.user_message for e in instance.all_logs(read.run_id)]
    assert kinds.index(input_log(instance, read.run_id)[0]) < kinds.index("LOADED_INPUT"), kinds
    # One wanted partition reads one record, its latest; several read RECORDS_PER_PARTITION each.
    counting = _CountingInstance(instance)
    key = dg.AssetKey(["analytics", "events"])
    first = dg.materialize([events], resources=io, partition_key="2024-01-01", instance=instance)
    day_one = first.asset_materializations_for_node("analytics__events")[0].metadata["srdp/snapshot_id"].value
    assert pinned_snapshot(PinRequest(counting, key, ["2024-01-02"])) == newest
    assert pinned_snapshot(PinRequest(counting, key, ["2024-01-01"])) == day_one
    assert pinned_snapshot(PinRequest(counting, key, ["2024-01-01", "2024-01-02"])) == day_one
    assert counting.limits == [1, 1, 2 * RECORDS_PER_PARTITION]


class _CountingInstance:
    """A real Dagster instance that records the limit of each fetch_materializations call."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self._instance, self.limits = instance, []

    def fetch_materializations(self, records_filter, limit: int, **kwargs):  # noqa: ANN001, ANN201
        self.limits.append(limit)
        return self._instance.fetch_materializations(records_filter, limit=limit, **kwargs)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._instance, name)


def input_log(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The IO manager's 'reading' log lines of a run."""
    return [e.user_message for e in instance.all_logs(run_id) if ": reading " in e.user_message]


def test_an_input_reads_the_upstream_at_its_materialization_snapshot_unless_told_otherwise(lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})

    seen: list[list[tuple[int, str]]] = []

    @dg.asset(key_prefix=["analytics"], ins={"orders": dg.AssetIn(key=["analytics", "orders"])})
    def report(orders: pa.Table) -> None:
        seen.append(sorted((r["id"], r["v"]) for r in orders.to_pylist()))

    instance = dg.DagsterInstance.ephemeral()
    first = dg.materialize([orders, report], resources={"io_manager": io_manager(lake)}, instance=instance)
    with view(lake) as v:
        pinned = v.snapshot_of_run(first.run_id)["snapshot_id"]
    assert first.asset_materializations_for_node("analytics__orders")[0].metadata["srdp/snapshot_id"].value == pinned
    # Written outside Dagster after the materialization: a newer snapshot.
    write_sql(lake, "INSERT INTO lake.analytics.orders VALUES (3, 'outside')")
    with view(lake) as v:
        assert v.latest_snapshot() == pinned + 1

    rerun = dg.materialize([orders, report], selection=[report], resources={"io_manager": io_manager(lake)}, instance=instance)
    latest = dg.materialize(
        [orders, report], selection=[report], resources={"io_manager": io_manager(lake, pin_inputs=False)}, instance=instance
    )
    assert seen == [[(1, "a"), (2, "b")], [(1, "a"), (2, "b")], [(1, "a"), (2, "b"), (3, "outside")]]
    assert input_log(instance, first.run_id) == [f"lake.analytics.orders: reading whole table at snapshot {pinned}"]
    assert input_log(instance, rerun.run_id) == [f"lake.analytics.orders: reading whole table at snapshot {pinned}"]
    assert input_log(instance, latest.run_id) == ["lake.analytics.orders: reading whole table"]

    @dg.asset(key_prefix=["analytics"], ins={"orders": dg.AssetIn(key=["analytics", "orders"], metadata={"snapshot_id": pinned})})
    def audit(orders: pa.Table) -> None:
        seen.append(sorted((r["id"], r["v"]) for r in orders.to_pylist()))

    dg.materialize([orders, audit], selection=[audit], resources={"io_manager": io_manager(lake, pin_inputs=False)}, instance=instance)
    assert seen[-1] == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("pin_inputs", [True, False], ids=["pinned (the table is looked up while the pin is)", "not pinned (the read says so)"])
def test_loading_a_table_that_does_not_exist_says_so(sqlite_lake: Path, pin_inputs: bool) -> None:
    from srdp.dagster.tables import IOManagerError

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return ROWS

    seen: dict[str, Any] = {}
    with pytest.raises(IOManagerError) as error:
        dg.materialize([orders, reader("pyarrow.Table", seen, ["analytics", "orders"])], selection=["read_pyarrow_Table"], resources={"io_manager": io_manager(sqlite_lake, pin_inputs=pin_inputs)})
    assert str(error.value) == "lake.analytics.orders does not exist; materialize its asset first"
    assert seen == {}


def test_an_input_of_an_unsupported_annotation_is_refused(sqlite_lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return ROWS

    @dg.asset(ins={"orders": dg.AssetIn(key=["analytics", "orders"])})
    def as_dict(orders: dict) -> None:
        raise AssertionError(f"never reached: {orders}")

    with pytest.raises(TypeError) as error:
        dg.materialize([orders, as_dict], resources={"io_manager": io_manager(sqlite_lake)})
    assert str(error.value) == (
        "SrdpIOManager cannot load an input annotated builtins.dict: annotate it as pyarrow.Table, "
        "pyarrow.RecordBatchReader, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or "
        "duckdb.DuckDBPyRelation"
    )


def test_a_streamed_input_flows_into_the_output_in_a_process_that_read_first(lake: Path) -> None:
    # The selected run's first use of the lake is a read (the inputs), then the outputs are
    # written while the inputs still stream from it.
    @dg.asset(key_prefix=["analytics"])
    def events() -> pa.Table:
        return pa.table({"id": pa.array(range(5), pa.int64())})

    @dg.asset(key_prefix=["analytics"], ins={"events": dg.AssetIn(key=["analytics", "events"])})
    def copied(events: pa.RecordBatchReader) -> pa.RecordBatchReader:
        return events

    @dg.asset(key_prefix=["analytics"], ins={"events": dg.AssetIn(key=["analytics", "events"])})
    def first_three(events: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
        return events.filter("id < 3")

    io, instance = {"io_manager": io_manager(lake)}, dg.DagsterInstance.ephemeral()
    dg.materialize([events], resources=io, instance=instance)
    with view(lake) as v:  # closes the IO manager's connection: the next run starts afresh
        assert v.table("analytics.events") == [(0,), (1,), (2,), (3,), (4,)]
    expected = {"copied": [(0,), (1,), (2,), (3,), (4,)], "first_three": [(0,), (1,), (2,)]}
    for selected in (copied, first_three):
        assert dg.materialize([events, copied, first_three], selection=[selected], resources=io, instance=instance).success
        with view(lake) as v:  # and closes the connection again
            name = selected.key.path[-1]
            assert v.table(f"analytics.{name}") == expected[name]
