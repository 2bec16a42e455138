"""An IO-manager write that meets DuckLake 1.0's stale inlined-data table (duckdb/ducklake#1305).

The session's DuckDB instance cached t's inlined-data tables; another process flushed them, so
the next read of t fails with ``ducklake_inlined_data_1_1 does not exist`` until the catalog is
re-attached. The write rolled back, so after srdp's re-attach it is safe to run again: the write
must then succeed, exactly once (seen in make test: two promotions of one landed table at once,
where one promotion's flush made the other's session stale).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa

from conftest import run_python
from iomanager_support import io_manager, sqlite_lake  # noqa: F401  (fixture)
from srdp.dagster.lake import LakeSession

B = """
import srdp
con = srdp.connect(config={cfg!r})
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
con.execute("ALTER TABLE lake.analytics.t ADD COLUMN c VARCHAR")
con.execute("INSERT INTO lake.analytics.t SELECT range + 100, 'x' FROM range(3)")
print("altered", flush=True)
"""

FLUSH = """
import srdp
con = srdp.connect(config={cfg!r})
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
print(sum(r[3] for r in con.execute("SELECT * FROM srdp_flush('lake')").fetchall()))
"""


def test_a_write_that_meets_a_stale_inlined_table_reattaches_and_is_written_once(sqlite_lake: Path) -> None:  # noqa: F811
    cfg = str(sqlite_lake)
    a = LakeSession.get(cfg, "lake").con
    a.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    a.execute("CREATE SCHEMA IF NOT EXISTS lake.analytics")
    a.execute("CREATE TABLE lake.analytics.t (id BIGINT)")
    a.execute("INSERT INTO lake.analytics.t SELECT range FROM range(5)")
    assert a.execute("SELECT count(*) FROM lake.analytics.t").fetchall() == [(5,)]
    run_python(B.format(cfg=cfg))
    # A reads t after B's ALTER + INSERT and before B's flush: it caches both inlined tables.
    assert a.execute("SELECT count(*), count(c) FROM lake.analytics.t").fetchall() == [(8, 3)]
    assert run_python(FLUSH.format(cfg=cfg)).strip() == "8"

    @dg.asset(key_prefix=["analytics"], metadata={"write_mode": "append"})
    def t() -> pa.Table:
        return pa.table({"id": [7], "c": ["y"]})

    result = dg.materialize([t], resources={"io_manager": io_manager(sqlite_lake)})
    assert result.success
    check = run_python(f"""
import srdp
con = srdp.connect(config={cfg!r})
con.execute("SELECT * FROM srdp_attach_catalog('lake')")
print(con.execute("SELECT count(*), sum(id), count(c) FROM lake.analytics.t").fetchall())
""")
    assert check.strip() == str([(9, 10 + 303 + 7, 4)])
