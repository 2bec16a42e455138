"""Known DuckLake 1.0 defects, pinned so that a DuckLake upgrade that fixes them is noticed.

Lost delete: with data inlining on, a small DELETE against Parquet files is stored as inline
file-deletion markers. If it commits while a merge of the same table is in flight, both commit
and the deleted rows come back (the markers keep pointing at the files the merge retired).
The xfail test asserts the correct outcome, so it fails today and XPASSes (a strict failure)
once DuckLake is fixed. The normal tests pin the operating rules that do hold today: with
``data_inlining_row_limit = 0`` the same race is rejected as a transaction conflict, and
append-only tables keep every row through a concurrent merge.

Prepared merge: ``ducklake_merge_adjacent_files`` chooses its files when the statement is bound.
On an autocommit connection a prepared statement is bound in one transaction and executed in
another, and the commit checks for conflicts only against snapshots newer than the executing
transaction: a merge of the same files committed in between is not seen, both commit, and the
merged rows are duplicated. This is how two srdp maintainers once duplicated rows (duckdb-rs
prepares, then executes); srdp now binds and executes each step in one explicit transaction,
where the same race is DuckLake's "another transaction has compacted it" conflict.

All on a DuckDB-file catalog attached through srdp, with two cursors of one connection (a
SQLite catalog turns the same race into ``database is locked`` for the merge instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import duckdb
import pytest

from conftest import write_config

ROWS_PER_FILE = 50
FILES = 4
DELETED = (3, 77)  # in the first and second Parquet file
ALL_IDS_SUM = sum(range(ROWS_PER_FILE * FILES))
MERGE = "CALL ducklake_merge_adjacent_files('lake', 't')"


class PreconditionFailed(Exception):
    """A precondition or an unknown outcome, raised instead of AssertionError.

    The strict xfail tests absorb only AssertionError, which they raise for the one known wrong
    outcome; everything else they check (in the helpers too) raises this, so that a changed
    setup or a different wrong outcome fails for real instead of counting as the known defect.
    """


def require(condition: bool, what: object) -> None:
    if not condition:
        raise PreconditionFailed(what)


def lake_with_files(connect: Callable[..., Any], tmp_path: Path, limit: int) -> Any:
    cfg = write_config(
        tmp_path,
        f"""
        [catalogs.lake]
        metadata = "catalog/lake.ducklake"
        data_path = "data/lake"
        data_inlining_row_limit = {limit}
        """,
    )
    con = connect(config=cfg)
    row = con.execute(
        "SELECT role, data_inlining_row_limit, status FROM srdp_attach_catalog('lake', role := 'writer')"
    ).fetchone()
    require(row == ("writer", limit, "attached"), row)
    con.execute("CREATE TABLE lake.main.t (id BIGINT, v VARCHAR)")
    for f in range(FILES):
        con.execute(
            f"INSERT INTO lake.main.t SELECT {f} * {ROWS_PER_FILE} + range, 'v' || range FROM range({ROWS_PER_FILE})"
        )
    # Each batch is over the limit: one Parquet file each.
    require(live_files(con) == FILES, ("live files after the setup", live_files(con)))
    return con


def live_files(con: Any) -> int:
    return con.execute(
        "SELECT count(*) FROM __ducklake_metadata_lake.main.ducklake_data_file WHERE end_snapshot IS NULL"
    ).fetchone()[0]


def totals(con: Any) -> tuple[int, int, int]:
    """(rows, deleted rows still visible, sum of ids)"""
    return con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE id IN {DELETED}), sum(id) FROM lake.main.t"
    ).fetchone()


def race_delete_against_merge(con: Any) -> dict:
    """Merge in an open transaction on one cursor, the small delete on another, then commit."""
    merger, deleter = con.cursor(), con.cursor()
    merger.execute("BEGIN")
    merged = merger.execute(MERGE).fetchall()
    require(merged == [("main", "t", FILES, 1)], ("merge in flight", merged))
    outcome = {}
    try:
        outcome["delete"] = deleter.execute(f"DELETE FROM lake.main.t WHERE id IN {DELETED}").fetchall()
    except duckdb.Error as e:
        outcome["delete"] = str(e)
    try:
        merger.execute("COMMIT")
        outcome["merge"] = "committed"
    except duckdb.Error as e:
        outcome["merge"] = str(e)
    return outcome


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DuckLake 1.0 defect: a small delete (inline file deletions) committed while a merge of the "
    "same table is in flight is lost; both commit and the deleted rows come back",
)
def test_small_delete_during_merge_stays_deleted(connect, tmp_path):
    con = lake_with_files(connect, tmp_path, limit=10)
    outcome = race_delete_against_merge(con)
    # Both sides succeed: the defect is this exact race, not a failure of either side.
    require(outcome == {"delete": [(2,)], "merge": "committed"}, outcome)
    require(live_files(con) == 1, live_files(con))
    # The correct outcome: the two deleted rows stay deleted. Today both come back.
    correct = (ROWS_PER_FILE * FILES - 2, 0, ALL_IDS_SUM - sum(DELETED))
    known_defect = (ROWS_PER_FILE * FILES, len(DELETED), ALL_IDS_SUM)
    got = totals(con)
    require(got in (correct, known_defect), ("neither the correct outcome nor the known defect", got))
    assert got == correct


def test_without_inlining_the_race_is_a_conflict_and_no_delete_is_lost(connect, tmp_path):
    con = lake_with_files(connect, tmp_path, limit=0)
    outcome = race_delete_against_merge(con)
    # The delete commits first; the merge is rejected at commit.
    assert outcome["delete"] == [(2,)]
    assert outcome["merge"].startswith("TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.")
    assert (
        'Transaction conflict - attempting to compact table with index "1" - but another transaction has deleted from it'
        in outcome["merge"]
    )
    assert live_files(con) == FILES  # the merge left nothing behind
    expected = (ROWS_PER_FILE * FILES - 2, 0, ALL_IDS_SUM - sum(DELETED))
    assert totals(con) == expected
    # Running the merge again now (nothing in flight) keeps the delete. DuckLake skips the two
    # files that carry deletes and merges the other two.
    assert con.execute(MERGE).fetchall() == [("main", "t", 2, 1)]
    assert live_files(con) == FILES - 1
    assert totals(con) == expected


@pytest.mark.parametrize("limit", [10, 0])
def test_appends_during_merge_keep_every_row(connect, tmp_path, limit):
    con = lake_with_files(connect, tmp_path, limit=limit)
    merger, writer = con.cursor(), con.cursor()
    merger.execute("BEGIN")
    assert merger.execute(MERGE).fetchall() == [("main", "t", FILES, 1)]
    # While the merge is in flight: one batch over the limit (a Parquet file) and one small batch
    # (inlined when inlining is on).
    writer.execute("INSERT INTO lake.main.t SELECT 1000 + range, 'big' FROM range(50)")
    writer.execute("INSERT INTO lake.main.t SELECT 2000 + range, 'small' FROM range(3)")
    merger.execute("COMMIT")
    expected_ids = list(range(ROWS_PER_FILE * FILES)) + list(range(1000, 1050)) + [2000, 2001, 2002]
    count, distinct, total, checksum = con.execute(
        "SELECT count(*), count(DISTINCT id), sum(id), sum(hash(id, v))::VARCHAR FROM lake.main.t"
    ).fetchone()
    assert (count, distinct, total) == (len(expected_ids), len(expected_ids), sum(expected_ids))
    want = duckdb.connect().execute(
        "SELECT sum(hash(id, v))::VARCHAR FROM ("
        f"SELECT f * {ROWS_PER_FILE} + r AS id, 'v' || r AS v FROM range({FILES}) a(f), range({ROWS_PER_FILE}) b(r) "
        "UNION ALL SELECT 1000 + range, 'big' FROM range(50) "
        "UNION ALL SELECT 2000 + range, 'small' FROM range(3))"
    ).fetchone()[0]
    assert checksum == want
    # The merged file plus the new Parquet file (the small batch is inlined or its own file).
    assert live_files(con) == (2 if limit else 3)


def race_prepared_merge(con: Any, one_transaction: bool) -> dict:
    """Merge prepared on one cursor, the same merge committed on another, then the first executed."""
    first, second = con.cursor(), con.cursor()
    if one_transaction:
        first.execute("BEGIN")
    first.execute("PREPARE m AS SELECT * FROM ducklake_merge_adjacent_files('lake', 't')")
    merged = second.execute(MERGE).fetchall()
    require(merged == [("main", "t", FILES, 1)], ("concurrent merge", merged))
    outcome = {"execute": first.execute("EXECUTE m").fetchall()}
    if one_transaction:
        try:
            first.execute("COMMIT")
            outcome["commit"] = "committed"
        except duckdb.Error as e:
            outcome["commit"] = str(e)
    return outcome


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DuckLake 1.0 defect: a merge bound before a concurrent merge of the same files committed "
    "and executed after it merges them again; both commit and the rows are duplicated",
)
def test_prepared_merge_after_a_concurrent_merge_does_not_duplicate(connect, tmp_path):
    con = lake_with_files(connect, tmp_path, limit=0)
    outcome = race_prepared_merge(con, one_transaction=False)
    # The stale plan runs without any error (today it merges the four retired files again).
    require(outcome == {"execute": [("main", "t", FILES, 1)]}, outcome)
    # The correct outcome: every row once, in one live file. Today: every row twice, in two.
    correct = ((ROWS_PER_FILE * FILES, len(DELETED), ALL_IDS_SUM), 1)
    known_defect = ((2 * ROWS_PER_FILE * FILES, 2 * len(DELETED), 2 * ALL_IDS_SUM), 2)
    got = (totals(con), live_files(con))
    require(got in (correct, known_defect), ("neither the correct outcome nor the known defect", got))
    assert got == correct


def test_merge_bound_and_executed_in_one_transaction_conflicts_instead(connect, tmp_path):
    """What srdp does for every maintenance step: the stale merge is rejected and nothing doubles."""
    con = lake_with_files(connect, tmp_path, limit=0)
    outcome = race_prepared_merge(con, one_transaction=True)
    assert outcome["execute"] == [("main", "t", FILES, 1)]
    assert outcome["commit"].startswith("TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.")
    assert (
        'Transaction conflict - attempting to compact table with index "1" - but another transaction has compacted it'
        in outcome["commit"]
    )
    assert totals(con) == (ROWS_PER_FILE * FILES, len(DELETED), ALL_IDS_SUM)  # nothing deleted here
    assert live_files(con) == 1
