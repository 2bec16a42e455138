"""The DuckLake facts behind srdp's dbt macros and the dbt adapter suite's strict xfails, checked
on plain DuckDB 1.5.5 + DuckLake (no srdp loaded, no dbt).

* What DuckLake refuses (dbt_adapter/ducklake_limits.py): each statement fails with exactly the
  text the suite's xfail reasons quote.
* What srdp's macros and docs/dbt.md rely on: NOT NULL is enforced; a MERGE with one UPDATE
  action, DO NOTHING and several INSERT actions runs; comments on tables, their columns and views persist and read back
  through ``duckdb_tables()``/``duckdb_columns()``/``duckdb_views()`` (dbt's catalog query), also
  when set in the transaction that renamed the relation into place; a seed's full refresh drops the
  views built on it and re-creates the table in one transaction, one snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import srdp
from dbt_adapter.ducklake_limits import LIMITS, SETUP


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckLake on SQLite, attached by hand as ``lake`` and used; srdp is not loaded."""
    con = duckdb.connect(config=dict(srdp.duckdb_config()))
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp_path}/catalog.sqlite' AS lake (DATA_PATH '{tmp_path}/data/')")
    con.execute("USE lake")
    for sql in SETUP:
        con.execute(sql)
    yield con
    con.close()


def test_the_lake_is_plain_ducklake_without_srdp(lake: duckdb.DuckDBPyConnection) -> None:
    assert lake.execute("SELECT version()").fetchone() == ("v1.5.5",)
    loaded = {r[0] for r in lake.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert "ducklake" in loaded and "srdp" not in loaded
    assert lake.execute("SELECT type FROM duckdb_databases() WHERE database_name = 'lake'").fetchone() == ("ducklake",)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_ducklake_refuses_it_with_the_quoted_error(lake: duckdb.DuckDBPyConnection, name: str) -> None:
    limit = LIMITS[name]
    with pytest.raises(duckdb.Error) as refused:
        lake.execute(limit.sql)
    assert f"{type(refused.value).__name__}: {refused.value}" == limit.error


def test_not_null_is_enforced(lake: duckdb.DuckDBPyConnection) -> None:
    """A dbt contract's not_null constraint works on a lake (the other constraint types do not)."""
    lake.execute("CREATE TABLE nn (id INTEGER NOT NULL)")
    with pytest.raises(duckdb.ConstraintException, match="^Constraint Error: NOT NULL constraint failed: nn.id$"):
        lake.execute("INSERT INTO nn VALUES (NULL)")


def test_merge_with_one_update_and_several_inserts_is_accepted(lake: duckdb.DuckDBPyConnection) -> None:
    lake.execute(
        "MERGE INTO t USING (SELECT * FROM (VALUES (1, 'z'), (3, 'c'), (9, 'i')) s(id, name)) s ON t.id = s.id "
        "WHEN MATCHED AND s.id > 5 THEN DO NOTHING WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED AND s.id > 5 THEN INSERT VALUES (s.id, 'big') WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)"
    )
    assert lake.execute("SELECT * FROM t ORDER BY id").fetchall() == [(1, "z"), (2, "b"), (3, "c"), (9, "big")]


def test_comments_on_tables_their_columns_and_views_read_back(lake: duckdb.DuckDBPyConnection) -> None:
    lake.execute("BEGIN")
    lake.execute("CREATE TABLE t__dbt_tmp AS SELECT 1 AS id, 'x' AS name")
    lake.execute("DROP TABLE t")
    lake.execute("ALTER TABLE t__dbt_tmp RENAME TO t")
    lake.execute("COMMENT ON TABLE t IS $c$it's a table$c$")
    lake.execute("COMMENT ON COLUMN t.id IS 'the id'")
    lake.execute("COMMENT ON VIEW v IS 'a view'")
    lake.execute("COMMIT")
    assert lake.execute("SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' AND table_name = 't'").fetchall() == [
        ("it's a table",)
    ]
    assert lake.execute(
        "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = 'lake' AND table_name = 't' ORDER BY column_index"
    ).fetchall() == [("id", "the id"), ("name", None)]
    assert lake.execute("SELECT comment FROM duckdb_views() WHERE database_name = 'lake' AND view_name = 'v'").fetchall() == [
        ("a view",)
    ]


def test_dropping_the_views_and_recreating_the_table_is_one_snapshot(lake: duckdb.DuckDBPyConnection) -> None:
    lake.execute("CREATE VIEW w AS SELECT * FROM v")
    before = lake.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    lake.execute("BEGIN")
    lake.execute("DROP VIEW w")
    lake.execute("DROP VIEW v")
    lake.execute("DROP TABLE t")
    lake.execute("CREATE TABLE t (id INTEGER, name VARCHAR)")
    lake.execute("INSERT INTO t VALUES (7, 'g')")
    lake.execute("COMMIT")
    assert lake.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0] == before + 1
    assert lake.execute("SELECT view_name FROM duckdb_views() WHERE database_name = 'lake'").fetchall() == []
    assert lake.execute("SELECT * FROM t").fetchall() == [(7, "g")]
