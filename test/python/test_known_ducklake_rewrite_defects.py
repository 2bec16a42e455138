"""Known DuckLake 1.0 defects around ``ducklake_rewrite_data_files``, pinned so that a DuckLake
upgrade that fixes them is noticed, and the rules srdp's rewrite step follows because of them.

Left-behind markers: DuckLake 1.0 rewrites a file with its inline deletion markers applied, but
leaves the marker rows behind. The next ``ducklake_flush_inlined_data`` writes them out as a
delete file of the file the rewrite retired, back-dated to the markers' snapshot, next to the
delete file the rewrite ended: time travel to the snapshots in between reads the retired file
twice (duckdb/ducklake#1406). srdp therefore flushes before it rewrites, so its rewrite never
meets a marker; the normal test shows srdp's sequence keeps every earlier snapshot.

Lost delete: like a merge (``test_known_ducklake_defects.py``), a rewrite does not conflict with a
small delete stored as markers: committed while the rewrite is in flight, the delete is lost.
srdp's guard applies it again (``test_lost_delete_guard.py``), but the marker stays, and the next
flush back-dates it onto the retired file as above: time travel into the moments of the race
then reads that file twice. srdp cannot remove a marker; the strict xfail names it.

All on a DuckDB-file catalog attached through srdp, with two cursors of one connection for the
race.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import duckdb
import pytest

from conftest import write_config
from test_known_ducklake_defects import PreconditionFailed, require

ROWS = 1000
REWRITE = "SELECT * FROM ducklake_rewrite_data_files('lake', 't', schema => 'main', delete_threshold => 0)"
FLUSH = "SELECT * FROM ducklake_flush_inlined_data('lake', schema_name => 'main', table_name => 't')"

assert PreconditionFailed  # re-used: only AssertionError counts as the known defect


def lake(connect: Callable[..., Any], tmp_path: Path) -> Any:
    cfg = write_config(
        tmp_path,
        """
        [catalogs.lake]
        metadata = "catalog/lake.ducklake"
        data_path = "data/lake"
        data_inlining_row_limit = 10
        """,
    )
    con = connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute(f"CREATE TABLE lake.main.t AS SELECT range AS id, range::VARCHAR AS v FROM range({ROWS})")
    con.execute("DELETE FROM lake.main.t WHERE id < 500")  # a delete file
    return con


def latest(con: Any) -> int:
    return con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]


def history(con: Any, upto: int) -> list[tuple[int, int, int]]:
    """(snapshot, rows, sum of ids) at every snapshot from the table's creation to ``upto``."""
    first = con.execute(
        "SELECT min(snapshot_id) FROM lake.snapshots() WHERE changes::VARCHAR LIKE '%tables_created%'"
    ).fetchone()[0]
    return [
        (v, *con.execute(f"SELECT count(*), coalesce(sum(id), 0) FROM lake.main.t AT (VERSION => {v})").fetchone())
        for v in range(first, upto + 1)
    ]


def markers_then_rewrite_then_flush(con: Any, rewrite: Callable[[], None]) -> tuple[list, list]:
    """Small deletes (markers) on the file that has a delete file, an inlined insert, then
    ``rewrite``, another inlined insert and a flush; the history before and after."""
    con.execute("DELETE FROM lake.main.t WHERE id IN (600, 601, 602)")  # markers
    con.execute("INSERT INTO lake.main.t VALUES (5000, 'x')")  # inlined
    before_maintenance = latest(con)
    expected = history(con, before_maintenance)
    rewrite()
    con.execute("INSERT INTO lake.main.t VALUES (5001, 'y')")
    con.execute(FLUSH).fetchall()
    return expected, history(con, before_maintenance)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DuckLake 1.0 defect (duckdb/ducklake#1406): a rewrite applies a file's inline deletion markers "
    "but leaves them behind; the next flush writes them as a back-dated delete file of the retired file, "
    "and time travel to the snapshots before the rewrite reads that file twice",
)
def test_a_flush_after_a_rewrite_of_marked_files_keeps_time_travel(connect, tmp_path):
    con = lake(connect, tmp_path)

    def plain_rewrite() -> None:
        require(con.execute(REWRITE).fetchall() == [("main", "t", 1, 1)], "rewrite")

    expected, after = markers_then_rewrite_then_flush(con, plain_rewrite)
    require(con.execute("SELECT count(*) FROM lake.main.t").fetchone()[0] == 499, "rows now")
    # The known wrong outcome: some earlier snapshots read more rows (the retired file again).
    require(len(after) == len(expected) and all(a[1] >= e[1] for a, e in zip(after, expected)),
            ("neither", after))
    assert after == expected


