"""Tables that change: maintenance of a table after dbt-style merges, and the rewrite threshold.

**merges** (the issue's shape): a table of ``--rows`` rows (1,000,000) in one file, then 20 merges,
each deleting and re-inserting 2 % of the rows (random keys) in one transaction, with srdp's
inlining limit (1,000): the deletes against the big file land in its delete file, those against
the re-inserted files as inline deletion markers. Four copies of that lake, in the same run:

* ``srdp``: ``srdp_compact`` (flush, rewrite of every file that carries deletes, merge);
* ``hand``: the hand-written loop a user would write for the same result: flush, then
  ``ducklake_rewrite_data_files(delete_threshold => 0)``, then ``ducklake_merge_adjacent_files``;
* ``checkpoint``: DuckLake's ``CHECKPOINT lake`` with its default options (it runs flush,
  expire, merge, rewrite at ``rewrite_delete_threshold`` 0.95, and cleanups);
* ``fresh``: the same rows written once into a new lake (what a perfectly kept table scans like).

Each round builds nothing: it copies the pristine lake for each side, runs the sides in a fresh
process each (in an order that rotates by round), times the maintenance call, then scans the
table (a full aggregate over every column, and a selective filter) three times and keeps the
fastest. Printed: medians over the rounds of each side's time and of the per-round ratios
srdp/hand (maintenance) and side/fresh (scans), the machine's load average, and each side's
files and delete files afterwards; the run fails if srdp's rows differ from the hand side's.

**threshold**: when is a file at or above the target size worth rewriting? For a table of
``--threshold-rows`` rows in one file (counted as large: the target size is set below it), for
deleted shares of 5 to 50 %: the full scan with the deletes against the same rows rewritten,
and the rewrite's own time, so the break-even (how many scans one rewrite pays for) can be read.

**memory**: peak RSS of ``srdp_compact`` rewriting one file of about 1 GB with 30 % deleted, and
10,000 small files that each carry deletes (1 to 5 of their 10 rows: five deleted shares, so
srdp's calls of about 2,000 files each can split them; and all with one share, which no threshold
splits), each in a fresh process, beside the plain ``ducklake_rewrite_data_files`` on a copy.

    .venv/bin/python bench/bench_rewrite.py                       # all three, 5 rounds
    .venv/bin/python bench/bench_rewrite.py --parts merges --rounds 3 --rows 300000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

import srdp

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PY = sys.executable

SIDE = r"""
import json, sys, time, resource
from pathlib import Path
import duckdb, srdp

root, side, scans = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
cfg = root / "srdp.toml"
def hwm_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
con = srdp.connect(config=cfg)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
con.execute("SELECT count(*) FROM lake.main.t").fetchall()  # warm the attach
Path("/proc/self/clear_refs").write_text("5")
base = hwm_kb()
start = time.perf_counter()
if side == "srdp":
    report = con.execute("SELECT files_rewritten, files_after, status FROM srdp_compact('lake')").fetchall()
elif side == "hand":
    report = [con.execute("SELECT coalesce(sum(rows_flushed), 0) FROM ducklake_flush_inlined_data('lake', schema_name => 'main', table_name => 't')").fetchall(),
              con.execute("SELECT coalesce(sum(files_processed), 0) FROM ducklake_rewrite_data_files('lake', 't', schema => 'main', delete_threshold => 0)").fetchall(),
              con.execute("SELECT coalesce(sum(files_processed), 0) FROM ducklake_merge_adjacent_files('lake', 't', schema => 'main')").fetchall()]
elif side == "rewrite_only":
    report = con.execute("SELECT coalesce(sum(files_processed), 0) FROM ducklake_rewrite_data_files('lake', 't', schema => 'main', delete_threshold => 0)").fetchall()
elif side == "checkpoint":
    con.execute("CHECKPOINT lake")
    report = []
else:
    report = []
maintenance = time.perf_counter() - start
peak_kb = hwm_kb() - base
def best(sql):
    times = []
    for _ in range(scans):
        t = time.perf_counter(); con.execute(sql).fetchall(); times.append(time.perf_counter() - t)
    return min(times) if times else None
