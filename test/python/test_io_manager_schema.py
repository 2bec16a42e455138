"""SrdpIOManager's schema changes with real Dagster on real DuckLake catalogs (SQLite and
DuckDB-file): a new column is added in the write's own snapshot, a missing column is kept (NULLs)
unless the asset asks to drop it, a lossless type change promotes the column, and any other type
change is refused before anything is written.

Columns are read from DuckLake's ``ducklake_column`` (type, begin and end snapshot) and rows with
plain SQL, on a connection of their own (iomanager_support.view).
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest

from iomanager_support import (  # noqa: F401  (fixtures)
    _close_io_sessions_after_test,
    column_schema,
    io_manager,
    lake,
    materialization,
    view,
)
from srdp.dagster.tables import IOManagerError


def test_a_new_column_is_added_in_the_write_and_a_missing_one_kept_or_dropped_on_request(lake: Path) -> None:
    outputs = iter(
        [
            pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}),
            pa.table({"id": pa.array([3], pa.int64()), "v": ["c"], "w": pa.array([30], pa.int64())}),
            pa.table({"id": pa.array([4], pa.int64()), "w": pa.array([40], pa.int64())}),
        ]
    )

    @dg.asset(key_prefix=["analytics"], metadata={"write_mode": "append"})
    def wide() -> pa.Table:
        return next(outputs)

    @dg.asset(key=["analytics", "wide"], metadata={"drop_missing_columns": True})
    def narrow() -> pa.Table:
        return pa.table({"id": pa.array([5], pa.int64()), "w": pa.array([50], pa.int64())})

    io = {"io_manager": io_manager(lake)}
    first = dg.materialize([wide], resources=io)
    added = dg.materialize([wide], resources=io)
    with view(lake) as v:
        s1, s2 = (v.snapshot_of_run(r.run_id)["snapshot_id"] for r in (first, added))
        table_id = v.table_id("analytics", "wide")
        assert (s2, v.latest_snapshot()) == (s1 + 1, s1 + 1)  # the ALTER and the rows: one snapshot
        assert v.snapshot_of_run(added.run_id)["changes"] == f'altered_table:{table_id},inlined_insert:{table_id}'
        assert v.columns("analytics", "wide") == [("id", "int64", s1, None), ("v", "varchar", s1, None), ("w", "int64", s2, None)]
        assert v.table("analytics.wide") == [(1, "a", None), (2, "b", None), (3, "c", 30)]
    meta = materialization(added, "analytics__wide")
    assert (meta["srdp/added_columns"], column_schema(meta)) == ("w", [("id", "BIGINT"), ("v", "VARCHAR"), ("w", "BIGINT")])

    kept = dg.materialize([wide], resources=io)
    with view(lake) as v:
        assert v.table("analytics.wide") == [(1, "a", None), (2, "b", None), (3, "c", 30), (4, None, 40)]
        assert v.columns("analytics", "wide") == [("id", "int64", s1, None), ("v", "varchar", s1, None), ("w", "int64", s2, None)]
    assert "srdp/added_columns" not in materialization(kept, "analytics__wide")

    dropped = dg.materialize([narrow], resources=io)
    with view(lake) as v:
        s4 = v.snapshot_of_run(dropped.run_id)["snapshot_id"]
        assert v.columns("analytics", "wide") == [("id", "int64", s1, None), ("v", "varchar", s1, s4), ("w", "int64", s2, None)]
        assert v.table("analytics.wide") == [(5, 50)]
        assert v.table_id("analytics", "wide") == table_id
    assert column_schema(materialization(dropped, "analytics__wide")) == [("id", "BIGINT"), ("w", "BIGINT")]


def test_a_lossless_type_change_promotes_the_column_and_any_other_is_refused(lake: Path) -> None:
    @dg.asset(key_prefix=["analytics"])
    def measures() -> pa.Table:
        return pa.table({"id": pa.array([1], pa.int32()), "x": pa.array([1.5], pa.float32()), "n": pa.array([7], pa.int64())})

    @dg.asset(key=["analytics", "measures"])
    def promoted() -> pa.Table:  # id INTEGER -> BIGINT, x FLOAT -> DOUBLE; n stays BIGINT (the output's INTEGER fits)
        return pa.table({"id": pa.array([2**40], pa.int64()), "x": pa.array([0.1], pa.float64()), "n": pa.array([8], pa.int32())})

    @dg.asset(key=["analytics", "measures"])
    def retyped() -> pa.Table:
        return pa.table({"id": pa.array([3], pa.int64()), "x": pa.array([1.0], pa.float64()), "n": ["eight"]})

    io = {"io_manager": io_manager(lake)}
    first = dg.materialize([measures], resources=io)
    second = dg.materialize([promoted], resources=io)
    with view(lake) as v:
        s1, s2 = (v.snapshot_of_run(r.run_id)["snapshot_id"] for r in (first, second))
        assert v.columns("analytics", "measures") == [
            ("id", "int32", s1, s2),
            ("id", "int64", s2, None),
            ("x", "float32", s1, s2),
            ("x", "float64", s2, None),
            ("n", "int64", s1, None),
        ]
        assert v.table("analytics.measures") == [(2**40, 0.1, 8)]
        assert v.rows("SELECT typeof(id), typeof(x), typeof(n) FROM lake.analytics.measures") == [("BIGINT", "DOUBLE", "BIGINT")]
        before = v.latest_snapshot()
    assert column_schema(materialization(second, "analytics__measures")) == [("id", "BIGINT"), ("x", "DOUBLE"), ("n", "BIGINT")]
    with pytest.raises(IOManagerError) as error:
        dg.materialize([retyped], resources=io)
    assert str(error.value) == (
        "lake.analytics.measures: column 'n' is BIGINT and the output has VARCHAR; DuckLake changes a type only "
        "by a lossless promotion (BIGINT -> none). Cast the column, or write the new type to a new column"
    )
    with view(lake) as v:
        assert (v.table("analytics.measures"), v.latest_snapshot()) == ([(2**40, 0.1, 8)], before)


def test_an_output_column_without_values_takes_the_table_type(lake: Path) -> None:
    # DuckDB types a pandas object column with no value (all None, or a frame filtered to
    # empty) as INTEGER; it holds nothing to convert, so the VARCHAR column stays and takes NULLs.
    frame = pd.DataFrame({"id": [1, 2], "v": ["a", "b"]})
    outputs = iter([frame, pd.DataFrame({"id": [3, 4], "v": [None, None]}), frame[frame["id"] > 5]])

    @dg.asset(key_prefix=["analytics"])
    def names() -> pd.DataFrame:
        return next(outputs)

    io = {"io_manager": io_manager(lake)}
    first = dg.materialize([names], resources=io)
    nulls = dg.materialize([names], resources=io)
    with view(lake) as v:
        s1 = v.snapshot_of_run(first.run_id)["snapshot_id"]
        assert v.table("analytics.names") == [(3, None), (4, None)]
        assert v.columns("analytics", "names") == [("id", "int64", s1, None), ("v", "varchar", s1, None)]
        assert v.snapshot_of_run(nulls.run_id)["snapshot_id"] == s1 + 1
    empty = dg.materialize([names], resources=io)
    with view(lake) as v:
        assert v.table("analytics.names") == []
        assert v.columns("analytics", "names") == [("id", "int64", s1, None), ("v", "varchar", s1, None)]
    meta = materialization(empty, "analytics__names")
    assert (meta["dagster/row_count"], meta["srdp/note"]) == (0, "replaced whole table with 0 rows (the output was empty)")
    assert column_schema(meta) == [("id", "BIGINT"), ("v", "VARCHAR")]