def test_srdps_sequence_flushes_before_it_rewrites_and_keeps_time_travel(connect, tmp_path):
    con = lake(connect, tmp_path)
    rows: list[tuple] = []

    def srdp_compact() -> None:
        rows.extend(con.execute(
            "SELECT rows_flushed, files_rewritten, deletes_applied, files_after, status "
            "FROM srdp_compact('lake')"
        ).fetchall())

    expected, after = markers_then_rewrite_then_flush(con, srdp_compact)
    assert rows == [(
        1, 1, 503, 1,
        "compacted; 3 inline deletion markers written to a delete file; "
        "1 file with deletes rewritten (503 deleted rows left out)",
    )]
    assert after == expected
    assert con.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone() == (
        499, sum(range(500, 1000)) - 600 - 601 - 602 + 5000 + 5001)
    # The flush before the rewrite consumed every marker: the later flush wrote no delete file of a
    # retired file (a live delete file would name one).
    assert con.execute(
        "SELECT count(*) FROM __ducklake_metadata_lake.main.ducklake_delete_file x "
        "JOIN __ducklake_metadata_lake.main.ducklake_data_file d USING (data_file_id) "
        "WHERE x.end_snapshot IS NULL AND d.end_snapshot IS NOT NULL"
    ).fetchone()[0] == 0


def race_small_delete_against_rewrite(con: Any) -> dict:
    """The rewrite in an open transaction on one cursor, a small delete on another, then commit."""
    rewriter, deleter = con.cursor(), con.cursor()
    rewriter.execute("BEGIN")
    require(rewriter.execute(REWRITE).fetchall() == [("main", "t", 1, 1)], "rewrite in flight")
    outcome = {}
    try:
        outcome["delete"] = deleter.execute("DELETE FROM lake.main.t WHERE id IN (700, 701)").fetchall()
    except duckdb.Error as e:
        outcome["delete"] = str(e)
    try:
        rewriter.execute("COMMIT")
        outcome["rewrite"] = "committed"
    except duckdb.Error as e:
        outcome["rewrite"] = str(e)
    return outcome


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DuckLake 1.0 defect: a small delete (inline file deletions) committed while a rewrite of the "
    "same table is in flight is lost; both commit and the deleted rows come back",
)
def test_small_delete_during_rewrite_stays_deleted(connect, tmp_path):
    con = lake(connect, tmp_path)
    outcome = race_small_delete_against_rewrite(con)
    require(outcome == {"delete": [(2,)], "rewrite": "committed"}, outcome)
    got = con.execute("SELECT count(*) FILTER (WHERE id IN (700, 701)), count(*) FROM lake.main.t").fetchone()
    require(got in ((0, 498), (2, 500)), ("neither", got))
    assert got == (0, 498)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DuckLake 1.0 defect (duckdb/ducklake#1406): the marker of a delete lost to a rewrite stays "
    "behind after srdp's guard applied the delete again; the next flush back-dates it onto the retired "
    "file, and time travel into the moments of the race reads that file twice. srdp cannot remove a marker",
)
def test_time_travel_into_a_rewrite_race_survives_the_next_flush(connect, tmp_path):
    con = lake(connect, tmp_path)
    start = latest(con)
    outcome = race_small_delete_against_rewrite(con)
    require(outcome == {"delete": [(2,)], "rewrite": "committed"}, outcome)
    # What srdp's guard does: the lost rows deleted again by row id.
    con.execute("DELETE FROM lake.main.t WHERE id IN (700, 701)")
    expected = history(con, latest(con))
    require([n for _, n, _ in expected[-4:]] == [500, 498, 500, 498], ("the race's history", expected))
    con.execute("INSERT INTO lake.main.t VALUES (5000, 'x')")
    con.execute(FLUSH).fetchall()
    after = history(con, start + 3)
    require(con.execute("SELECT count(*) FROM lake.main.t").fetchone()[0] == 499, "rows now")
    assert after == expected