full = best("SELECT count(*), sum(hash(id)), sum(hash(v)), sum(hash(grp)), max(amount) FROM lake.main.t")
selective = best("SELECT count(*), sum(amount) FROM lake.main.t WHERE id % 1000 = 7")
m = "__ducklake_metadata_lake.main"
files = con.execute(f"SELECT count(*) FROM {m}.ducklake_data_file d JOIN {m}.ducklake_table t USING (table_id) WHERE t.table_name = 't' AND t.end_snapshot IS NULL AND d.end_snapshot IS NULL").fetchone()[0]
deletes = con.execute(f"SELECT count(*) FROM {m}.ducklake_delete_file x JOIN {m}.ducklake_data_file d USING (data_file_id) JOIN {m}.ducklake_table t ON t.table_id = d.table_id WHERE t.table_name = 't' AND t.end_snapshot IS NULL AND d.end_snapshot IS NULL AND x.end_snapshot IS NULL").fetchone()[0]
rows = con.execute("SELECT count(*), sum(hash(id, v, grp, amount))::VARCHAR FROM lake.main.t").fetchone()
print(json.dumps({"maintenance": maintenance, "full": full, "selective": selective, "files": files,
                  "delete_files": deletes, "rows": rows, "peak_kb": peak_kb, "report": [str(r) for r in report]}))
