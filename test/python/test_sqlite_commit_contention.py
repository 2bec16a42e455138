"""Why a maintenance step loses its commit beside busy writers on a SQLite catalog (DuckLake 1.0).

Each test pins one fact that srdp's write lock (src/maintenance/write_lock.rs) is built on, with
DuckDB connections of one process (each DuckDB transaction has its own SQLite connection):

* a DuckLake transaction that read the catalog before another connection committed loses its
  own commit at once with ``database is locked`` (its WAL read snapshot is stale), and DuckLake
  does not retry it (its commit loop retries conflicts only);
* a DuckLake commit meets another connection's write lock with the same immediate error, never
  waiting out the catalog's busy timeout (srdp attaches SQLite catalogs with
  ``META_BUSY_TIMEOUT 5000``): SQLite calls its busy handler only for a connection with no
  transaction open, and a DuckLake transaction always reads its snapshot first;
* the lock srdp takes (an empty write through ``sqlite_query`` in an open transaction) holds
  off every other commit until it is released, and then they succeed.

If a DuckLake upgrade changes one of these, the test says which, and the write lock's reasoning
must be looked at again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import srdp
from conftest import write_config

BUSY_TIMEOUT_S = 5.0
LOCK_ALIAS = "__test_write_lock"
TAKE = (f"SELECT count(*) FROM sqlite_query('{LOCK_ALIAS}', "
        "'UPDATE ducklake_metadata SET key = key WHERE 0 RETURNING key')")


@pytest.fixture
def lake(tmp_path: Path):
    cfg = write_config(tmp_path, """
        [catalogs.lake]
        metadata = "sqlite:catalog/lake.sqlite"
        data_path = "data/"
    """)
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    con.execute("CREATE TABLE lake.main.t (i INTEGER)")
    con.execute("INSERT INTO lake.main.t VALUES (1)")
    yield con, tmp_path / "catalog" / "lake.sqlite"
    con.close()


def timed_commit(cur) -> tuple[str, float]:
    start = time.monotonic()
    try:
        cur.execute("COMMIT")
        return "ok", time.monotonic() - start
    except Exception as e:  # noqa: BLE001 - the error text is the fact under test
        return str(e), time.monotonic() - start  # a failed COMMIT ends the transaction


def test_a_transaction_that_read_before_another_commit_loses_its_commit_at_once(lake) -> None:
    con, _ = lake
    a, b = con.cursor(), con.cursor()
    a.execute("BEGIN")
    assert a.execute("SELECT count(*) FROM lake.main.t").fetchone() == (1,)
    b.execute("INSERT INTO lake.main.t VALUES (2)")  # autocommit: lands after a's read
    a.execute("INSERT INTO lake.main.t VALUES (3)")
    outcome, seconds = timed_commit(a)
    assert "Failed to flush changes into DuckLake: database is locked" in outcome
    assert seconds < BUSY_TIMEOUT_S / 2, f"the commit waited {seconds:.2f} s"
    assert con.execute("SELECT list(i ORDER BY i) FROM lake.main.t").fetchone() == ([1, 2],)


def test_a_commit_meets_a_held_write_lock_at_once_and_succeeds_after_its_release(lake) -> None:
    con, file = lake
    holder, writer = con.cursor(), con.cursor()
    holder.execute(f"ATTACH '{file}' AS {LOCK_ALIAS} (TYPE sqlite, BUSY_TIMEOUT 0)")
    holder.execute("BEGIN")
    assert holder.execute(TAKE).fetchone() == (0,)  # the empty write: nothing changes
    writer.execute("BEGIN")
    writer.execute("INSERT INTO lake.main.t VALUES (2)")
    outcome, seconds = timed_commit(writer)
    assert "database is locked" in outcome
    assert seconds < BUSY_TIMEOUT_S / 2, f"the commit waited {seconds:.2f} s (busy timeout {BUSY_TIMEOUT_S} s)"
    holder.execute("ROLLBACK")
    holder.execute(f"DETACH {LOCK_ALIAS}")
    writer.execute("INSERT INTO lake.main.t VALUES (2)")
    assert con.execute("SELECT list(i ORDER BY i) FROM lake.main.t").fetchone() == ([1, 2],)
    assert con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?",
                       [LOCK_ALIAS]).fetchone() == (0,)


def test_a_step_under_the_lock_commits_after_the_release_although_others_tried_meanwhile(lake) -> None:
    """The order srdp's step follows: take the lock, read and write, release, commit."""
    con, file = lake
    holder, step, other = con.cursor(), con.cursor(), con.cursor()
    holder.execute(f"ATTACH '{file}' AS {LOCK_ALIAS} (TYPE sqlite, BUSY_TIMEOUT 0)")
    holder.execute("BEGIN")
    holder.execute(TAKE).fetchall()
    step.execute("BEGIN")
    assert step.execute("SELECT count(*) FROM lake.main.t").fetchone() == (1,)
    step.execute("INSERT INTO lake.main.t VALUES (10)")
    with pytest.raises(Exception, match="database is locked"):
        other.execute("INSERT INTO lake.main.t VALUES (20)")  # refused: the lock is held
    holder.execute("ROLLBACK")
    assert timed_commit(step)[0] == "ok"
    assert con.execute("SELECT list(i ORDER BY i) FROM lake.main.t").fetchone() == ([1, 10],)
