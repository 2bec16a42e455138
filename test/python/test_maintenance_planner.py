"""srdp's maintenance planner, differentially: 200+ datasets of every kind on two identical lakes,
one compacted by ``srdp_compact`` (which skips the DuckLake calls its one planning read proves
idle), the twin by the plain per-dataset loop of ``ducklake_flush_inlined_data`` +
``ducklake_merge_adjacent_files``. Afterwards:

* the plain calls find nothing left on srdp's lake (0 rows flushed, 0 files processed, no new
  snapshot): srdp skipped nothing that had work;
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

DATASETS = 208
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
             "schema_changed", "partitioned", "repartitioned", "auto_off", "big_files", "empty"]
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


def plain_loop(con: duckdb.DuckDBPyConnection, alias: str, datasets: list[tuple[str, str]]) -> list[tuple[Any, ...]]:
    """The hand-written maintenance: per dataset, flush then merge; what each call returned.

    ``fetchall``, not ``fetchone``: DuckDB's Python client leaves a statement whose result was not
    read to the end uncommitted, and a flush read with ``fetchone`` then reports rows it never
    commits (the connection's close rolls it back)."""
    out = []
    for schema, table in datasets:
        flushed = con.execute(
            f"SELECT coalesce(sum(rows_flushed), 0) FROM ducklake_flush_inlined_data('{alias}', "
            f"schema_name => '{schema}', table_name => '{table}')").fetchall()[0]
        merged = con.execute(
            f"SELECT coalesce(sum(files_processed), 0) FROM ducklake_merge_adjacent_files('{alias}', '{table}', "
            f"schema => '{schema}')").fetchall()[0]
        out.append((schema, table, int(flushed[0]), int(merged[0])))
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
    assert len(datasets) >= 200
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
            "SELECT schema_name, table_name, rows_flushed, files_processed, attempts, status "
            "FROM srdp_compact('ours', honor_auto_compact := true) ORDER BY schema_name, table_name").fetchall()
    finally:
        con.close()
    assert [(s, t) for s, t, *_ in report] == datasets
    called = sum(1 for *_, attempts, _ in report if attempts > 0)
    assert 0 < called < len(datasets)  # the plan skipped the idle datasets, not every one

    con = plain(twin, "twin")
    try:
        twin_calls = plain_loop(con, "twin", datasets)
    finally:
        con.close()
    # What srdp reports per dataset is what the plain calls did on the twin.
    assert [(s, t, f, m) for s, t, f, m, *_ in report] == twin_calls

    # Nothing left: the plain calls on srdp's lake do nothing and make no snapshot.
    before = snapshots(ours)
    con = plain(ours, "ours")
    try:
        assert {c[2:] for c in plain_loop(con, "ours", datasets)} == {(0, 0)}
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
