"""srdp_write_audit and srdp's own maintenance, on real DuckLake catalogs: a flush that writes
inline deletion markers into a delete file (DuckLake records ``deleted_from_table``, as for a
DELETE), a rewrite labelled as srdp's compaction labels it, and the landing ledger's claim rows,
which leave such markers in ``raw_landed`` after every promotion. Each is allowed; data changes
that are merely labelled ``srdp`` (a DELETE, a DELETE beside a flush in one transaction, an
INSERT) are still flagged.

What each snapshot did is read from DuckLake's own ``ducklake_snapshot_changes`` (sqlite3, no
srdp); the rows of each table are counted and checksummed before and after maintenance.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from landing_support import LANDING_TOML, checksum, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import promote_landing

LAKE = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"
data_inlining_row_limit = 10

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

AUDIT = "SELECT snapshot_id, author, table_name, change, allowed, note FROM srdp_write_audit('lake', since := ?) ORDER BY ALL"

MARKERS = "srdp maintenance: a flush wrote inline deletion markers to a delete file; no row changed in this snapshot"
SRDP_WROTE = "'srdp' wrote schema 'analytics', owned by 'io_manager'"


def changes_made(catalog: Path, after: int) -> list[tuple[Any, ...]]:
    """(snapshot, author, changes_made) after ``after``, read by sqlite3 from DuckLake's metadata."""
    con = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT snapshot_id, author, changes_made FROM ducklake_snapshot_changes WHERE snapshot_id > ? "
            "ORDER BY snapshot_id", [after]
        ).fetchall()
    finally:
        con.close()


def last_snapshot(con: Any) -> int:
    return int(con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0])


def rows(con: Any, table: str = "orders") -> tuple[int, str]:
    found = con.execute(f"SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.analytics.{table}").fetchone()
    return int(found[0]), str(found[1])


def as_io_manager(con: Any, sql: str) -> None:
    """``sql`` in one transaction labelled as the IO manager labels its writes."""
    con.execute("BEGIN")
    con.execute("CALL lake.set_commit_message('io_manager', 'dagster run r1 asset analytics/orders')")
    con.execute(sql)
    con.execute("COMMIT")


def test_srdps_flush_of_deletion_markers_and_a_rewrite_are_allowed(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LAKE)
    con = srdp.connect(config=cfg)
    try:
        srdp.call(con, "srdp_attach_catalog", "lake", role="writer")
        as_io_manager(con, "CREATE SCHEMA lake.analytics")
        as_io_manager(con, "CREATE TABLE lake.analytics.orders AS SELECT range AS id, 'v' || range AS v FROM range(100)")
        as_io_manager(con, "DELETE FROM lake.analytics.orders WHERE id < 3")  # 3 inline deletion markers
        before = rows(con)
        start = last_snapshot(con)
        (flushed,) = srdp.call(con, "srdp_flush", "lake", schema_name="analytics", table_name="orders")
        assert (flushed["status"], rows(con)) == ("flushed; 3 inline deletion markers written to a delete file", before)
        flush = last_snapshot(con)
        # The rewrite srdp's compaction runs (issue 34), labelled as it labels it: plain DuckLake.
        as_io_manager(con, "DELETE FROM lake.analytics.orders WHERE id BETWEEN 10 AND 60")
        before = rows(con)
        con.execute("BEGIN")
        con.execute("CALL lake.set_commit_message('srdp', 'srdp_compact: rewrite analytics.orders')")
        con.execute("CALL ducklake_rewrite_data_files('lake', 'orders', schema => 'analytics', delete_threshold => 0.0)")
        con.execute("COMMIT")
        assert rows(con) == before == (46, before[1])
        rewrite = last_snapshot(con)
        # DuckLake's own record: the flush wrote only a delete file, the rewrite is rewrite_delete.
        recorded = {s: (a, c) for s, a, c in changes_made(tmp_path / "lake" / "catalog.sqlite", start)}
        assert (recorded[flush], recorded[rewrite]) == (("srdp", "deleted_from_table:2"), ("srdp", "rewrite_delete:2"))
        assert [r for r in con.execute(AUDIT, [str(flush)]).fetchall() if r[0] in (flush, rewrite)] == [
            (flush, "srdp", "orders", "flushed", True, MARKERS),
            (rewrite, "srdp", "orders", "rewritten", True, "srdp maintenance; the rows are unchanged"),
        ]
        assert con.execute("SELECT count(*) FROM srdp_write_audit('lake') WHERE NOT allowed").fetchone() == (0,)
    finally:
        con.close()


