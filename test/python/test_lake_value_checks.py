"""srdp.lake.session.value_checks_sql: the one scan a write of a replayable output makes when its
column types differ from the table's (whether each column has a value, and how many of its values
the table's type would change), exactly, and what it answers on real frames."""

import duckdb
import pandas as pd
import pyarrow as pa

from srdp.lake.session import value_checks_sql


def test_the_scan_checks_every_differing_column_at_once_and_casts_only_within_a_family() -> None:
    sql = value_checks_sql([("day", "DATE", "TIMESTAMP_S"), ('we"ird', "INTEGER", "VARCHAR")])
    assert sql == (
        'SELECT count("day") > 0, count(*) FILTER (WHERE "day" IS NOT NULL AND '
        'TRY_CAST(TRY_CAST("day" AS DATE) AS TIMESTAMP_S) IS DISTINCT FROM "day"), '
        'count("we""ird") > 0, 0 FROM __srdp_io_source'
    )


def test_the_answers_on_a_frame_with_dates_times_empty_and_wide_columns() -> None:
    frame = pd.DataFrame({
        "day": pd.to_datetime(["2024-01-01", "2024-01-02"]).astype("datetime64[s]"),  # midnight: lossless as DATE
        "at": pd.to_datetime(["2024-01-01 10:00", "2024-01-02 00:00"]).astype("datetime64[s]"),  # 10:00 is lost as DATE
        "empty": pd.Series([None, None], dtype=object),
        "big": pa.array([1, 2**40]).to_pandas(),  # 2**40 does not fit an INTEGER
    })
    con = duckdb.connect()
    con.register("__srdp_io_source", frame)
    columns = [("day", "DATE", "TIMESTAMP_S"), ("at", "DATE", "TIMESTAMP_S"), ("empty", "VARCHAR", "INTEGER"),
               ("big", "INTEGER", "BIGINT")]
    row = con.execute(value_checks_sql(columns)).fetchone()
    assert row == (True, 0, True, 1, False, 0, True, 1)
