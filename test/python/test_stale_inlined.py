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
import json

import duckdb
import pytest

from conftest import run_python, write_config
from lakecheck import Lake

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
"""

# Process B: a second DuckDB instance on the same SQLite catalog.
B = """
import json, os, srdp
con = srdp.connect(config={cfg!r})
for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
    con.execute(s)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
for statement in {statements!r}:
    print(con.sql(statement).fetchall() if statement.startswith(("SELECT", "CALL")) else con.execute(statement))
"""

STALE_TABLE = "ducklake_inlined_data_1_1 does not exist"
# id 0..4 from A, 100..102 (with c = 'x') from B.
TOTALS = (8, 10 + 100 + 101 + 102, 3)
TOTALS_SQL = "SELECT count(*), sum(id), count(c) FROM lake.main.t"


def in_b(cfg, *statements: str, env=None) -> str:
    return run_python(B.format(cfg=str(cfg), statements=list(statements)), env=env, timeout=60)


def make_stale(connect, tmp_path, b_flush: str, lake=None):
    """Returns A's connection, with t's inlined-data table list cached from before B's flush.

    On the SQLite catalog of CONFIG, or on ``lake`` (a pg_lake.PgLake) when given.
    """
    env = {"SRDP_TEST_SETUP": json.dumps(lake.setup_sql())} if lake else None
    cfg = lake.cfg if lake else write_config(tmp_path, CONFIG)
    a = lake.connect(connect) if lake else connect(config=cfg)
    assert a.sql("SELECT status FROM srdp_attach_catalog('lake', role := 'writer')").fetchall() == [("attached",)]
    a.execute("CREATE TABLE lake.main.t (id BIGINT)")
    a.execute("INSERT INTO lake.main.t SELECT range FROM range(5)")
    assert a.execute("SELECT count(*) FROM lake.main.t").fetchall() == [(5,)]
    in_b(
        cfg,
        "ALTER TABLE lake.main.t ADD COLUMN c VARCHAR",
        "INSERT INTO lake.main.t SELECT range + 100, 'x' FROM range(3)",
        env=env,
    )
    # A reads t after B's ALTER + INSERT and before B's flush: it now caches both inlined tables.
    # (execute, not sql: the relational API binds its first query against the pre-ALTER schema.)
    # fetchall: the result is consumed, so A's transaction ends (on PostgreSQL an open one would
    # hold a lock on the inlined table and block B's flush).
    assert a.execute(TOTALS_SQL).fetchall() == [TOTALS]
    rows = ast.literal_eval(in_b(cfg, b_flush, env=env).strip())
    # B flushed all 8 inlined rows (5 of schema version 1, 3 of version 2); plain DuckLake returns
    # (schema, table, rows), srdp_flush (catalog, schema, table, rows_flushed, ...).
    assert sum(r[2] if len(r) == 3 else r[3] for r in rows) == 8, rows
    return cfg, a


def assert_stale_error(error: str, function: str, stale: str = STALE_TABLE) -> None:
    assert error.startswith(f"Invalid Input Error: {function}: catalog 'lake' read a stale inlined-data table"), error
    assert "duckdb/ducklake#1305" in error
    assert "while trying to flush dataset 'main.t'" in error
    assert stale in error
    assert error.rstrip().endswith("srdp re-attached 'lake' from the definition; run the call again"), error


@pytest.mark.parametrize(
    "b_flush",
    ["CALL ducklake_flush_inlined_data('lake')", "SELECT * FROM srdp_flush('lake')"],
    ids=["b_plain_flush", "b_srdp_flush"],
)
def test_srdp_flush_reports_the_stale_table_and_the_next_call_works(connect, tmp_path, b_flush):
    _, a = make_stale(connect, tmp_path, b_flush)
    # Counted from the metadata: B's flush left no inlined row, only the new version's table.
    registry = a.execute("SELECT * FROM __ducklake_metadata_lake.main.ducklake_inlined_data_tables").fetchall()
    assert registry == [(1, "ducklake_inlined_data_1_2", 2)]
    assert Lake(a).inlined_rows() == {("main", "t"): 0}
    # srdp_inlined_row_count reads the metadata tables itself, so it neither fails nor heals.
    assert a.sql(
        "SELECT schema_name, table_name, inlined_rows FROM srdp_inlined_row_count('lake')"
    ).fetchall() == [("main", "t", 0)]
    with pytest.raises(duckdb.Error) as failed:
        a.sql("SELECT * FROM srdp_flush('lake')").fetchall()
    assert_stale_error(str(failed.value), "srdp_flush")
    # The next call works: nothing is left to flush (B flushed everything), so srdp calls nothing.
    assert a.sql(
        "SELECT catalog, schema_name, table_name, rows_flushed, attempts, status FROM srdp_flush('lake')"
    ).fetchall() == [("lake", "main", "t", 0, 0, "nothing to do")]
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
    # No flush (nothing inlined), one merge call: B's flush wrote one file per schema version,
    # which srdp's plan cannot prove DuckLake would keep apart (it groups by partition only).
    assert rows == [("lake", "main", "t", 0, 1, "nothing to do")]
    assert a.execute(TOTALS_SQL).fetchone() == TOTALS
    # B (another fresh instance) agrees on the data.
    assert in_b(cfg, TOTALS_SQL).strip() == str([TOTALS])


def test_stale_table_on_postgres_invalidates_the_database_and_srdp_says_to_reopen(servers, connect, tmp_path):
    """The same defect on a PostgreSQL catalog is worse: DuckLake 1.0 hits a DuckDB internal error
    ("Attempted to access index 0 within vector of size 0"), which invalidates A's whole DuckDB
    database. srdp cannot re-attach in that database; it says so and what to do, and a new
    database (here: another process) compacts and reads everything.
    """
    from pg_lake import new_lake

    lake = new_lake(servers, tmp_path)
    cfg, a = make_stale(connect, tmp_path, "SELECT * FROM srdp_flush('lake')", lake=lake)
    with pytest.raises(duckdb.Error) as failed:
        a.sql("SELECT * FROM srdp_compact('lake')").fetchall()
    error = str(failed.value)
    assert error.startswith("Invalid Input Error: srdp_compact: catalog 'lake' read a stale inlined-data table"), error
    if "INTERNAL Error: Attempted to access index 0 within vector of size 0" in error:
        # Usually: the internal error invalidated A's database, and srdp says so.
        assert "DuckDB invalidated this database after that error, so srdp could not re-attach 'lake': close every " \
            "connection of this process (or restart it) and run the call again in a new database" in error
        with pytest.raises(duckdb.Error, match="database has been invalidated"):
            a.execute("SELECT 1").fetchall()
    else:
        # Sometimes DuckDB reports only the aborted transaction; then A's database survives and
        # srdp's re-attach heals it.
        assert "Current transaction is aborted" in error, error
        assert error.rstrip().endswith("srdp re-attached 'lake' from the definition; run the call again"), error
        assert a.sql("SELECT rows_flushed, status FROM srdp_compact('lake')").fetchall() == [(0, "nothing to do")]
    env = {"SRDP_TEST_SETUP": json.dumps(lake.setup_sql())}
    out = in_b(cfg, "SELECT rows_flushed, status FROM srdp_compact('lake')", TOTALS_SQL, env=env).splitlines()
    assert out == ["[(0, 'nothing to do')]", str([TOTALS])]