"""


def config(root: Path, target: str | None = None) -> None:
    (root / "srdp.toml").write_text(
        "[catalogs.lake]\n"
        f'metadata = "sqlite:{root / "catalog.sqlite"}"\n'
        f'data_path = "{root / "data"}/"\n'
    )


def plain(root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={
        "extension_directory": str(srdp.extension_directory()),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })
    con.execute(f"ATTACH 'ducklake:sqlite:{root / 'catalog.sqlite'}' AS lake "
                f"(DATA_PATH '{root / 'data'}/', DATA_INLINING_ROW_LIMIT 1000)")
    return con


def copy(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    db = sqlite3.connect(dst / "catalog.sqlite")
    db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{dst / 'data'}/"])
    db.commit()
    db.close()
    config(dst)


COLUMNS = "range AS id, md5(range::VARCHAR) AS v, range % 97 AS grp, (range * 7 % 1000)::DOUBLE AS amount"


def build_merges(root: Path, rows: int, merges: int) -> None:
    root.mkdir(parents=True)
    con = plain(root)
    con.execute(f"CREATE TABLE lake.main.t AS SELECT {COLUMNS} FROM range({rows})")
    for k in range(merges):
        con.execute("BEGIN")
        con.execute(f"DELETE FROM lake.main.t WHERE hash(id, {k}) % 50 = 0")
        con.execute(f"INSERT INTO lake.main.t SELECT range AS id, md5((range + {k + 1})::VARCHAR) AS v, "
                    f"range % 97 AS grp, (range * 7 % 1000)::DOUBLE AS amount FROM range({rows}) "
                    f"WHERE hash(range, {k}) % 50 = 0")
        con.execute("COMMIT")
    con.close()
    config(root)


def build_fresh(src: Path, dst: Path) -> None:
    """The same rows written once, into a new lake."""
    dst.mkdir(parents=True)
    source = plain(src)
    rows = source.execute("SELECT * FROM lake.main.t").arrow()
    source.close()
    con = plain(dst)
    con.register("rows", rows)
    con.execute("CREATE TABLE lake.main.t AS SELECT * FROM rows")
    con.close()
    config(dst)


def run_side(root: Path, side: str, scans: int = 3) -> dict:
    out = subprocess.run([PY, "-c", SIDE, str(root), side, str(scans)], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"{side} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    return statistics.median(values)


def merges(work: Path, rows: int, rounds: int) -> dict:
    base, fresh = work / "merges", work / "fresh"
    t = time.time()
    build_merges(base, rows, 20)
    build_fresh(base, fresh)
    print(f"built the {rows:,}-row lake after 20 merges in {time.time() - t:.0f} s", flush=True)
    before = run_side(base, "none", 0)
    print(f"before: {before['files']} files, {before['delete_files']} delete files", flush=True)
    sides = ["srdp", "hand", "checkpoint", "fresh"]
    results: dict[str, list[dict]] = {s: [] for s in sides}
    for r in range(rounds):
        order = sides[r % len(sides):] + sides[: r % len(sides)]
        for side in order:
            lake = fresh if side == "fresh" else work / f"r{r}_{side}"
            if side != "fresh":
                copy(base, lake)
            results[side].append(run_side(lake, side if side != "fresh" else "none"))
        print(f"round {r + 1}/{rounds}, load {os.getloadavg()[0]:.1f}: "
              + ", ".join(f"{s} {results[s][-1]['maintenance']:.2f} s / scan {results[s][-1]['full']:.3f} s" for s in sides),
              flush=True)
    if results["srdp"][0]["rows"] != results["hand"][0]["rows"] or results["srdp"][0]["rows"] != before["rows"]:
        raise SystemExit(f"RESULT MISMATCH: {results['srdp'][0]['rows']} {results['hand'][0]['rows']} {before['rows']}")
    ratio = {
        "compact srdp/hand": median([a["maintenance"] / b["maintenance"] for a, b in zip(results["srdp"], results["hand"])]),
        "compact checkpoint/hand": median([a["maintenance"] / b["maintenance"] for a, b in zip(results["checkpoint"], results["hand"])]),
    }
    for side in ("srdp", "hand", "checkpoint"):
        ratio[f"full scan {side}/fresh"] = median([a["full"] / f["full"] for a, f in zip(results[side], results["fresh"])])
        ratio[f"selective scan {side}/fresh"] = median(
            [a["selective"] / f["selective"] for a, f in zip(results[side], results["fresh"])])
    ratio["full scan before/fresh"] = before["full"] / median([f["full"] for f in results["fresh"]]) if before["full"] else None
    summary = {
        "rows": rows, "rounds": rounds, "load": os.getloadavg(),
        "before": {k: before[k] for k in ("files", "delete_files")},
        "sides": {s: {"maintenance_s": median([x["maintenance"] for x in results[s]]),
                      "full_scan_s": median([x["full"] for x in results[s]]),
                      "selective_scan_s": median([x["selective"] for x in results[s]]),
                      "files": results[s][-1]["files"], "delete_files": results[s][-1]["delete_files"]}
                  for s in sides},
        "ratios": ratio,
    }
    print(json.dumps(summary, indent=2), flush=True)
    return summary


def threshold(work: Path, rows: int, rounds: int) -> dict:
    """Scan with deletes vs the same rows rewritten, and the rewrite's cost, per deleted share."""
    out = {}
    for share in (0.05, 0.1, 0.2, 0.3, 0.5):
        base = work / f"share{int(share * 100)}"
        base.mkdir(parents=True)
        con = plain(base)
        con.execute(f"CREATE TABLE lake.main.t AS SELECT {COLUMNS} FROM range({rows})")
        con.execute(f"DELETE FROM lake.main.t WHERE hash(id) % 1000 < {int(share * 1000)}")
        con.close()
        config(base)
        with_deletes, rewritten, cost = [], [], []
        for r in range(rounds):
            kept = run_side(base, "none")
            lake = work / f"share{int(share * 100)}_r{r}"
            copy(base, lake)
            done = run_side(lake, "rewrite_only")
            with_deletes.append(kept["full"])
            rewritten.append(done["full"])
            cost.append(done["maintenance"])
        scan, clean, rewrite = median(with_deletes), median(rewritten), median(cost)
        out[share] = {"scan_with_deletes_s": scan, "scan_rewritten_s": clean, "scan_ratio": scan / clean,
                      "rewrite_s": rewrite,
                      # None: the rewritten file scans no faster, the rewrite never pays back.
                      "scans_to_pay_back": rewrite / (scan - clean) if scan > clean else None}
        print(f"share {share:.2f}: scan {scan:.3f} s vs {clean:.3f} s rewritten ({scan / clean:.2f}x); "
              f"rewrite {rewrite:.2f} s = {pay_back(out[share]['scans_to_pay_back'])} "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    return out


MEMORY = r"""
import json, sys
from pathlib import Path
import srdp
root, side = Path(sys.argv[1]), sys.argv[2]
def hwm_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
con = srdp.connect(config=root / "srdp.toml")
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
con.execute("SELECT * FROM srdp_compact('lake', dry_run := true)").fetchall()
Path("/proc/self/clear_refs").write_text("5")
base = hwm_kb()
if side == "srdp":
    row = con.execute("SELECT files_rewritten, status FROM srdp_compact('lake')").fetchall()
else:
    row = con.execute("SELECT * FROM ducklake_rewrite_data_files('lake', 't', schema => 'main', delete_threshold => 0)").fetchall()
print(json.dumps({"growth_kb": hwm_kb() - base, "base_kb": base, "row": str(row)[:300]}))
"""


def memory(work: Path) -> dict:
    out = {}
    # One file of about 1 GB (random strings do not compress), 30 % of its rows deleted.
    big = work / "big"
    big.mkdir(parents=True)
    con = plain(big)
    con.execute("SET preserve_insertion_order = false")
    con.execute("CREATE TABLE lake.main.t AS SELECT range AS id, md5(range::VARCHAR) || md5((range + 1)::VARCHAR) "
                "|| md5((range + 2)::VARCHAR) AS v FROM range(24000000)")
    size = con.execute("SELECT sum(file_size_bytes) FROM __ducklake_metadata_lake.main.ducklake_data_file").fetchone()[0]
    con.execute("DELETE FROM lake.main.t WHERE id % 10 < 3")
    con.close()
    config(big)
    print(f"1 file of {size / 1e9:.2f} GB, 30 % deleted", flush=True)
    # 10,000 small files that each carry deletes (inlining off: one file per INSERT).
    for name, deleted in (("many", "id % 10 < (id // 10) % 5 + 1"), ("many_one_share", "id % 10 = 3")):
        many = work / name
        many.mkdir(parents=True)
        con = duckdb.connect(config={"extension_directory": str(srdp.extension_directory()),
                                     "autoinstall_known_extensions": "false", "autoload_known_extensions": "true"})
        con.execute(f"ATTACH 'ducklake:sqlite:{many / 'catalog.sqlite'}' AS lake (DATA_PATH '{many / 'data'}/', "
                    "DATA_INLINING_ROW_LIMIT 0)")
        con.execute("CREATE TABLE lake.main.t (id BIGINT, v VARCHAR)")
        for first in range(0, 10000, 200):
            con.execute("BEGIN")
            for k in range(first, first + 200):
                con.execute(f"INSERT INTO lake.main.t SELECT {k} * 10 + range, md5(range::VARCHAR) FROM range(10)")
            con.execute("COMMIT")
        con.execute(f"DELETE FROM lake.main.t WHERE {deleted}")
        con.close()
        config(many)
    for name, lake in (("1 GB file", big), ("10,000 small files, five shares", work / "many"),
                       ("10,000 small files, one share", work / "many_one_share")):
        for side in ("plain", "srdp"):
            copy(lake, work / f"{lake.name}_{side}")
            run = subprocess.run([PY, "-c", MEMORY, str(work / f"{lake.name}_{side}"), side],
                                 capture_output=True, text=True, timeout=3600)
            if run.returncode != 0:
                raise SystemExit(f"memory {name} {side} failed:\n{run.stderr[-3000:]}")
            result = json.loads(run.stdout.strip().splitlines()[-1])
            out[f"{name} {side}"] = result
            print(f"{name}, {side}: peak RSS grew {result['growth_kb'] / 1024:.0f} MB over "
                  f"{result['base_kb'] / 1024:.0f} MB ({result['row']})", flush=True)
    return out


def pay_back(scans: float | None) -> str:
    """How many scans' saving one rewrite costs, as printed."""
    return "never paid back (no faster scan)" if scans is None else f"{scans:.0f} scans' saving"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="merges,threshold,memory")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--threshold-rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="srdp-bench-rewrite-"))
    parts = args.parts.split(",")
    report: dict = {"load_at_start": os.getloadavg()}
    try:
        if "merges" in parts:
            report["merges"] = merges(work, args.rows, args.rounds)
        if "threshold" in parts:
            report["threshold"] = threshold(work, args.threshold_rows, max(3, args.rounds // 2))
        if "memory" in parts:
            report["memory"] = memory(work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
