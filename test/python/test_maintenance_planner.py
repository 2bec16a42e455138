"""srdp's maintenance planner, differentially: 200+ datasets of every kind on two identical lakes,
one compacted by ``srdp_compact`` (which skips the DuckLake calls its one planning read proves
idle), the twin by the plain per-dataset loop of ``ducklake_flush_inlined_data`` +
``ducklake_rewrite_data_files`` + ``ducklake_merge_adjacent_files``. The kinds include tables that
change: dbt-style merges (delete and re-insert in one transaction), updates, partition replaces,
files at or above the target size with deleted shares over and under the threshold, and a table
whose small and large files with deletes clash. The plain loop's rewrite threshold is the one
srdp documents, computed here from the twin's catalog after its flush (:func:`rewrite_threshold`).
Afterwards:

* the plain calls find nothing left on srdp's lake (0 rows flushed, 0 files rewritten, 0 files
  processed, no new snapshot): srdp skipped nothing that had work;
* both lakes hold the same rows with the same row ids, the same live files per table, the same
  snapshots with the same changes, and read the same AT (VERSION => n) at every snapshot.

The lakes are built by one generated script run on both (plain DuckDB + DuckLake, no srdp); the
comparison reads them with plain DuckDB, and the metadata with sqlite3.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import duckdb

import srdp
from conftest import write_config

DATASETS = 110
SCHEMAS = ["s0", "s1", "s2", "s3"]
FROZEN = "frozen"  # auto_compact = false at schema scope


def plain(root: Path, alias: str) -> duckdb.DuckDBPyConnection:
    root.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={
        "extension_directory": str(srdp.extension_directory()),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })
    con.execute(
        f"ATTACH 'ducklake:sqlite:{root / 'catalog.sqlite'}' AS {alias} "
        f"(DATA_PATH '{root / 'data'}/', DATA_INLINING_ROW_LIMIT 10)"
    )
    return con


def script(seed: int) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """The transactions that build the lake (for alias ``L``) and its datasets in srdp's order.

    Transaction k holds statement k of every dataset, so each dataset's history still spans
    snapshots (an insert, then another, then a delete ...) while the build commits a handful of
    times instead of once per statement."""
    chance = random.Random(seed)
    n = 0

    def rows(count: int) -> str:
        nonlocal n
        start = n
        n += count
        return f"SELECT range AS id, range % 3 AS p, md5(range::VARCHAR) AS v FROM range({start}, {start + count})"

    kinds = ["untouched", "appended", "inlined", "mixed", "deleted", "small_delete", "updated",
             "schema_changed", "partitioned", "repartitioned", "auto_off", "big_files", "empty",
             "merged", "upserted", "replaced_partition", "large_over", "large_under", "clash"]
    histories: list[list[str]] = []
    datasets: list[tuple[str, str]] = []
    for i in range(DATASETS):
        kind = kinds[i % len(kinds)]
        schema = FROZEN if i % 50 == 7 else SCHEMAS[chance.randrange(len(SCHEMAS))]
        table = f"t{i:03d}_{kind}"
        t = f"L.{schema}.{table}"
        datasets.append((schema, table))
        steps = [f"CREATE TABLE {t} (id BIGINT, p BIGINT, v VARCHAR)"]
        if kind == "untouched":
            steps.append(f"INSERT INTO {t} {rows(50)}")
        elif kind == "appended":
            steps += [f"INSERT INTO {t} {rows(20 + chance.randrange(20))}" for _ in range(3)]
        elif kind == "inlined":
            steps += [f"INSERT INTO {t} {rows(3)}" for _ in range(2)]
        elif kind == "mixed":
            steps += [f"INSERT INTO {t} {rows(30)}", f"INSERT INTO {t} {rows(4)}"]
        elif kind == "deleted":
            steps += [f"INSERT INTO {t} {rows(40)}", f"INSERT INTO {t} {rows(40)}", f"DELETE FROM {t} WHERE id % 4 = 0"]
        elif kind == "small_delete":
            steps += [f"INSERT INTO {t} {rows(40)}", f"INSERT INTO {t} {rows(40)}",
                      f"DELETE FROM {t} WHERE id = (SELECT min(id) FROM {t})"]
        elif kind == "updated":
            steps += [f"INSERT INTO {t} {rows(30)}", f"INSERT INTO {t} {rows(30)}",
                      f"UPDATE {t} SET v = 'changed' WHERE id % 6 = 1"]
        elif kind == "schema_changed":
            steps += [f"INSERT INTO {t} {rows(20)}", f"ALTER TABLE {t} ADD COLUMN w INTEGER",
                      f"INSERT INTO {t} (id, p, v) {rows(20)}"]
        elif kind == "partitioned":
            steps += [f"ALTER TABLE {t} SET PARTITIONED BY (p)", f"INSERT INTO {t} {rows(40)}", f"INSERT INTO {t} {rows(40)}"]
        elif kind == "repartitioned":
            steps += [f"INSERT INTO {t} {rows(20)}", f"ALTER TABLE {t} SET PARTITIONED BY (p)",
                      f"INSERT INTO {t} {rows(20)}", f"INSERT INTO {t} {rows(20)}"]
        elif kind == "auto_off":
            steps += [f"INSERT INTO {t} {rows(20)}", f"INSERT INTO {t} {rows(20)}", f"INSERT INTO {t} {rows(3)}",
                      f"CALL L.set_option('auto_compact', false, schema => '{schema}', table_name => '{table}')"]
        elif kind == "merged":  # a dbt merge: delete and re-insert a share, in one transaction
            steps += [f"INSERT INTO {t} {rows(60)}"]
            steps += [f"DELETE FROM {t} WHERE id % 7 = {k}; INSERT INTO {t} SELECT id, id % 3, 'merged{k}' "
                      f"FROM range({n - 60}, {n}) r(id) WHERE id % 7 = {k}" for k in range(2)]
            steps += [f"DELETE FROM {t} WHERE id % 9 = 1; INSERT INTO {t} {rows(8)}"]
        elif kind == "upserted":
            steps += [f"INSERT INTO {t} {rows(50)}", f"UPDATE {t} SET v = 'u1' WHERE id % 10 = 3",
                      f"UPDATE {t} SET v = 'u2' WHERE id % 10 = 3 OR id % 25 = 0"]
        elif kind == "replaced_partition":  # a daily table backfilled in one file, one day replaced
            steps += [f"INSERT INTO {t} {rows(60)}",
                      f"DELETE FROM {t} WHERE p = 1; INSERT INTO {t} SELECT id, 1, 'replaced' FROM range(3000, 3020) r(id)"]
        elif kind in ("large_over", "large_under", "clash"):
            # Files of 60 rows (~2.9 KB) are over a 2 KB target, of 11 rows (~1 KB) under it.
            steps += [f"CALL L.set_option('target_file_size', '2KB', schema => '{schema}', table_name => '{table}')",
                      f"CALL L.set_option('rewrite_delete_threshold', 0.25, schema => '{schema}', table_name => '{table}')",
                      f"INSERT INTO {t} {rows(60)}"]
            if kind == "large_over":  # a third of the large file: rewritten
                steps.append(f"DELETE FROM {t} WHERE id % 3 = 0")
            elif kind == "large_under":  # 3 rows of 60: under the threshold, kept
                steps.append(f"DELETE FROM {t} WHERE id % 20 = 0")
            else:  # 6 of 60 (0.1) on the large file, 1 of 11 (0.09) on the small one
                steps += [f"INSERT INTO {t} {rows(11)}",
                          f"DELETE FROM {t} WHERE id IN (SELECT id FROM {t} ORDER BY id LIMIT 6 OFFSET 3) "
                          f"OR id = (SELECT max(id) FROM {t})"]
        elif kind == "big_files":
            steps += [f"CALL L.set_option('target_file_size', '1KB', schema => '{schema}', table_name => '{table}')"]
            steps += [f"INSERT INTO {t} {rows(50)}" for _ in range(3)]
        histories.append(steps)
    transactions = [[f"CREATE SCHEMA L.{s}" for s in [*SCHEMAS, FROZEN]]]
    for k in range(max(len(h) for h in histories)):
        transactions.append([h[k] for h in histories if k < len(h)])
    transactions.append([f"CALL L.set_option('auto_compact', false, schema => '{FROZEN}')"])
    return transactions, sorted(datasets)


def build(root: Path, alias: str, transactions: list[list[str]]) -> None:
    con = plain(root, alias)
    try:
        for statements in transactions:
            con.execute("BEGIN TRANSACTION")
            for statement in statements:
                con.execute(statement.replace("L.", f"{alias}."))
            con.execute("COMMIT")
    finally:
        con.close()


def rewrite_threshold(root: Path, schema: str, table: str) -> float | None:
    """The rewrite threshold srdp documents for one dataset, from its catalog after a flush (every
    delete is then in a delete file): a file under the target size with any delete and a file at or
    above it with a deleted share of at least the threshold are wanted; the call takes the smallest
    wanted share, or the threshold itself when a large file under the threshold would come along.
    ``None``: nothing is wanted. Only table-scoped options are set in these lakes."""
    con = sqlite3.connect(f"file:{root / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        (table_id,) = con.execute(
            "SELECT t.table_id FROM ducklake_table t JOIN ducklake_schema s USING (schema_id) "
            "WHERE t.table_name = ? AND s.schema_name = ? AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL",
            [table, schema]).fetchone()
        options = dict(con.execute(
            "SELECT key, value FROM ducklake_metadata WHERE scope = 'table' AND scope_id = ?", [table_id]).fetchall())
        files = con.execute(
            "SELECT d.record_count, d.file_size_bytes, x.delete_count FROM ducklake_data_file d "
            "JOIN ducklake_delete_file x ON x.data_file_id = d.data_file_id AND x.end_snapshot IS NULL "
            "WHERE d.table_id = ? AND d.end_snapshot IS NULL AND x.delete_count > 0", [table_id]).fetchall()
    finally:
        con.close()
    target = int(options.get("target_file_size", 1 << 29))
    threshold = float(options.get("rewrite_delete_threshold", 0.2))
    wanted = [d / n for n, size, d in files if size < target or d / n >= threshold]
    if not wanted:
        return None
    lowest = min(wanted)
    clash = any(size >= target and lowest <= d / n < threshold for n, size, d in files)
    return threshold if clash else lowest


def plain_loop(con: duckdb.DuckDBPyConnection, alias: str, datasets: list[tuple[str, str]],
               root: Path) -> list[tuple[Any, ...]]:
    """The hand-written maintenance: per dataset, flush, rewrite (with :func:`rewrite_threshold`),
    merge; what each call returned.

    ``fetchall``, not ``fetchone``: DuckDB's Python client leaves a statement whose result was not
    read to the end uncommitted, and a flush read with ``fetchone`` then reports rows it never
    commits (the connection's close rolls it back)."""
    out = []
    for schema, table in datasets:
        flushed = con.execute(
            f"SELECT coalesce(sum(rows_flushed), 0) FROM ducklake_flush_inlined_data('{alias}', "
            f"schema_name => '{schema}', table_name => '{table}')").fetchall()[0]
        threshold = rewrite_threshold(root, schema, table)
        rewritten = 0
        if threshold is not None:
            rewritten = con.execute(
                f"SELECT coalesce(sum(files_processed), 0) FROM ducklake_rewrite_data_files('{alias}', '{table}', "
                f"schema => '{schema}', delete_threshold => '{threshold!r}'::DOUBLE)").fetchall()[0][0]
        merged = con.execute(
            f"SELECT coalesce(sum(files_processed), 0) FROM ducklake_merge_adjacent_files('{alias}', '{table}', "
            f"schema => '{schema}')").fetchall()[0]
        out.append((schema, table, int(flushed[0]), int(rewritten), int(merged[0])))
    return out


def snapshots(root: Path) -> list[tuple[int, str]]:
    con = sqlite3.connect(f"file:{root / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute("SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes ORDER BY 1").fetchall()
    finally:
        con.close()


def live_files(root: Path) -> dict[int, int]:
    con = sqlite3.connect(f"file:{root / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        return dict(con.execute(
            "SELECT table_id, count(*) FROM ducklake_data_file WHERE end_snapshot IS NULL GROUP BY 1").fetchall())
    finally:
        con.close()


def contents(con: duckdb.DuckDBPyConnection, alias: str, datasets: list[tuple[str, str]], at: int | None = None) -> list[Any]:
    """Per dataset: row count and an md5 over (row id, every column) in row id order, in one query."""
    version = f" AT (VERSION => {at})" if at is not None else ""
    parts = [
        f"SELECT '{schema}.{table}' AS name, count(*) AS n, md5(string_agg(t::VARCHAR, ',' ORDER BY srdp_rowid)) AS h "
        f"FROM (SELECT rowid AS srdp_rowid, * FROM {alias}.{schema}.{table}{version}) t"
        for schema, table in datasets
    ]
    return con.execute(" UNION ALL ".join(parts) + " ORDER BY name").fetchall()


def test_srdp_compact_skips_only_idle_calls_and_ends_exactly_like_the_plain_loop(tmp_path: Path) -> None:
    transactions, datasets = script(seed=15)
    assert len(datasets) >= 100
    ours, twin = tmp_path / "ours", tmp_path / "twin"
    build(ours, "ours", transactions)
    # The twin is a copy: the same catalog file and data files, its data path moved with them.
    shutil.copytree(ours, twin)
    meta = sqlite3.connect(twin / "catalog.sqlite")
    meta.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{twin / 'data'}/"])
    meta.commit()
    meta.close()
    assert snapshots(ours) == snapshots(twin)

    cfg = write_config(tmp_path, f"""
[catalogs.ours]
metadata = "sqlite:{ours / 'catalog.sqlite'}"
data_path = "{ours / 'data'}/"
data_inlining_row_limit = 10
""")
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('ours', role := 'writer')").fetchall()
        # honor_auto_compact: the plain loop's DuckLake calls skip the auto_compact = false
        # datasets, so srdp does too here (its explicit steps are compared in
        # test_explicit_compaction.py).
        report = con.execute(
            "SELECT schema_name, table_name, rows_flushed, files_rewritten, files_processed, attempts, status "
            "FROM srdp_compact('ours', honor_auto_compact := true) ORDER BY schema_name, table_name").fetchall()
    finally:
        con.close()
    assert [(s, t) for s, t, *_ in report] == datasets
    called = sum(1 for *_, attempts, _ in report if attempts > 0)
    assert 0 < called < len(datasets)  # the plan skipped the idle datasets, not every one

    con = plain(twin, "twin")
    try:
        twin_calls = plain_loop(con, "twin", datasets, twin)
    finally:
        con.close()
    # What srdp reports per dataset is what the plain calls did on the twin.
    assert [(s, t, f, r, m) for s, t, f, r, m, *_ in report] == twin_calls
    # The kinds that change: each had its files with deletes rewritten, and the clash waited.
    maintained = {t: (r, status) for s, t, f, r, m, attempts, status in report if s != FROZEN}
    for kind in ("merged", "upserted", "replaced_partition", "large_over", "deleted"):
        found = [r for t, (r, _) in maintained.items() if t.endswith(kind)]
        assert found and all(r > 0 for r in found), kind
    assert all(r == 0 for t, (r, _) in maintained.items() if t.endswith(("large_under", "clash")))
    clashes = [status for t, (_, status) in maintained.items() if t.endswith("clash")]
    assert clashes and all("1 small file with deletes not rewritten" in status for status in clashes)

    # Nothing left: the plain calls on srdp's lake do nothing and make no snapshot.
    before = snapshots(ours)
    con = plain(ours, "ours")
    try:
        assert {c[2:] for c in plain_loop(con, "ours", datasets, ours)} == {(0, 0, 0)}
    finally:
        con.close()
    assert snapshots(ours) == before

    # The same lake: snapshots and their changes, live files, rows with row ids, time travel.
    assert snapshots(ours) == snapshots(twin)
    assert live_files(ours) == live_files(twin)
    a, b = plain(ours, "ours"), plain(twin, "twin")
    try:
        assert contents(a, "ours", datasets) == contents(b, "twin", datasets)
        # Every table exists from snapshot 2 on (schemas, then tables): the build's first, middle
        # and last snapshots, the first and last maintenance snapshots.
        built = len(transactions) - 1
        ids = [s for s, _ in before]
        for version in sorted({2, built // 2 + 1, built, ids[built + 1], ids[-1]}):
            assert contents(a, "ours", datasets, version) == contents(b, "twin", datasets, version), version
    finally:
        a.close()
        b.close()
