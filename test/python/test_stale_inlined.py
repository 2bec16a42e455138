"""DuckLake 1.0's stale inlined-data table (duckdb/ducklake#1305) across two DuckDB instances.

Process A (this test process, srdp loaded) reads table ``t`` after process B added a column and
inserted rows (so A caches the list of t's inlined-data tables) and before B flushes them; B's
flush drops the inlined table of the old schema version. From then on every read of ``t`` in A
fails with ``ducklake_inlined_data_1_1 does not exist`` until the catalog is re-attached. srdp's
maintenance calls recognise that error, re-attach the catalog from its definition, and say so;
the call after that works, and so do plain queries.
"""

from __future__ import annotations

import ast

import duckdb
import pytest

from conftest import run_python, write_config

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
"""

# Process B: a second DuckDB instance on the same SQLite catalog.
B = """
import srdp
con = srdp.connect(config={cfg!r})
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
for statement in {statements!r}:
    print(con.sql(statement).fetchall() if statement.startswith(("SELECT", "CALL")) else con.execute(statement))
"""

STALE_TABLE = "ducklake_inlined_data_1_1 does not exist"
# id 0..4 from A, 100..102 (with c = 'x') from B.
TOTALS = (8, 10 + 100 + 101 + 102, 3)
TOTALS_SQL = "SELECT count(*), sum(id), count(c) FROM lake.main.t"


def in_b(cfg, *statements: str) -> str:
    return run_python(B.format(cfg=str(cfg), statements=list(statements)), timeout=60)


def make_stale(connect, tmp_path, b_flush: str):
    """Returns A's connection, with t's inlined-data table list cached from before B's flush."""
    cfg = write_config(tmp_path, CONFIG)
    a = connect(config=cfg)
    assert a.sql("SELECT status FROM srdp_attach_catalog('lake', role := 'writer')").fetchone() == ("attached",)
    a.execute("CREATE TABLE lake.main.t (id BIGINT)")
    a.execute("INSERT INTO lake.main.t SELECT range FROM range(5)")
    assert a.sql("SELECT count(*) FROM lake.main.t").fetchone() == (5,)
    in_b(cfg, "ALTER TABLE lake.main.t ADD COLUMN c VARCHAR", "INSERT INTO lake.main.t SELECT range + 100, 'x' FROM range(3)")
    # A reads t after B's ALTER + INSERT and before B's flush: it now caches both inlined tables.
    # (execute, not sql: the relational API binds its first query against the pre-ALTER schema.)
    assert a.execute(TOTALS_SQL).fetchone() == TOTALS
    rows = ast.literal_eval(in_b(cfg, b_flush).strip())
    # B flushed all 8 inlined rows (5 of schema version 1, 3 of version 2); plain DuckLake returns
    # (schema, table, rows), srdp_flush (catalog, schema, table, rows_flushed, ...).
    assert sum(r[2] if len(r) == 3 else r[3] for r in rows) == 8, rows
    return cfg, a


def assert_stale_error(error: str, function: str) -> None:
    assert error.startswith(f"Invalid Input Error: {function}: catalog 'lake' read a stale inlined-data table"), error
    assert "duckdb/ducklake#1305" in error
    assert "while trying to flush dataset 'main.t'" in error
    assert STALE_TABLE in error
    assert error.rstrip().endswith("srdp re-attached 'lake' from the definition; run the call again"), error


@pytest.mark.parametrize(
    "b_flush",
    ["CALL ducklake_flush_inlined_data('lake')", "SELECT * FROM srdp_flush('lake')"],
    ids=["b_plain_flush", "b_srdp_flush"],
)
def test_srdp_flush_reports_the_stale_table_and_the_next_call_works(connect, tmp_path, b_flush):
    _, a = make_stale(connect, tmp_path, b_flush)
    # srdp_inlined_row_count reads the metadata tables itself, so it neither fails nor heals.
    assert a.sql(
        "SELECT schema_name, table_name, inlined_rows FROM srdp_inlined_row_count('lake')"
    ).fetchall() == [("main", "t", 0)]
    with pytest.raises(duckdb.Error) as failed:
        a.sql("SELECT * FROM srdp_flush('lake')").fetchall()
    assert_stale_error(str(failed.value), "srdp_flush")
    # The next call works: nothing is left to flush (B flushed everything), one attempt.
    assert a.sql(
        "SELECT catalog, schema_name, table_name, rows_flushed, attempts, status FROM srdp_flush('lake')"
    ).fetchall() == [("lake", "main", "t", 0, 1, "nothing to do")]
    # Plain queries in A see all of t again, and srdp re-attached the same definition.
    assert a.execute(TOTALS_SQL).fetchone() == TOTALS
    assert a.sql("SELECT role, status FROM srdp_attach_catalog('lake', role := 'writer')").fetchone() == (
        "writer",
        "already attached",
    )
    # And A can still write: a new row lands next to B's.
    a.execute("INSERT INTO lake.main.t VALUES (7, 'a')")
    assert a.execute(TOTALS_SQL).fetchone() == (9, TOTALS[1] + 7, 4)


def test_plain_reads_stay_broken_until_srdp_compact_re_attaches(connect, tmp_path):
    cfg, a = make_stale(connect, tmp_path, "CALL ducklake_flush_inlined_data('lake')")
    # The stale state is real and persistent: plain reads fail, twice in a row.
    for _ in range(2):
        with pytest.raises(duckdb.Error) as failed:
            a.execute(TOTALS_SQL).fetchall()
        assert STALE_TABLE in str(failed.value)
    with pytest.raises(duckdb.Error) as failed:
        a.sql("SELECT * FROM srdp_compact('lake')").fetchall()
    assert_stale_error(str(failed.value), "srdp_compact")
    rows = a.sql(
        "SELECT catalog, schema_name, table_name, rows_flushed, attempts, status FROM srdp_compact('lake')"
    ).fetchall()
    assert rows == [("lake", "main", "t", 0, 1, "nothing to do")]
    assert a.execute(TOTALS_SQL).fetchone() == TOTALS
    # B (another fresh instance) agrees on the data.
    assert in_b(cfg, TOTALS_SQL).strip() == str([TOTALS])
