"""Where the time of "every dataset has work" goes, statement by statement.

Builds two identical lakes of N datasets (bench.py's layout: inlined rows and small files in
every dataset), runs srdp_compact on one and the hand-written loop of
ducklake_flush_inlined_data + ducklake_merge_adjacent_files on the other, each with DuckDB's
QueryLog on, and splits each side's wall time by the statements in the log: srdp's own
statements (planning read, commit labels, the guard's read, the settle read, BEGIN/SET) and
DuckLake's (the flush and merge calls, COMMIT, and the metadata queries DuckLake runs for them).
The time of a statement is the gap to the next logged statement of the same run, so a call's
Parquet work lands on the last metadata query before it.

    .venv/bin/python bench/profile_steps.py                 # 100 datasets
    .venv/bin/python bench/profile_steps.py --datasets 30
    .venv/bin/python bench/profile_steps.py --history       # bench_history.py's lake: 50 tables x 40 snapshots

Each line: the statements of that kind, their time and their number per dataset.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import bench_history  # noqa: E402

# srdp's own statements, by what they contain; everything else in the log is DuckLake's.
SRDP_STATEMENTS = [
    ("commit label (set_commit_message)", r"set_commit_message"),
    ("guard: first row ids before the merge", r"SELECT data_file_id(::BIGINT)?, row_id_start"),
    ("settle: latest snapshot after the dataset", r"max\(snapshot_id\)( AS latest)? FROM"),
    ("SET / RESET of the caller's settings", r"^(SET|RESET) "),
    # The planning read's inlined counts, run by the catalog database in a transaction of their own.
    ("planning read (before the first step)", r"^SELECT table_id::BIGINT AS table_id, n::BIGINT AS n FROM (sqlite|postgres)_query\("),
]
DUCKLAKE_CALLS = [
    ("ducklake_flush_inlined_data", r"ducklake_flush_inlined_data"),
    ("ducklake_merge_adjacent_files", r"ducklake_merge_adjacent_files"),
    ("COMMIT", r"^COMMIT"),
    # srdp's own BEGIN (two per dataset) and DuckLake's internal ones look alike.
    ("BEGIN TRANSACTION (srdp's and DuckLake's)", r"^BEGIN"),
]


def classify(statement: str, srdp_side: bool, planning: bool) -> tuple[str, str]:
    """(whose work, what) for one logged statement of the srdp side or the plain side."""
    text = statement.strip()
    for what, pattern in DUCKLAKE_CALLS:
        if re.search(pattern, text):
            return "ducklake", what
    if srdp_side:
        for what, pattern in SRDP_STATEMENTS:
            if re.search(pattern, text):
                return "srdp", what
    if planning:
        return ("srdp", "planning read (before the first step)") if srdp_side else ("caller", "listing the tables")
    if "__ducklake_metadata_" in text:
        return "ducklake", "DuckLake's metadata queries"
    return "other", "other"


def profile(con, sql_steps, srdp_side: bool) -> tuple[float, dict[tuple[str, str], float], int, dict[tuple[str, str], int]]:
    """Runs `sql_steps(con)` with the QueryLog on; returns the wall time, the seconds per
    (side, what), the number of logged statements and the statements per (side, what)."""
    con.execute("CALL truncate_duckdb_logs()")
    con.execute("CALL enable_logging('QueryLog')")
    start = time.perf_counter()
    sql_steps(con)
    wall = time.perf_counter() - start
    con.execute("CALL disable_logging()")
    logs = con.sql(
        "SELECT timestamp, message FROM duckdb_logs WHERE type = 'QueryLog' ORDER BY timestamp"
    ).fetchall()
    keys = []
    planning = True
    for _, message in logs:
        if re.match(r"\s*(BEGIN|CALL ducklake_flush|SELECT files_processed)", message):
            planning = False
        keys.append(classify(message, srdp_side, planning))
    # The BEGIN right before one of srdp's statements is srdp's, and so is the COMMIT right
    # after one of its reads (srdp reads the catalog database in a transaction of its own).
    for i, key in enumerate(keys):
        if key[0] != "srdp":
            continue
        if i > 0 and keys[i - 1][1].startswith("BEGIN"):
            keys[i - 1] = ("srdp", "BEGIN / COMMIT of srdp's own")
        if "read" in key[1] or key[1].startswith(("guard", "settle")):
            if i + 1 < len(keys) and keys[i + 1][1] == "COMMIT":
                keys[i + 1] = ("srdp", "BEGIN / COMMIT of srdp's own")
    spent: dict[tuple[str, str], float] = {}
    counted: dict[tuple[str, str], int] = {}
    for key, (t0, _), (t1, _) in zip(keys, logs, logs[1:]):
        spent[key] = spent.get(key, 0.0) + (t1 - t0).total_seconds()
    for key in keys:
        counted[key] = counted.get(key, 0) + 1
    # Per statement shape (numbers and quoted text replaced), for --detail.
    shapes: dict[str, list[float]] = {}
    for (t0, message), (t1, _) in zip(logs, logs[1:]):
        entry = shapes.setdefault(shape(message), [0.0, 0])
        entry[0] += (t1 - t0).total_seconds()
        entry[1] += 1
    DETAIL.append(shapes)
    return wall, spent, len(logs), counted


#: Per profiled side, in order: {statement shape: [seconds, count]}.
DETAIL: list[dict[str, list[float]]] = []


def shape(statement: str) -> str:
    """A statement with its numbers and quoted strings replaced, whitespace folded, cut at 110."""
    text = re.sub(r"'(?:[^']|'')*'", "'?'", " ".join(statement.split()))
    return re.sub(r"\b\d+\b", "N", text)[:110]


def plain_loop(con) -> None:
    bench.hand_loop(con, "compact")


def srdp_compact(con) -> None:
    con.sql("SELECT * FROM srdp_compact('lake')").fetchall()


def render(n: int, sides: dict[str, tuple[float, dict, int]]) -> str:
    lines = []
    for side, (wall, spent, logged, counted) in sides.items():
        lines.append(f"{side}: {wall:.3f} s wall, {wall / n * 1000:.1f} ms per dataset, {logged} statements logged "
                     f"({logged / n:.1f} per dataset)")
        for (owner, what), seconds in sorted(spent.items(), key=lambda kv: (kv[0][0] != "srdp", -kv[1])):
            lines.append(f"  {owner:8s} {what:45s} {seconds * 1000:9.1f} ms  {seconds / n * 1000:6.2f} ms/dataset  "
                         f"{counted.get((owner, what), 0) / n:5.1f} statements/dataset")
        own = sum(s for (owner, _), s in spent.items() if owner == "srdp")
        lines.append(f"  {'':8s} {'srdp statements in total':45s} {own * 1000:9.1f} ms  {own / n * 1000:6.2f} ms/dataset")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=None, help="datasets (default 100; --history: 50)")
    ap.add_argument("--detail", type=int, default=0, metavar="K",
                    help="also print each side's K costliest statement shapes (time and count per dataset)")
    ap.add_argument("--history", action="store_true",
                    help="bench_history.py's lake: every table with 40 snapshots, 10 files and 30 inlined inserts")
    args = ap.parse_args()
    n = args.datasets or (bench_history.TABLES if args.history else 100)
    with tempfile.TemporaryDirectory(prefix="srdp-profile-") as work:
        roots = {side: Path(work) / side for side in ("srdp", "plain")}
        for root in roots.values():
            if args.history:
                bench_history.build({"root": str(root), "tables": n, "snapshots": bench_history.SNAPSHOTS,
                                     "files": bench_history.FILES})
            else:
                bench.build({"root": str(root), "kind": "datasets", "datasets": n})
        sides = {}
        con = bench.srdp_connect(roots["srdp"])
        sides["srdp_compact"] = profile(con, srdp_compact, srdp_side=True)
        con.close()
        con = bench.plain_connect(roots["plain"], bench.INLINE_LIMIT, override=False)
        sides["hand-written loop"] = profile(con, plain_loop, srdp_side=False)
        con.close()
        fps = [bench.spawn({"mode": "verify", "root": str(roots[s]), "override": False})["fingerprint"]
               for s in ("srdp", "plain")]
        bench.compare_lakes("profile: srdp vs plain", fps[0], fps[1])
    lake = "long histories (bench_history.py)" if args.history else "every dataset has work"
    print(f"{lake}, {n} datasets (SQLite catalog, local data)")
    print(render(n, sides))
    for side, shapes in zip(sides, DETAIL if args.detail else []):
        print(f"\n{side}: the {args.detail} costliest statement shapes (ms and statements per dataset)")
        for text, (seconds, count) in sorted(shapes.items(), key=lambda kv: -kv[1][0])[: args.detail]:
            print(f"  {seconds / n * 1000:7.2f} ms  {count / n:5.1f}x  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
