"""srdp_compact's guard against DuckLake 1.0's lost-delete race.

DuckLake 1.0 loses a small delete (stored as inline deletion markers against Parquet files) that
commits while a merge of the same table is in flight: both commit and the deleted rows come back
(see test_known_ducklake_defects.py for the plain reproduction). srdp_compact looks for markers
on files its merge retired right after the merge commits and deletes those rows again by row id.
Here one cursor deletes two rows while srdp_compact merges 60 files on another (DuckDB-file
catalog). On a SQLite catalog the same race is closed another way: srdp binds and executes the
merge in one transaction, whose SQLite snapshot makes the merge's commit fail once the delete has
committed ("database is locked"); srdp retries, and the new merge skips the files that carry the
delete (second test).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from conftest import write_config
from lakecheck import Lake, parquet_files

ROWS_PER_FILE = 50_000
FILES = 60
DELETED = (3, 77_777)
TRIES = 5


def build(tmp_path: Path, connect: Callable[..., Any], metadata: str) -> tuple[Any, Path]:
    cfg = write_config(
        tmp_path,
        f"""
        [catalogs.lake]
        metadata = "{metadata}"
        data_path = "data"
        data_inlining_row_limit = 10
        """,
    )
    con = connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    con.execute("CREATE TABLE lake.t (id BIGINT, v VARCHAR)")
    for b in range(FILES):
        con.execute(f"INSERT INTO lake.t SELECT {b} * {ROWS_PER_FILE} + range, md5(range::VARCHAR) FROM range({ROWS_PER_FILE})")
    return con, cfg


def race(con: Any, cfg: Path) -> dict:
    """srdp_compact on one cursor (a thread), a two-row DELETE on another once the merge writes.

    The merge is in flight once its output file appears next to the 60 Parquet files (the
    flush has nothing to write: every batch is a Parquet file). ``in_flight`` says whether the
    DELETE was sent while the merge was still running.
    """
    data = cfg.parent / "data"
    before = parquet_files(data)
    assert len(before) == FILES, sorted(before)
    result: dict = {}

    def compact() -> None:
        cur = con.cursor()
        try:
            result["row"] = cur.sql(
                f"SELECT files_before, files_after, status, attempts FROM srdp_compact('lake', config := '{cfg}')"
            ).fetchone()
        except Exception as e:  # noqa: BLE001 (reported by the test)
            result["error"] = repr(e)

    thread = threading.Thread(target=compact)
    thread.start()
    while thread.is_alive() and not parquet_files(data) - before:
        time.sleep(0.002)
    in_flight = thread.is_alive()
    con.cursor().execute(f"DELETE FROM lake.t WHERE id IN {DELETED}")
    thread.join(timeout=120)
    assert not thread.is_alive(), "srdp_compact did not finish"
    assert "row" in result, result
    files_before, files_after, status, attempts = result["row"]
    count, back = con.sql(f"SELECT count(*), count(*) FILTER (WHERE id IN {DELETED}) FROM lake.t").fetchone()
    # No deleted row is visible and no other row is missing, whatever the timing.
    assert (count, back) == (FILES * ROWS_PER_FILE - 2, 0), result
    assert files_before == FILES, result
    # srdp's files_after is what the metadata holds (counted here from ducklake_data_file).
    assert Lake(con).file_counts() == {("main", "t"): files_after}, result
    return {"in_flight": in_flight, "files_after": files_after, "status": status, "attempts": attempts}


def test_deletes_committed_during_srdp_compact_stay_deleted(connect, tmp_path):
    """On a DuckDB-file catalog (two cursors of one process) the race is DuckLake's lost delete."""
    outcomes = []
    for attempt in range(TRIES):
        con, cfg = build(tmp_path / f"try{attempt}", connect, "catalog/lake.ducklake")
        outcome = race(con, cfg)
        outcomes.append(outcome)
        if "re-applied" in outcome["status"]:
            # The merge took all 60 files (the delete was not committed when it chose them),
            # the delete was lost, and srdp applied it again.
            assert outcome["in_flight"] and outcome["files_after"] == 1, outcome
            assert outcome["status"] == "compacted; re-applied 2 deletes lost to a concurrent compaction (DuckLake 1.0 defect)"
            break
        # Missed: the delete came before the merge chose its files (DuckLake skips the two
        # files that carry deletes) or after the merge committed (nothing was lost).
        assert (outcome["files_after"], outcome["status"]) in {(3, "compacted"), (1, "compacted")}, outcome
    else:
        raise AssertionError(f"the delete never landed during the merge in {TRIES} tries: {outcomes}")


def test_on_sqlite_the_merge_retries_instead_and_no_delete_is_lost(connect, tmp_path):
    outcomes = []
    for attempt in range(TRIES):
        con, cfg = build(tmp_path / f"try{attempt}", connect, "sqlite:catalog/lake.sqlite")
        outcome = race(con, cfg)
        outcomes.append(outcome)
        if outcome["attempts"] >= 2:
            # The delete committed while the merge was in flight: the merge's commit failed,
            # srdp ran it again, and the new merge left the two files that carry the delete.
            assert outcome["in_flight"], outcome
            assert (outcome["files_after"], outcome["status"]) == (3, "compacted"), outcome
            break
        # Missed (one attempt): the delete came before the merge chose its files or after it.
        assert (outcome["files_after"], outcome["status"]) in {(3, "compacted"), (1, "compacted")}, outcome
    else:
        raise AssertionError(f"the delete never landed during the merge in {TRIES} tries: {outcomes}")