def test_data_changes_merely_labelled_srdp_are_flagged(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LAKE)
    con = srdp.connect(config=cfg)
    try:
        srdp.call(con, "srdp_attach_catalog", "lake", role="writer")
        as_io_manager(con, "CREATE SCHEMA lake.analytics")
        as_io_manager(con, "CREATE TABLE lake.analytics.orders AS SELECT range AS id, 'v' || range AS v FROM range(100)")
        as_io_manager(con, "DELETE FROM lake.analytics.orders WHERE id < 3")  # markers a flush would move
        start = last_snapshot(con)

        def as_srdp(*statements: str) -> int:
            con.execute("BEGIN")
            con.execute("CALL lake.set_commit_message('srdp', 'srdp_flush: flush analytics.orders')")
            for sql in statements:
                con.execute(sql)
            con.execute("COMMIT")
            return last_snapshot(con)

        # A DELETE of more rows than the inlining limit: a delete file, `deleted_from_table` alone,
        # exactly what a flush of markers records.
        delete = as_srdp("DELETE FROM lake.analytics.orders WHERE id BETWEEN 40 AND 80")
        # The same beside a real flush of the markers, in one transaction.
        both = as_srdp(
            "DELETE FROM lake.analytics.orders WHERE id BETWEEN 81 AND 95",
            "CALL ducklake_flush_inlined_data('lake', schema_name => 'analytics', table_name => 'orders')",
        )
        insert = as_srdp("INSERT INTO lake.analytics.orders SELECT range, 'w' FROM range(200, 250)")
        recorded = {s: c for s, _, c in changes_made(tmp_path / "lake" / "catalog.sqlite", start)}
        assert (recorded[delete], recorded[both], recorded[insert]) == (
            "deleted_from_table:2", "deleted_from_table:2", "inserted_into_table:2")
        assert con.execute(AUDIT, [str(delete)]).fetchall() == [
            (delete, "srdp", "orders", "deleted", False, SRDP_WROTE),
            (both, "srdp", "orders", "deleted", False, SRDP_WROTE),
            (insert, "srdp", "orders", "inserted", False, SRDP_WROTE),
        ]
    finally:
        con.close()


def test_the_landing_ledgers_claim_rows_leave_no_false_violation_after_nightly_maintenance(tmp_path: Path) -> None:
    # Each night: a load lands, is promoted, and srdp's maintenance compacts raw_landed. From the
    # second promotion on, the claim row it replaces is in a Parquet file (the previous night's
    # flush wrote it out), so the promotion leaves an inline deletion marker and the flush writes
    # it to a delete file: DuckLake's `deleted_from_table`, authored srdp.
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra="data_inlining_row_limit = 10"))
    io = SrdpIOManager(config=str(cfg))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "dlt"))
    source: list[dict[str, Any]] = []
    con = srdp.connect(config=cfg)
    try:
        srdp.call(con, "srdp_attach_catalog", "lake", role="writer")
        start = last_snapshot(con)
        for night in range(3):
            source += [order(i) for i in range(night * 4 + 1, night * 4 + 5)]
            dest.run(pipeline, orders_resource(source))
            outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io, keys={"orders": ["id"]})
            assert [o.status for o in outcomes] == ["promoted"]
            ledger_before = ledger(con)
            srdp.call(con, "srdp_compact", "lake", schema_name="raw_landed")
            assert ledger(con) == ledger_before
        flushes = [(s, c) for s, a, c in changes_made(tmp_path / "catalog" / "lake.sqlite", start) if a == "srdp"]
        markers = [s for s, c in flushes if c.startswith("deleted_from_table:")]
        assert len(markers) == 2, flushes  # the second and third nights
        flagged = con.execute(
            "SELECT snapshot_id, author, schema_name, table_name, change, note FROM srdp_write_audit('lake') "
            "WHERE NOT allowed AND schema_name = 'raw_landed'"
        ).fetchall()
        assert flagged == []
        assert con.execute(
            "SELECT snapshot_id, table_name, change, allowed, note FROM srdp_write_audit('lake') "
            f"WHERE snapshot_id IN ({markers[0]}, {markers[1]}) ORDER BY ALL"
        ).fetchall() == [(s, "_srdp_landing_loads", "flushed", True, MARKERS) for s in markers]
    finally:
        con.close()
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 13)]
    assert checksum(raw_rows(cfg)) == checksum([(i, i * 10) for i in range(1, 13)])


def ledger(con: Any) -> tuple[Any, ...]:
    """Count and checksum of the promotion ledger's rows."""
    return tuple(con.execute(
        "SELECT count(*), sum(hash(table_name, load_id, status))::VARCHAR FROM lake.raw_landed._srdp_landing_loads"
    ).fetchone())
