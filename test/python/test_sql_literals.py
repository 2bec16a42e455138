"""srdp.sql: the values srdp writes into its statements as literals, not bound parameters.

A statement with bound parameters makes DuckDB's Python client import pandas (0.3-0.5 s) in a
process that had not; srdp's calls and its partition_expr parse must not, so a step that reads a
pyarrow input imports no pandas. Every value must still reach DuckDB exactly as given: quotes,
backslashes, comments, NUL characters, a statement.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

import srdp
from conftest import run_python, write_config
from srdp.sql import call_sql, literal

TRICKY = ["", "o'brien", "''", "a\\b", "-- x", "/* y */", "é", "$$x$$", "a\nb", "'); DROP TABLE t; --", "\x00", "a\x00b"]

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.sales]
writer = "io_manager"
layer = "curated"
"""


def test_literals_are_exact() -> None:
    assert literal("o'brien") == "'o''brien'"
    assert literal("a\x00b") == "('a' || chr(0) || 'b')"
    assert literal("") == "''"
    assert literal(True) == "true" and literal(False) == "false"
    assert literal(42) == "42" and literal(-7) == "-7"
    assert literal(0.5) == "0.5"
    assert literal(None) == "NULL"


def test_a_value_with_no_literal_is_refused() -> None:
    with pytest.raises(TypeError, match=r"literal\(\) takes a string, bool, int, float or None, not bytes"):
        literal(b"x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"literal\(\) takes a finite float, not nan"):
        literal(math.nan)


@pytest.mark.parametrize("value", [*TRICKY, True, False, 0, -(2**62), 1.25])
def test_a_literal_reads_back_as_the_same_value(value: object) -> None:
    con = duckdb.connect()
    assert con.execute(f"SELECT {literal(value)}").fetchone() == (value,)  # type: ignore[arg-type]


def test_a_call_is_exact() -> None:
    assert call_sql("srdp_catalogs") == "SELECT * FROM srdp_catalogs()"
    assert (
        call_sql("srdp_attach_catalog", "lake", role="reader", refresh=None)
        == "SELECT * FROM srdp_attach_catalog('lake', role := 'reader')"
    )
    assert (
        call_sql("srdp_compact", "it's", schema_name="a\x00b", dry_run=True, max_files=3)
        == "SELECT * FROM srdp_compact('it''s', schema_name := ('a' || chr(0) || 'b'), dry_run := true, max_files := 3)"
    )


def test_a_call_takes_only_identifiers_for_its_function_and_names() -> None:
    with pytest.raises(ValueError, match=r"call_sql\(\): 'srdp_catalogs\(\); DROP TABLE t; --' is not an identifier"):
        call_sql("srdp_catalogs(); DROP TABLE t; --")
    with pytest.raises(ValueError, match=r"call_sql\(\): 'role := 1, x' is not an identifier"):
        call_sql("srdp_attach_catalog", "lake", **{"role := 1, x": "y"})


@pytest.mark.parametrize("name", [n for n in TRICKY if n and "\x00" not in n])
def test_every_argument_of_a_call_reaches_srdp_as_given(connect, tmp_path: Path, name: str) -> None:
    """srdp_table_name gives back what it was given: a value that broke out of its literal, or
    lost a character on the way, would come back otherwise (or not at all)."""
    con = connect(config=str(write_config(tmp_path, CONFIG)))
    rows = srdp.call(con, "srdp_table_name", "lake", name, "orders")
    assert rows == [{"catalog": "lake", "schema_name": name, "table_name": "orders", "qualified_name": f"lake.{name}.orders"}]


def test_a_nul_in_a_call_argument_reaches_srdp_and_is_refused_by_name(connect, tmp_path: Path) -> None:
    con = connect(config=str(write_config(tmp_path, CONFIG)))
    with pytest.raises(duckdb.Error, match=r"srdp_table_name: schema_name contains a NUL byte \(chr\(0\)\)"):
        srdp.call(con, "srdp_table_name", "lake", "a\x00b", "orders")


def test_srdp_calls_and_the_partition_expr_check_import_no_pandas(tmp_path: Path) -> None:
    """A process that attaches, calls srdp's functions and checks a partition_expr (what a step
    reading a pyarrow input does) has not imported pandas; one bound parameter would."""
    config = write_config(tmp_path, CONFIG)
    out = run_python(
        f"""
        import sys
        import srdp
        from srdp.lake.slices import check_partition_expr
        con = srdp.connect(config={str(config)!r})
        srdp.call(con, "srdp_attach_catalog", "lake", role="writer")
        srdp.call(con, "srdp_check_writer", "lake", "sales", "io_manager")
        check_partition_expr("sales/orders", "CAST(ts AS DATE)", con)
        before = "pandas" in sys.modules
        con.execute("SELECT ?", [1]).fetchall()
        print(before, "pandas" in sys.modules)
        """,
        cwd=tmp_path,
    )
    assert out.split() == ["False", "True"]  # the last line shows a bound parameter would import it


DAILY_ASSETS = """
import sys
import dagster as dg
import pyarrow as pa
from srdp.dagster import SrdpIOManager

daily = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-05")

@dg.asset(key_prefix=["sales"], partitions_def=daily, metadata={{"partition_expr": "day"}})
def orders(context: dg.AssetExecutionContext) -> pa.Table:
    day = pa.scalar(context.partition_time_window.start.date(), pa.date32())
    return pa.table({{"id": pa.array([1, 2, 3]), "day": pa.array([day.as_py()] * 3, pa.date32())}})

@dg.asset(key_prefix=["sales"], partitions_def=daily)
def report(orders: pa.Table) -> None:
    print("read", orders.num_rows, orders.column("day")[0])

io = {{"io_manager": SrdpIOManager(config={config!r})}}
instance = dg.DagsterInstance.get()
"""


def test_a_step_reading_a_pyarrow_partition_imports_no_pandas(tmp_path: Path) -> None:
    """The whole pinned read of a Dagster step (lookup, slice check, attach, read) in a process
    of its own: no pandas, which one bound parameter anywhere on the way would import."""
    config = write_config(tmp_path, CONFIG)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {"DAGSTER_HOME": str(home)}
    assets = DAILY_ASSETS.format(config=str(config))
    run_python(
        assets + 'assert dg.materialize([orders], resources=io, partition_key="2024-01-02", instance=instance).success\n',
        cwd=tmp_path, env=env,
    )
    out = run_python(
        assets
        + 'assert dg.materialize([orders, report], selection=[report], resources=io, partition_key="2024-01-02", instance=instance).success\n'
        + 'print("pandas" in sys.modules)\n',
        cwd=tmp_path, env=env,
    )
    assert "read 3 2024-01-02" in out
    assert out.split()[-1] == "False"
