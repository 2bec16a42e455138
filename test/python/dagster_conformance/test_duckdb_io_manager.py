# Ported from dagster-duckdb 0.29.27 (the sdist on PyPI), dagster_duckdb_tests/test_io_manager.py.
# Copyright Dagster Labs, Inc.; licensed under the Apache License, Version 2.0.
# The original tests pin the SQL text DuckDbClient builds for a TableSlice (the SELECT of an
# input, the DELETE of an output's slice). srdp builds other SQL (quoted names, one transaction),
# so each test keeps the behaviour that SQL stands for and checks it on a real lake through
# SrdpIOManager: the rows and columns an input of that slice reads back, and the rows a write of
# that slice replaces while every other row stays. Construction: srdp_construction.py; slices:
# build_output_context / build_input_context with the slice's partitions.
from datetime import datetime

from srdp_construction import _close_io_sessions_after_test, srdp_connect, srdp_io_manager  # noqa: F401
import pandas as pd
from dagster import AssetKey, build_input_context, build_output_context
from dagster._core.definitions.partitions.definition import (
    DailyPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
)
from dagster._core.definitions.partitions.partition_key_range import PartitionKeyRange
from dagster._core.definitions.partitions.utils import MultiPartitionKey
from dagster._core.types.dagster_type import resolve_dagster_type

KEY = AssetKey(["schema1", "table1"])
DAILY = DailyPartitionsDefinition(start_date="2020-01-01", end_date="2020-03-01")
FRUITS = StaticPartitionsDefinition(["apple", "banana", "cherry", "it's a test"])


def _contexts(metadata, partitions_def=None, partition_key=None, key_range=None, columns=None):
    out = build_output_context(
        asset_key=KEY,
        definition_metadata=metadata,
        asset_partitions_def=partitions_def,
        partition_key=partition_key,
        asset_partition_key_range=key_range,
    )
    into = build_input_context(
        asset_key=KEY,
        upstream_output=out,
        definition_metadata={"columns": columns} if columns else None,
        dagster_type=resolve_dagster_type(pd.DataFrame),
        asset_partitions_def=partitions_def,
        partition_key=partition_key,
        asset_partition_key_range=key_range,
    )
    return out, into


def _table(tmp_path):
    con = srdp_connect(tmp_path)
    rows = con.execute("SELECT * FROM schema1.table1 ORDER BY ALL").fetch_df()
    con.close()
    return rows


def _frame(**columns):
    return pd.DataFrame(columns)


def _days(*days):
    return [pd.Timestamp(d) for d in days]


def _seed(tmp_path, frame):
    """The table as the slices below find it: ``frame``, written whole."""
    manager = srdp_io_manager(tmp_path)
    out, _ = _contexts({"write_mode": "replace"})
    manager.handle_output(out, frame)
    return manager


def test_get_select_statement(tmp_path):
    frame = _frame(apple=[1, 2], banana=[3, 4], cherry=[5, 6])
    manager = _seed(tmp_path, frame)
    _, into = _contexts({})
    # SELECT * FROM schema1.table1
    assert manager.load_input(into).sort_values("apple").reset_index(drop=True).equals(frame)


def test_get_select_statement_columns(tmp_path):
    manager = _seed(tmp_path, _frame(apple=[1, 2], banana=[3, 4], cherry=[5, 6]))
    _, into = _contexts({}, columns=["apple", "banana"])
    # SELECT apple, banana FROM schema1.table1
    loaded = manager.load_input(into).sort_values("apple").reset_index(drop=True)
    assert loaded.equals(_frame(apple=[1, 2], banana=[3, 4]))


def _time_window_table(tmp_path):
    # Rows on both sides of the window [2020-01-02, 2020-02-03) and on its edges.
    return _seed(
        tmp_path,
        _frame(
            my_timestamp_col=_days("2020-01-01", "2020-01-02", "2020-02-02", "2020-02-03"),
            apple=[1, 2, 3, 4],
            banana=[5, 6, 7, 8],
            cherry=[9, 10, 11, 12],
        ),
    )


# TimeWindow(datetime(2020, 1, 2), datetime(2020, 2, 3)): the daily partitions 2020-01-02 to 2020-02-02.
WINDOW = PartitionKeyRange("2020-01-02", "2020-02-02")
assert (datetime(2020, 1, 2), datetime(2020, 2, 3)) == (
    DAILY.time_window_for_partition_key(WINDOW.start).start.replace(tzinfo=None),
    DAILY.time_window_for_partition_key(WINDOW.end).end.replace(tzinfo=None),
)


def test_get_select_statement_partitioned(tmp_path):
    manager = _time_window_table(tmp_path)
    _, into = _contexts({"partition_expr": "my_timestamp_col"}, DAILY, key_range=WINDOW, columns=["apple", "banana"])
    # SELECT apple, banana FROM schema1.table1 WHERE my_timestamp_col >= '2020-01-02 00:00:00'
    # AND my_timestamp_col < '2020-02-03 00:00:00'
    loaded = manager.load_input(into).sort_values("apple").reset_index(drop=True)
    assert loaded.equals(_frame(apple=[2, 3], banana=[6, 7]))


def _static_table(tmp_path, column):
    return _seed(
        tmp_path,
        _frame(**{column: ["apple", "banana", "cherry", "it's a test"]}, apple=[1, 2, 3, 4], banana=[5, 6, 7, 8]),
    )


def test_get_select_statement_static_partitioned(tmp_path):
    manager = _static_table(tmp_path, "my_fruit_col")
    _, into = _contexts({"partition_expr": "my_fruit_col"}, FRUITS, partition_key="apple", columns=["apple", "banana"])
    # SELECT apple, banana FROM schema1.table1 WHERE my_fruit_col in ('apple')
    assert manager.load_input(into).equals(_frame(apple=[1], banana=[5]))


