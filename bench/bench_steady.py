"""Steady-state maintenance: N datasets, all compacted already, of which 10 changed since.

The nightly job's usual night: srdp_compact (one planning read, DuckLake called only where there
is work) against the hand-written loop of ducklake_flush_inlined_data +
ducklake_merge_adjacent_files over every dataset, on two copies of the same SQLite lake, in the
same run (sides alternate which goes first). Both must end with the same live files and rows.

    .venv/bin/python bench/bench_steady.py                    # 100, 300, 1000 datasets
    .venv/bin/python bench/bench_steady.py --datasets 100,300
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import duckdb

import srdp

CHANGED = 10


def plain(root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={
        "extension_directory": str(srdp.extension_directory()),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })
    con.execute(f"ATTACH 'ducklake:sqlite:{root / 'catalog.sqlite'}' AS lake "
                f"(DATA_PATH '{root / 'data'}/', DATA_INLINING_ROW_LIMIT 10)")
    return con


def build(root: Path, n: int) -> list[str]:
    """N tables, two Parquet files each, compacted to one; then 10 of them get a small append."""
    root.mkdir(parents=True)
    con = plain(root)
    tables = [f"t{i:04d}" for i in range(n)]
    for _ in range(2):
        con.execute("BEGIN TRANSACTION")
        for t in tables:
            con.execute(f"CREATE TABLE IF NOT EXISTS lake.main.{t} (id BIGINT, v VARCHAR)")
            con.execute(f"INSERT INTO lake.main.{t} SELECT range, md5(range::VARCHAR) FROM range(50)")
        con.execute("COMMIT")
    con.execute("CALL ducklake_merge_adjacent_files('lake')")
    for t in tables[:: max(1, n // CHANGED)][:CHANGED]:
        con.execute(f"INSERT INTO lake.main.{t} VALUES (1, 'small')")  # inlined
    con.close()
    return tables


def copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
    meta = sqlite3.connect(dst / "catalog.sqlite")
    meta.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{dst / 'data'}/"])
    meta.commit()
    meta.close()


def run_srdp(root: Path) -> float:
    cfg = root.parent / f"{root.name}.toml"
    cfg.write_text(f'[catalogs.lake]\nmetadata = "sqlite:{root / "catalog.sqlite"}"\n'
                   f'data_path = "{root / "data"}/"\ndata_inlining_row_limit = 10\n')
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    start = time.perf_counter()
    con.execute("SELECT * FROM srdp_compact('lake')").fetchall()
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed


def run_plain(root: Path, tables: list[str]) -> float:
    con = plain(root)
    start = time.perf_counter()
    for t in tables:
        con.execute(f"SELECT * FROM ducklake_flush_inlined_data('lake', schema_name => 'main', table_name => '{t}')").fetchall()
        con.execute(f"SELECT * FROM ducklake_merge_adjacent_files('lake', '{t}', schema => 'main')").fetchall()
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed


def state(root: Path) -> tuple[int, int]:
    meta = sqlite3.connect(root / "catalog.sqlite")
    files = meta.execute("SELECT count(*) FROM ducklake_data_file WHERE end_snapshot IS NULL").fetchone()[0]
    snapshots = meta.execute("SELECT count(*) FROM ducklake_snapshot").fetchone()[0]
    meta.close()
    return files, snapshots


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="100,300,1000")
    args = ap.parse_args()
    print(f"{'datasets':>8}  {'changed':>7}  {'srdp s':>8}  {'plain s':>8}  {'plain/srdp':>10}")
    for n in [int(x) for x in args.datasets.split(",")]:
        work = Path(tempfile.mkdtemp(prefix="srdp-steady-"))
        try:
            tables = build(work / "pristine", n)
            copy(work / "pristine", work / "srdp")
            copy(work / "pristine", work / "plain")
            if n % 2:
                p, s = run_plain(work / "plain", tables), run_srdp(work / "srdp")
            else:
                s, p = run_srdp(work / "srdp"), run_plain(work / "plain", tables)
            if state(work / "srdp") != state(work / "plain"):
                raise SystemExit(f"{n} datasets: srdp {state(work / 'srdp')} != plain {state(work / 'plain')} (files, snapshots)")
            print(f"{n:>8}  {CHANGED:>7}  {s:8.2f}  {p:8.2f}  {p / s:9.1f}x", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
