"""srdp's steps are explicit, so `auto_compact = false` (meant for DuckLake's bulk calls) does not
stop them (ADR 000), and the catalog's options stay exactly as they were.

DuckLake 1.0 skips such a table even when a call names it, with no parameter to force it. srdp
sets the option to true at the scope that holds the false, runs the step and sets it back, in the
step's one transaction. The twin lake here does the same by hand with plain DuckLake calls: both
must end with the same rows, row ids, live files and snapshots, and with the options untouched.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import srdp
from conftest import write_config

SCOPES = {
    "table": "schema => 's', table_name => 't'",
    "schema": "schema => 's'",
    "catalog": "",
}


def build(con: duckdb.DuckDBPyConnection, alias: str, scope: str) -> None:
    """s.t: three Parquet files and 5 inlined rows; s.u beside it; auto_compact false at `scope`."""
    for statement in (
        f"CREATE SCHEMA {alias}.s",
        f"CREATE TABLE {alias}.s.t (id BIGINT, v VARCHAR)",
        f"CREATE TABLE {alias}.s.u (id BIGINT)",
        *[f"INSERT INTO {alias}.s.t SELECT range, 'f{k}' FROM range({k * 20}, {k * 20 + 20})" for k in range(3)],
        f"INSERT INTO {alias}.s.t SELECT range, 'inl' FROM range(100, 105)",
        f"DELETE FROM {alias}.s.t WHERE id = 7",
        f"INSERT INTO {alias}.s.u VALUES (1)",
        f"CALL {alias}.set_option('auto_compact', false{', ' + SCOPES[scope] if SCOPES[scope] else ''})",
    ):
        con.execute(statement)


def meta(con: duckdb.DuckDBPyConnection, alias: str, query: str) -> list[tuple]:
    return con.execute(query.format(m=f'"__ducklake_metadata_{alias}".main')).fetchall()


def options(con: duckdb.DuckDBPyConnection, alias: str) -> list[tuple]:
    """Every row of ducklake_metadata but the data path (the two lakes' folders differ)."""
    return meta(con, alias, "SELECT * FROM {m}.ducklake_metadata WHERE key <> 'data_path' ORDER BY ALL")


def state(con: duckdb.DuckDBPyConnection, alias: str) -> dict:
    snapshots = [s for (s,) in meta(con, alias, "SELECT snapshot_id FROM {m}.ducklake_snapshot ORDER BY 1")]
    return {
        "rows": con.execute(f"SELECT count(*), sum(hash(id, v)), sum(hash(rowid, id)) FROM {alias}.s.t").fetchone(),
        "files": meta(con, alias, "SELECT count(*) FROM {m}.ducklake_data_file WHERE end_snapshot IS NULL AND table_id = "
                      "(SELECT table_id FROM {m}.ducklake_table WHERE table_name = 't' AND end_snapshot IS NULL)"),
        "inlined": con.execute(f"SELECT inlined_rows FROM srdp_inlined_row_count('{alias}', table_name := 't')").fetchall()
        if alias == "ours" else None,
        "changes": meta(con, alias, "SELECT snapshot_id, changes_made FROM {m}.ducklake_snapshot_changes ORDER BY 1"),
        "history": [
            con.execute(f"SELECT count(*), sum(hash(rowid, id, v)) FROM {alias}.s.t AT (VERSION => {v})").fetchone()
            for v in snapshots
            if v >= 4  # from the first INSERT into s.t on
        ],
    }


def twin_lakes(tmp_path: Path, first: str) -> duckdb.DuckDBPyConnection:
    """An srdp connection with two new SQLite lakes, `first` and `twin`, attached as writer."""
    cfg = write_config(tmp_path, "".join(f"""
        [catalogs.{alias}]
        metadata = "sqlite:{tmp_path / alias}.sqlite"
        data_path = "{tmp_path / alias}/"
        data_inlining_row_limit = 10
        """ for alias in (first, "twin")))
    con = srdp.connect(config=str(cfg))
    for alias in (first, "twin"):
        con.execute(f"SELECT * FROM srdp_attach_catalog('{alias}', role := 'writer')").fetchall()
    return con


def by_hand(con: duckdb.DuckDBPyConnection, alias: str, scope: str, step: str) -> None:
    """What srdp does for one explicit step, written with plain DuckLake calls."""
    target = f", {SCOPES[scope]}" if SCOPES[scope] else ""
    con.execute("BEGIN TRANSACTION")
    con.execute(f"CALL {alias}.set_option('auto_compact', true{target})")
    con.execute(step).fetchall()
    con.execute(f"CALL {alias}.set_option('auto_compact', false{target})")
    con.execute("COMMIT")


@pytest.mark.parametrize("scope", list(SCOPES))
def test_explicit_steps_compact_excluded_datasets_and_leave_the_options_as_they_were(tmp_path: Path, scope: str) -> None:
    con = twin_lakes(tmp_path, "ours")
    for alias in ("ours", "twin"):
        build(con, alias, scope)
    before = options(con, "ours")
    assert before == options(con, "twin")
    assert (state(con, "ours")["files"], state(con, "ours")["inlined"]) == ([(3,)], [(5,)])

    # DuckLake itself skips the table even when it is named.
    assert con.execute("CALL ducklake_merge_adjacent_files('ours', 't', schema => 's')").fetchall() == []

    (row,) = srdp.call(con, "srdp_compact", "ours", schema_name="s", table_name="t")
    assert (row["rows_flushed"], row["files_before"], row["files_after"], row["files_processed"],
            row["files_rewritten"], row["status"]) == (
        5, 3, 1, 4, 1,
        "compacted; 1 inline deletion marker written to a delete file; 1 file with deletes rewritten "
        "(1 deleted row left out); explicit: auto_compact is false for bulk calls only",
    )  # the file with the delete is rewritten without it, then merged with the others
    by_hand(con, "twin", scope, "CALL ducklake_flush_inlined_data('twin', schema_name => 's', table_name => 't')")
    by_hand(con, "twin", scope, "CALL ducklake_rewrite_data_files('twin', 't', schema => 's', delete_threshold => 0)")
    by_hand(con, "twin", scope, "CALL ducklake_merge_adjacent_files('twin', 't', schema => 's')")

    ours, twin = state(con, "ours"), state(con, "twin")
    assert ours["files"] == twin["files"] == [(1,)] and ours["inlined"] == [(0,)]
    assert ours["rows"] == twin["rows"]
    assert ours["changes"] == twin["changes"]  # the flush's, rewrite's and merge's snapshots, nothing else
    assert [c for _, c in ours["changes"][-3:]] == [
        f"deleted_from_table:{_table_id(con, 'ours')},inline_flush:{_table_id(con, 'ours')}",
        f"rewrite_delete:{_table_id(con, 'ours')}",
        f"merge_adjacent:{_table_id(con, 'ours')}",
    ]
    assert ours["history"] == twin["history"] and len(ours["history"]) >= 5
    assert options(con, "ours") == before == options(con, "twin")
    authors = meta(con, "ours", "SELECT author, commit_message FROM {m}.ducklake_snapshot_changes ORDER BY snapshot_id DESC LIMIT 3")
    assert authors == [("srdp", "srdp_compact: merge s.t"), ("srdp", "srdp_compact: rewrite s.t"),
                       ("srdp", "srdp_compact: flush s.t")]

    # The option is still false in memory: DuckLake's bulk flush skips the table's new row.
    con.execute("INSERT INTO ours.s.t VALUES (200, 'late')")
    flushed = con.execute("SELECT table_name FROM ducklake_flush_inlined_data('ours', schema_name => 's')").fetchall()
    assert ("t",) not in flushed, flushed
    # honor_auto_compact := true: skipped, as DuckLake's bulk calls do.
    (row,) = srdp.call(con, "srdp_flush", "ours", schema_name="s", table_name="t", honor_auto_compact=True)
    assert (row["rows_flushed"], row["attempts"], row["status"]) == (0, 0, "skipped: auto_compact is false")
    con.close()


def _table_id(con: duckdb.DuckDBPyConnection, alias: str) -> int:
    (table_id,) = meta(con, alias, "SELECT table_id FROM {m}.ducklake_table WHERE table_name = 't' AND end_snapshot IS NULL")[0]
    return table_id


def test_a_failed_explicit_step_reattaches_so_the_flipped_option_does_not_linger(tmp_path: Path) -> None:
    # main.m's flush fails in DuckLake 1.0 for real (duckdb/ducklake#1383: DROP NOT NULL creates
    # no new inlined table, so flushing its NULL into the old one fails). Its three files could
    # be merged, but auto_compact = false excludes it from DuckLake's calls.
    con = twin_lakes(tmp_path, "lake")
    for alias in ("lake", "twin"):
        for statement in (
            f"CREATE TABLE {alias}.main.m (id BIGINT NOT NULL, v VARCHAR)",
            *[f"INSERT INTO {alias}.main.m SELECT range, 'x' FROM range({k * 20}, {k * 20 + 20})" for k in range(3)],
            f"INSERT INTO {alias}.main.m VALUES (1000, 'x')",
            f"ALTER TABLE {alias}.main.m ALTER COLUMN id DROP NOT NULL",
            f"INSERT INTO {alias}.main.m VALUES (NULL, 'y')",
            f"CALL {alias}.set_option('auto_compact', false, table_name => 'm')",
        ):
            con.execute(statement)
    before = options(con, "lake")

    # The control, by hand on the twin: after a failed step and ROLLBACK, DuckLake keeps the
    # flipped true in memory, so its own merge no longer skips the table.
    con.execute("BEGIN TRANSACTION")
    con.execute("CALL twin.set_option('auto_compact', true, table_name => 'm')")
    with pytest.raises(duckdb.ConstraintException):
        con.execute("CALL ducklake_flush_inlined_data('twin', schema_name => 'main', table_name => 'm')").fetchall()
    con.execute("ROLLBACK")
    assert con.execute("CALL ducklake_merge_adjacent_files('twin', 'm', schema => 'main')").fetchall() == [("main", "m", 3, 1)]

    with pytest.raises(duckdb.Error) as failed:
        srdp.call(con, "srdp_compact", "lake", table_name="m")
    assert str(failed.value) == (
        "Invalid Input Error: srdp_compact: dataset 'main.m' failed to flush after 1 attempt(s): "
        "Constraint Error: NOT NULL constraint failed: m.id. Datasets committed before it: none"
    )
    # srdp re-attached the lake after the failed attempt: the option is false again in memory
    # (DuckLake's merge skips the table) and in the catalog.
    assert con.execute("CALL ducklake_merge_adjacent_files('lake', 'm', schema => 'main')").fetchall() == []
    assert options(con, "lake") == before
    assert con.execute("SELECT count(*), count(id) FROM lake.main.m").fetchone() == (62, 61)
    con.close()