def test_get_select_statement_multiple_static_partitions(tmp_path):
    manager = _static_table(tmp_path, "fruit_col")
    _, into = _contexts(
        {"partition_expr": "fruit_col"},
        FRUITS,
        key_range=PartitionKeyRange("apple", "banana"),
        columns=["fruit_col", "apple"],
    )
    # SELECT fruit_col, other_col FROM schema1.table1 WHERE fruit_col in ('apple', 'banana')
    loaded = manager.load_input(into).sort_values("apple").reset_index(drop=True)
    assert loaded.equals(_frame(fruit_col=["apple", "banana"], apple=[1, 2]))


MULTI = MultiPartitionsDefinition({"fruit": FRUITS, "time": DAILY})
MULTI_METADATA = {"partition_expr": {"fruit": "my_fruit_col", "time": "my_timestamp_col"}}


def _multi_table(tmp_path):
    # One row for each of apple|2020-01-02 (the slice), apple|2020-01-03, banana|2020-01-02.
    return _seed(
        tmp_path,
        _frame(
            my_fruit_col=["apple", "apple", "banana"],
            my_timestamp_col=_days("2020-01-02", "2020-01-03", "2020-01-02"),
            apple=[1, 2, 3],
        ),
    )


def test_get_select_statement_multi_partitioned(tmp_path):
    manager = _multi_table(tmp_path)
    key = MultiPartitionKey({"fruit": "apple", "time": "2020-01-02"})
    _, into = _contexts(MULTI_METADATA, MULTI, partition_key=key)
    # SELECT * FROM schema1.table1 WHERE my_fruit_col in ('apple') AND my_timestamp_col >= ...
    # (a daily window here: a multi-partition key holds one day)
    assert manager.load_input(into).equals(
        _frame(my_fruit_col=["apple"], my_timestamp_col=_days("2020-01-02"), apple=[1])
    )


def test_get_cleanup_statement(tmp_path):
    manager = _seed(tmp_path, _frame(apple=[1, 2], banana=[3, 4]))
    out, _ = _contexts({"write_mode": "replace"})
    manager.handle_output(out, _frame(apple=[7], banana=[8]))
    # DELETE FROM schema1.table1, then the insert: only the new rows remain.
    assert _table(tmp_path).equals(_frame(apple=[7], banana=[8]))


def test_get_cleanup_statement_partitioned(tmp_path):
    _time_window_table(tmp_path)
    manager = srdp_io_manager(tmp_path)
    out, _ = _contexts({"partition_expr": "my_timestamp_col"}, DAILY, key_range=WINDOW)
    manager.handle_output(
        out, _frame(my_timestamp_col=_days("2020-01-10"), apple=[20], banana=[21], cherry=[22])
    )
    # DELETE FROM schema1.table1 WHERE my_timestamp_col >= '2020-01-02 00:00:00' AND
    # my_timestamp_col < '2020-02-03 00:00:00': the rows of the window go, the others stay.
    assert _table(tmp_path).equals(
        _frame(
            my_timestamp_col=_days("2020-01-01", "2020-01-10", "2020-02-03"),
            apple=[1, 20, 4],
            banana=[5, 21, 8],
            cherry=[9, 22, 12],
        )
    )


def test_get_cleanup_statement_static_partitioned(tmp_path):
    manager = _static_table(tmp_path, "my_fruit_col")
    out, _ = _contexts({"partition_expr": "my_fruit_col"}, FRUITS, partition_key="apple")
    manager.handle_output(out, _frame(my_fruit_col=["apple"], apple=[0], banana=[0]))
    # DELETE FROM schema1.table1 WHERE my_fruit_col in ('apple')
    assert _table(tmp_path).equals(
        _frame(my_fruit_col=["apple", "banana", "cherry", "it's a test"], apple=[0, 2, 3, 4], banana=[0, 6, 7, 8])
    )


def test_get_cleanup_statement_multi_partitioned(tmp_path):
    manager = _multi_table(tmp_path)
    key = MultiPartitionKey({"fruit": "apple", "time": "2020-01-02"})
    out, _ = _contexts(MULTI_METADATA, MULTI, partition_key=key)
    manager.handle_output(out, _frame(my_fruit_col=["apple"], my_timestamp_col=_days("2020-01-02"), apple=[9]))
    # DELETE FROM schema1.table1 WHERE my_fruit_col in ('apple') AND my_timestamp_col >= ... < ...
    assert _table(tmp_path).equals(
        _frame(
            my_fruit_col=["apple", "apple", "banana"],
            my_timestamp_col=_days("2020-01-02", "2020-01-03", "2020-01-02"),
            apple=[9, 2, 3],
        )
    )


def test_get_select_statement_escapes(tmp_path):
    manager = _static_table(tmp_path, "my_col")
    _, into = _contexts({"partition_expr": "my_col"}, FRUITS, partition_key="it's a test")
    # SELECT * FROM schema1.table1 WHERE my_col in ('it''s a test')
    assert manager.load_input(into).equals(_frame(my_col=["it's a test"], apple=[4], banana=[8]))


def test_get_cleanup_statement_escapes(tmp_path):
    manager = _static_table(tmp_path, "my_col")
    out, _ = _contexts({"partition_expr": "my_col"}, FRUITS, partition_key="it's a test")
    manager.handle_output(out, _frame(my_col=["it's a test"], apple=[40], banana=[80]))
    # DELETE FROM schema1.table1 WHERE my_col in ('it''s a test')
    assert _table(tmp_path).equals(
        _frame(my_col=["apple", "banana", "cherry", "it's a test"], apple=[1, 2, 3, 40], banana=[5, 6, 7, 80])
    )
