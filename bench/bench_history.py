#!/usr/bin/env python3
"""Compaction of a lake with long histories: srdp_compact against the hand-written loop and
against DuckLake's own ``CHECKPOINT``, side by side on copies of the same lake.

The lake (SQLite catalog, local data, built with plain DuckDB): TABLES tables ``main.hNN (id
BIGINT, v VARCHAR)``, each with SNAPSHOTS snapshots of its own: FILES inserts of FILE_ROWS rows
(each a Parquet file) and SNAPSHOTS - FILES inserts of INLINE_ROWS rows (inlined in the catalog),
interleaved, every insert one transaction, the tables' inserts taking turns (so the catalog
holds TABLES x SNAPSHOTS snapshots, and every table's history is spread over all of them).

Sides, each in a fresh process on a fresh copy of the lake at the same path, attached before the
clock (srdp: ``srdp_attach_catalog`` as writer; the others: the same ATTACH with plain DuckDB):

* **srdp**: ``SELECT * FROM srdp_compact('lake')``: per table, the flush and the merge, each
  committing on its own, with srdp's guard reads and commit labels.
* **hand loop**: per table ``CALL ducklake_flush_inlined_data(...)`` and
  ``ducklake_merge_adjacent_files(...)`` with ``execute`` (bench.py's ``hand_loop``).
* **CHECKPOINT**: ``CHECKPOINT lake`` with DuckLake's default options: its flush, merge, rewrite
  and cleanup steps, each one transaction for the whole catalog.

After every run a separate process checks the lake: per table the rows and checksum (equal to the
pristine lake's), the live data files (equal on every side), no inlined row left; and time
travel: the rows of every table at the snapshot halfway through the build are still readable and
equal the pristine lake's. The snapshots each side added are reported.

    .venv/bin/python bench/bench_history.py              # 50 tables x 40 snapshots, 5 rounds
    .venv/bin/python bench/bench_history.py --quick      # 10 tables x 12 snapshots, 2 rounds

Results: a table on stdout and JSON in bench/results/history.json (history-quick.json).
``bench/profile_steps.py --history`` splits srdp's and the loop's time on this lake by statement.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402
import sides  # noqa: E402

TABLES, SNAPSHOTS, FILES = 50, 40, 10
FILE_ROWS, INLINE_ROWS = bench.FILE_ROWS, 10
GOAL = 1.10
SRDP, LOOP, CHECKPOINT = "srdp_compact", "hand loop", "CHECKPOINT"


def build(spec: dict) -> dict:
    """The long-history lake at spec['root'] (see the module doc); its fingerprint and the
    snapshot halfway through."""
    root = Path(spec["root"])
    (root / "catalog").mkdir(parents=True)
    (root / "data" / "lake").mkdir(parents=True)
    (root / "srdp.toml").write_text(bench.TOML.format(limit=bench.INLINE_LIMIT))
    tables, snapshots, files = spec["tables"], spec["snapshots"], spec["files"]
    con = bench.plain_connect(root, bench.INLINE_LIMIT, override=False)
    con.execute("BEGIN TRANSACTION")
    for t in range(tables):
        con.execute(f"CREATE TABLE lake.main.h{t:02d} (id BIGINT, v VARCHAR)")
    con.execute("COMMIT")
    every = snapshots // files  # every `every`-th insert of a table writes a file
    middle = None
    for k in range(snapshots):
        for t in range(tables):
            rows = FILE_ROWS if k % every == 0 else INLINE_ROWS
            con.execute(f"INSERT INTO lake.main.h{t:02d} SELECT {k * 100_000} + range, 'h{t}-{k}-' || range FROM range({rows})")
        if k == snapshots // 2 - 1:
            middle = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    con.close()
    return {"middle": middle, **verify({"root": str(root), "middle": middle})}


def verify(spec: dict) -> dict:
    """Per table rows, checksum, live files and inlined rows; rows at the middle snapshot; the
    number of snapshots (a read-only attach of its own)."""
    root = Path(spec["root"])
    con = bench.plain_connect(root, bench.INLINE_LIMIT, override=False, read_only=True)
    fingerprint = bench.fingerprint(con)
    names = sorted(fingerprint)
    query = " UNION ALL ".join(
        f"SELECT '{n}' AS t, count(*) AS n, COALESCE(sum(hash(id, v)), 0)::VARCHAR AS c "
        f"FROM lake.main.{n} AT (VERSION => {int(spec['middle'])})" for n in names)
    travel = {t: [n, c] for t, n, c in con.sql(query).fetchall()}
    snapshots = con.execute(f"SELECT count(*) FROM {bench.MAIN_META}.ducklake_snapshot").fetchone()[0]
    con.close()
    return {"fingerprint": fingerprint, "travel": travel, "snapshots": int(snapshots)}


def cpu_seconds() -> float:
    """User and system CPU time of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(spec: dict) -> dict:
    """One side in a fresh process: attach, then the timed call (wall and CPU seconds)."""
    root, side = Path(spec["root"]), spec["side"]
    cpu = cpu_seconds()
    if side == SRDP:
        con = bench.srdp_connect(root)
        start = time.perf_counter()
        rows = con.sql("SELECT * FROM srdp_compact('lake')").fetchall()
        seconds = time.perf_counter() - start
        out: dict[str, Any] = {"datasets": len(rows)}
    else:
        con = bench.plain_connect(root, bench.INLINE_LIMIT, override=False)
        start = time.perf_counter()
        if side == LOOP:
            bench.hand_loop(con, "compact")
        else:
            con.execute("CHECKPOINT lake")
        seconds = time.perf_counter() - start
        out = {}
    con.close()
    return {**out, "seconds": seconds, "cpu_s": cpu_seconds() - cpu, "rss_peak_mb": sides.peak_rss_mb()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="10 tables x 12 snapshots, 2 rounds")
    ap.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    ap.add_argument("--tables", type=int, help=f"tables (default {TABLES})")
    ap.add_argument("--workdir", help="where to build the lake (default: a new folder in $TMPDIR)")
    ap.add_argument("--out", help="JSON result file (default bench/results/history[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        sides.emit({"build": build, "run": run, "verify": verify}[spec["mode"]](spec))
        return 0
    tables = args.tables or (10 if args.quick else TABLES)
    snapshots, files = (12, 3) if args.quick else (SNAPSHOTS, FILES)
    rounds = args.rounds or (2 if args.quick else 5)
    out_path = Path(args.out) if args.out else HERE / "results" / ("history-quick.json" if args.quick else "history.json")
    work = Path(tempfile.mkdtemp(prefix="srdp-bench-history-", dir=args.workdir))
    script = str(Path(__file__).resolve())
    print(f"long histories: {tables} tables x {snapshots} snapshots ({files} files, {snapshots - files} inlined "
          f"inserts each), {rounds} rounds, load average {sides.load_average()}; lakes in {work}", flush=True)
    wall = time.perf_counter()
    root, pristine = work / "lake", work / "pristine"
    try:
        built = sides.spawn(script, {"mode": "build", "root": str(root), "tables": tables, "snapshots": snapshots,
                                     "files": files})
        shutil.copytree(root, pristine)
        print(f"  built in {time.perf_counter() - wall:.0f} s: {built['snapshots']} snapshots, "
              f"{sum(t['files'] for t in built['fingerprint'].values())} files, "
              f"{sum(t['inlined'] for t in built['fingerprint'].values())} inlined rows", flush=True)
        scenario = sides.Scenario("compact, long histories", [SRDP, LOOP, CHECKPOINT], srdp=SRDP, goals={LOOP: GOAL})
        after: dict[str, Any] = {}

        def one(sc: sides.Scenario, side: str, turn: int) -> tuple[float, float]:
            shutil.rmtree(root)
            shutil.copytree(pristine, root)
            r = sides.spawn(script, {"mode": "run", "root": str(root), "side": side})
            v = sides.spawn(script, {"mode": "verify", "root": str(root), "middle": built["middle"]})
            fp = v["fingerprint"]
            bench.compare_lakes(f"{side} vs pristine", fp, built["fingerprint"], keys=("rows", "checksum"))
            sides.check(all(t["inlined"] == 0 for t in fp.values()), f"{side}: inlined rows left")
            sides.check(v["travel"] == built["travel"], f"{side}: time travel to snapshot {built['middle']} differs")
            first = after.setdefault("files", {n: t["files"] for n, t in fp.items()})
            sides.check({n: t["files"] for n, t in fp.items()} == first, f"{side}: other live files than another side")
            after.setdefault("snapshots_added", {})[side] = v["snapshots"] - built["snapshots"]
            after.setdefault("cpu_s", {}).setdefault(side, []).append(r["cpu_s"])
            return r["seconds"], r["rss_peak_mb"]

        sides.run_rounds([scenario], rounds, one, log=lambda line: print(line, flush=True))
    except sides.BenchError as error:
        print(f"\nFAILED: {error}\nlakes kept in {work}", file=sys.stderr)
        return 1
    scenario.extra.update(after)
    scenario.extra["live_files_after"] = sum(after["files"].values())
    table = sides.render([scenario])
    print()
    print(table)
    med = scenario.summary()["median_s"]
    print(f"\nper table: srdp {med[SRDP] / tables * 1000:.0f} ms, hand loop {med[LOOP] / tables * 1000:.0f} ms, "
          f"CHECKPOINT {med[CHECKPOINT] / tables * 1000:.0f} ms. Every side left the same rows, checksums and "
          f"{scenario.extra['live_files_after']} live files, no inlined row, and time travel to snapshot "
          f"{built['middle']}; snapshots added: "
          + ", ".join(f"{s} {n}" for s, n in after["snapshots_added"].items()))
    print("CPU seconds of the process during the call (median; both DuckDB threads): "
          + ", ".join(f"{s} {sides.median(v):.1f}" for s, v in after["cpu_s"].items()))
    print(f"ratio = srdp_compact / other side, the median of the per-round ratios (each side a fresh process on a "
          f"fresh copy; the order rotates by round). load: the 1-minute load average before each round (now "
          f"{sides.load_average()}). total wall time {time.perf_counter() - wall:.0f} s")
    sides.write_results(out_path, [scenario], table, tables=tables, snapshots=snapshots, files=files, rounds=rounds,
                        build={"snapshots": built["snapshots"], "middle": built["middle"]})
    print(f"results written to {out_path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
