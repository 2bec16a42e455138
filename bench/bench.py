#!/usr/bin/env python3
"""srdp maintenance benchmark: srdp's table functions against the plain DuckLake calls.

For every scale the benchmark builds one lake (SQLite catalog, local data) with plain DuckDB,
keeps a pristine copy, and for every scenario gives srdp and the hand-written DuckLake calls each
an identical copy. Each side runs in its own fresh Python process, so its peak RSS
(``ru_maxrss``) is the memory of exactly one maintenance call plus the interpreter, DuckDB and the
attach. Both sides must end with identical lakes (rows and checksum per table, live data files
per table, inlined rows per table); any difference fails the run.

    .venv/bin/python bench/bench.py            # full scale: 10, 100, 1000 datasets + 30,000 files
    .venv/bin/python bench/bench.py --quick    # small scale, for development

Results: a fixed-width table on stdout and JSON in bench/results/ (results.json, or
results-quick.json for --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "BENCH_RESULT "

# Lake layout per dataset (one table main.dNNNN (id BIGINT, v VARCHAR)), built in two transactions
# over all datasets, so every dataset has rows from two snapshots:
#   load 1: CREATE TABLE; one Parquet insert (FILE_ROWS rows); one inlined insert (INLINE_ROWS rows)
#   load 2: one Parquet insert; one inlined insert
# => 2 small Parquet files and 2 * INLINE_ROWS inlined rows per dataset.
INLINE_LIMIT = 1000
FILE_ROWS = 1500   # > INLINE_LIMIT: written as a Parquet file
INLINE_ROWS = 100  # <= INLINE_LIMIT: inlined in the catalog
LOADS = 2
# The many-files lake: one table main.many, FILES_ROWS rows per file, built with inlining off,
# FILES_PER_TXN inserts per transaction (each INSERT writes its own file, also inside a transaction).
FILES_ROWS = 10
FILES_PER_TXN = 100

# Where the hand-written SQL finds DuckLake's metadata (SQLite and DuckDB-file catalogs: main).
MAIN_META = "__ducklake_metadata_lake.main"


# srdp_catalog_pressure's threshold in the pressure scenario: below the inlined rows of every
# dataset, so every dataset is reported.
PRESSURE_THRESHOLD = 150


def hand_pressure_sql(meta: str = MAIN_META) -> str:
    """The pressure check a user writes by hand, after ``hand_count_sql``'s SET VARIABLE: the
    datasets (by name) whose inlined rows exceed the threshold."""
    return (
        f"SELECT t.table_name, sum(q.n) AS inlined_rows FROM query(getvariable('ducklake_inlined_count_sql')) q "
        f"JOIN {meta}.ducklake_table t ON t.table_id = q.table_id AND t.end_snapshot IS NULL "
        f"GROUP BY t.table_name HAVING sum(q.n) > {PRESSURE_THRESHOLD}"
    )


def hand_count_sql(meta: str = MAIN_META) -> list[str]:
    """The inlined-row count a user writes by hand, over the metadata schema ``meta``."""
    return [
        f"""SET VARIABLE ducklake_inlined_count_sql = (
    SELECT COALESCE(string_agg(format('SELECT {{}}::BIGINT AS table_id, count(*) AS n FROM {meta}.{{}}', table_id, table_name), ' UNION ALL '), 'SELECT NULL::BIGINT AS table_id, 0::BIGINT AS n')
    FROM {meta}.ducklake_inlined_data_tables)""",
        "SELECT table_id, sum(n) FROM query(getvariable('ducklake_inlined_count_sql')) GROUP BY table_id",
    ]


TOML = """[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = {limit}
"""


# ------------------------------------------------------------------------------------------------
# worker side: runs in a fresh process, prints one MARK line of JSON
# ------------------------------------------------------------------------------------------------

def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _peak_rss_mb() -> float:
    """Peak resident set of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def plain_connect(root: Path, inline_limit: int, override: bool, read_only: bool = False):
    """A plain DuckDB connection (no srdp) with the lake attached as srdp would attach it."""
    import duckdb
    import srdp

    con = duckdb.connect(config=srdp.duckdb_config())
    opts = [
        f"DATA_PATH {_lit(str(root / 'data' / 'lake') + '/')}",
        f"DATA_INLINING_ROW_LIMIT {inline_limit}",
        "META_JOURNAL_MODE 'WAL'",
        "META_BUSY_TIMEOUT 5000",
    ]
    if override:
        opts.insert(1, "OVERRIDE_DATA_PATH true")
    if read_only:
        opts.insert(0, "READ_ONLY")
    target = "ducklake:sqlite:" + str(root / "catalog" / "lake.sqlite")
    con.execute(f"ATTACH {_lit(target)} AS lake ({', '.join(opts)})")
    return con


def srdp_connect(root: Path):
    import srdp

    con = srdp.connect(config=str(root / "srdp.toml"))
    con.sql("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    return con


def meta_fingerprint(con, meta: str = MAIN_META) -> dict:
    """Per live table of schema main: table_id, live data files, inlined rows (metadata only)."""
    count_sql = hand_count_sql(meta)
    con.execute("BEGIN TRANSACTION")
    try:
        tables = con.sql(
            f"SELECT t.table_id, t.table_name FROM {meta}.ducklake_table t "
            f"JOIN {meta}.ducklake_schema s USING (schema_id) "
            "WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL AND s.schema_name = 'main' "
            "ORDER BY t.table_name"
        ).fetchall()
        files = dict(con.sql(
            f"SELECT table_id, count(*) FROM {meta}.ducklake_data_file "
            "WHERE end_snapshot IS NULL GROUP BY table_id"
        ).fetchall())
        con.execute(count_sql[0])
        inlined = {tid: int(n) for tid, n in con.sql(count_sql[1]).fetchall() if tid is not None}
    finally:
        con.execute("COMMIT")
    return {name: {"table_id": tid, "files": files.get(tid, 0), "inlined": inlined.get(tid, 0)}
            for tid, name in tables}


def fingerprint(con, meta: str = MAIN_META) -> dict:
    """meta_fingerprint plus rows and an order-independent checksum per table, read through
    DuckLake (one UNION ALL query per chunk of tables: a per-table query costs a DuckLake scan
    set-up each, which grows with the size of the catalog)."""
    out = meta_fingerprint(con, meta)
    names = list(out)
    for first in range(0, len(names), 250):
        query = " UNION ALL ".join(
            f"SELECT {_lit(n)} AS t, count(*) AS n, COALESCE(sum(hash(id, v)), 0)::VARCHAR AS c "
            f'FROM lake.main."{n}"' for n in names[first:first + 250])
        for name, rows, checksum in con.sql(query).fetchall():
            out[name].update(rows=rows, checksum=checksum)
    return out


def build(spec: dict) -> dict:
    """Builds the lake in spec['root'] with plain DuckDB (deterministic data)."""
    root = Path(spec["root"])
    (root / "catalog").mkdir(parents=True, exist_ok=True)
    (root / "data" / "lake").mkdir(parents=True, exist_ok=True)
    (root / "srdp.toml").write_text(TOML.format(limit=INLINE_LIMIT))
    start = time.perf_counter()
    if spec["kind"] == "datasets":
        con = plain_connect(root, INLINE_LIMIT, override=False)
        n = spec["datasets"]
        for load in range(LOADS):
            con.execute("BEGIN TRANSACTION")
            for i in range(n):
                t = f"lake.main.d{i:04d}"
                if load == 0:
                    con.execute(f"CREATE TABLE {t} (id BIGINT, v VARCHAR)")
                base = load * 1_000_000
                con.execute(f"INSERT INTO {t} SELECT {base} + range, 'd{i}-p{load}-' || range FROM range({FILE_ROWS})")
                base += 500_000
                con.execute(f"INSERT INTO {t} SELECT {base} + range, 'd{i}-i{load}-' || range FROM range({INLINE_ROWS})")
            con.execute("COMMIT")
    else:
        con = plain_connect(root, 0, override=False)  # inlining off: every INSERT writes a file
        con.execute("CREATE TABLE lake.main.many (id BIGINT, v VARCHAR)")
        files = spec["files"]
        for first in range(0, files, FILES_PER_TXN):
            con.execute("BEGIN TRANSACTION")
            for k in range(first, min(files, first + FILES_PER_TXN)):
                con.execute(
                    f"INSERT INTO lake.main.many SELECT {k * FILES_ROWS} + range, 'f{k}-' || range FROM range({FILES_ROWS})"
                )
            con.execute("COMMIT")
    seconds = time.perf_counter() - start
    fp = fingerprint(con)
    con.close()
    return {"build_s": seconds, "fingerprint": fp}


def run(spec: dict) -> dict:
    """One side of one scenario in a fresh process: attach, time the call(s), then peak RSS.
    (The lake is fingerprinted afterwards by a separate `verify` process.)"""
    root = Path(spec["root"])
    side, op = spec["side"], spec["op"]
    if op == "copy":
        return time_copy(root, spec["floor"])
    if side == "srdp":
        con = srdp_connect(root)
    else:
        con = plain_connect(root, INLINE_LIMIT, override=spec["override"])
    return time_calls(con, side, op, spec.get("repeats", 1))


HAND_LOOP_COLUMNS = ("table_name", "rows_flushed", "files_processed", "files_created")


def hand_loop(con, op: str) -> list[tuple]:
    """The hand-written maintenance of every table of schema main: per table
    ``ducklake_flush_inlined_data`` and, for ``op`` compact, ``ducklake_merge_adjacent_files``;
    one row of HAND_LOOP_COLUMNS per table."""
    tables = [r[0] for r in con.sql(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' "
        "AND schema_name = 'main' ORDER BY table_name").fetchall()]
    rows = []
    # execute, not the relation API: con.sql(...).fetchall() binds the merge in one
    # transaction and runs it in another, so DuckLake loads its snapshot twice
    # (bench/profile_steps.py); execute does both in one, the fastest correct form.
    for t in tables:
        flushed = con.execute(
            f"CALL ducklake_flush_inlined_data('lake', schema_name => 'main', table_name => {_lit(t)})"
        ).fetchall()
        merged = [(0, 0)]
        if op == "compact":
            merged = con.execute(
                f"SELECT files_processed, files_created FROM ducklake_merge_adjacent_files("
                f"'lake', {_lit(t)}, schema => 'main')").fetchall() or [(0, 0)]
        rows.append((t, sum(r[2] for r in flushed),
                     sum(m[0] for m in merged), sum(m[1] for m in merged)))
    return rows


def time_calls(con, side: str, op: str, repeats: int, meta: str = MAIN_META) -> dict:
    """Times ``op`` (count, flush, compact) through srdp or the hand-written DuckLake calls
    ``repeats`` times on ``con``; returns the times, peak RSS and what the calls reported."""
    count_sql = hand_count_sql(meta)
    rss_before = _peak_rss_mb()
    times, detail = [], {}
    for _ in range(repeats):
        start = time.perf_counter()
        if side == "srdp":
            call = {"count": "srdp_inlined_row_count('lake')", "flush": "srdp_flush('lake')",
                    "compact": "srdp_compact('lake')",
                    "pressure": f"srdp_catalog_pressure('lake', threshold := {PRESSURE_THRESHOLD})"}[op]
            cur = con.sql(f"SELECT * FROM {call}")
            cols, rows = cur.columns, cur.fetchall()
        elif op == "count":
            con.execute(count_sql[0])
            cols, rows = ["table_id", "n"], con.sql(count_sql[1]).fetchall()
        elif op == "pressure":
            con.execute(count_sql[0])
            cols, rows = ["table_name", "inlined_rows"], con.sql(hand_pressure_sql(meta)).fetchall()
        else:
            rows = hand_loop(con, op)
            cols = list(HAND_LOOP_COLUMNS)
        times.append(time.perf_counter() - start)
    rss_peak = _peak_rss_mb()
    result = [dict(zip(cols, r)) for r in rows]
    if op == "pressure":
        detail["counts"] = {r["table_name"]: int(r["inlined_rows"]) for r in result}
    elif op == "count":
        if side == "srdp":
            detail["counts"] = {r["table_name"]: r["inlined_rows"] for r in result}
        else:
            detail["counts_by_id"] = {str(r["table_id"]): int(r["n"]) for r in result if r["table_id"] is not None}
    else:
        detail["rows_flushed"] = sum(r["rows_flushed"] for r in result)
        if op == "compact":
            detail["files_processed"] = sum(r["files_processed"] for r in result)
            detail["files_created"] = sum(r["files_created"] for r in result)
    vm_hwm = _vm_hwm_mb()
    if side == "srdp":
        detail["srdp_version"] = con.sql("SELECT extension_version FROM srdp_version()").fetchone()[0]
    return {"seconds": times, "rss_before_mb": rss_before, "rss_peak_mb": rss_peak,
            "vm_hwm_mb": vm_hwm, **detail}


def time_copy(root: Path, floor: bool) -> dict:
    """The many-files table written into one Parquet file by a single COPY: the data path a merge
    cannot beat. `floor`: with `threads = 1` and DuckDB's external file cache off, the settings
    under which that COPY is fastest and smallest for tiny files (docs/research/merge-memory.md)."""
    con = plain_connect(root, 0, override=True)
    if floor:
        con.execute("SET threads = 1")
        con.execute("SET enable_external_file_cache = false")
    rss_before = _peak_rss_mb()
    start = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM lake.main.many) TO {_lit(str(root / 'copy.parquet'))} (FORMAT parquet)")
    seconds = time.perf_counter() - start
    rows = con.sql(f"SELECT count(*) FROM read_parquet({_lit(str(root / 'copy.parquet'))})").fetchone()[0]
    return {"seconds": [seconds], "rss_before_mb": rss_before, "rss_peak_mb": _peak_rss_mb(),
            "vm_hwm_mb": _vm_hwm_mb(), "rows": rows}


def verify(spec: dict) -> dict:
    """Full fingerprint of a lake, through a plain read-only attach (after the timed call)."""
    root = Path(spec["root"])
    con = plain_connect(root, INLINE_LIMIT, override=spec["override"], read_only=True)
    return {"fingerprint": fingerprint(con)}


def _vm_hwm_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def worker(spec: dict) -> None:
    out = {"build": build, "run": run, "verify": verify}[spec["mode"]](spec)
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------------
# orchestrator side
# ------------------------------------------------------------------------------------------------

class BenchError(RuntimeError):
    pass


def spawn_all(specs: list[dict]) -> list[dict]:
    """Runs workers concurrently (only ever used for untimed work: verification)."""
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for spec in specs]
    outs = []
    for spec, proc in zip(specs, procs):
        stdout, stderr = proc.communicate()
        lines = [l for l in stdout.splitlines() if l.startswith(MARK)]
        if proc.returncode != 0 or not lines:
            raise BenchError(f"worker {spec} failed (exit {proc.returncode}):\n{stderr}{stdout}")
        outs.append(json.loads(lines[-1][len(MARK):]))
    return outs


def spawn(spec: dict) -> dict:
    return spawn_all([spec])[0]


def fresh_copy(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise BenchError("RESULT MISMATCH: " + what)


def summarize_fp(fp: dict) -> dict:
    return {
        "tables": len(fp),
        "rows": sum(t["rows"] for t in fp.values()),
        "files": sum(t["files"] for t in fp.values()),
        "inlined": sum(t["inlined"] for t in fp.values()),
    }


def compare_lakes(label: str, a: dict, b: dict, keys=("rows", "checksum", "files", "inlined")) -> None:
    check(sorted(a) == sorted(b), f"{label}: different tables ({len(a)} vs {len(b)})")
    for name in a:
        for k in keys:
            check(a[name][k] == b[name][k], f"{label}: table {name} {k}: {a[name][k]} != {b[name][k]}")


def order_for(i: int) -> list[str]:
    """Which side runs first; alternates between scenarios and repeats."""
    return ["srdp", "plain"] if i % 2 == 0 else ["plain", "srdp"]


def side_summary(runs: list[dict]) -> dict:
    keep = ("rss_before_mb", "rows_flushed", "files_processed", "files_created", "srdp_version")
    s = {k: runs[0][k] for k in keep if k in runs[0]}
    s["seconds"] = [x for r in runs for x in r["seconds"]]
    s["median_s"] = statistics.median(s["seconds"])
    s["rss_peak_mb"] = max(r["rss_peak_mb"] for r in runs)
    s["vm_hwm_mb"] = max((r["vm_hwm_mb"] or 0) for r in runs)
    return s


def scenario_count(work: Path, pristine: dict, repeats: int, turn: int, op: str = "count") -> dict:
    """Both sides on the same (pristine) lake, one process each, `repeats` calls, median."""
    root = work / "srdp"
    out = {}
    for side in order_for(turn):
        out[side] = spawn({"mode": "run", "side": side, "op": op, "root": str(root),
                           "override": False, "repeats": repeats})
    expected = {name: t["inlined"] for name, t in pristine.items()}
    if op == "pressure":
        over = {k: v for k, v in expected.items() if v > PRESSURE_THRESHOLD}
        check(out["srdp"]["counts"] == over == out["plain"]["counts"],
              "pressure: srdp_catalog_pressure and the hand-written query differ from the lake's inlined rows")
        return {"files": None, "rows": sum(over.values()),
                "sides": {side: side_summary([r]) for side, r in out.items()}}
    check(out["srdp"]["counts"] == expected,
          "count: srdp_inlined_row_count differs from the lake's inlined rows")
    names = {str(t["table_id"]): name for name, t in pristine.items()}
    plain = {names[i]: n for i, n in out["plain"]["counts_by_id"].items() if n}
    check(plain == {k: v for k, v in expected.items() if v},
          "count: the hand-written SQL differs from the lake's inlined rows")
    return {"files": None, "rows": sum(expected.values()),
            "sides": {side: side_summary([r]) for side, r in out.items()}}


def scenario_maintain(op: str, work: Path, backup: Path, pristine: dict, repeats: int, turn: int,
                      bounded: bool = False) -> dict:
    """srdp on a fresh copy at the srdp root (the data path its toml names), plain on a fresh copy
    elsewhere attached with OVERRIDE_DATA_PATH; `repeats` times, each from the pristine backup.
    After each pair, both lakes are fingerprinted (untimed, concurrently) and compared.
    `bounded`: srdp merges in bounded calls, so its files processed and created count the
    intermediate files too; the lakes must still end the same."""
    runs = {"srdp": [], "plain": []}
    after = {}
    for rep in range(repeats):
        roots = {"srdp": work / "srdp", "plain": work / "plain"}
        for root in roots.values():
            fresh_copy(backup, root)
        for side in order_for(turn + rep):
            runs[side].append(spawn({"mode": "run", "side": side, "op": op, "root": str(roots[side]),
                                     "override": side == "plain", "repeats": 1}))
        fs, fp = (r["fingerprint"] for r in spawn_all(
            [{"mode": "verify", "root": str(roots[side]), "override": side == "plain"}
             for side in ("srdp", "plain")]))
        s, p = runs["srdp"][-1], runs["plain"][-1]
        compare_lakes(f"{op}: srdp vs plain", fs, fp)
        compare_lakes(f"{op}: srdp vs pristine", fs, pristine, keys=("rows", "checksum"))
        check(all(t["inlined"] == 0 for t in fs.values()), f"{op}: inlined rows left after the call")
        flushed = sum(t["inlined"] for t in pristine.values())
        check(s["rows_flushed"] == p["rows_flushed"] == flushed,
              f"{op}: rows flushed: srdp {s['rows_flushed']}, plain {p['rows_flushed']}, inlined {flushed}")
        if op == "compact" and not bounded:
            check(s["files_processed"] == p["files_processed"] and s["files_created"] == p["files_created"],
                  f"compact: merged files: srdp {s['files_processed']}->{s['files_created']}, "
                  f"plain {p['files_processed']}->{p['files_created']}")
            check(summarize_fp(fs)["files"] < summarize_fp(pristine)["files"],
                  "compact: the number of live data files did not go down")
        after = summarize_fp(fs)
    sides = {side: side_summary(rs) for side, rs in runs.items()}
    before = summarize_fp(pristine)["files"]
    if op == "flush":
        files = after["files"] - before  # Parquet files written by the flush
    else:
        files = sides["srdp"]["files_processed"]  # files the merge read and replaced
    return {"files": files, "rows": sides["srdp"]["rows_flushed"], "files_before": before,
            "files_after": after["files"], "sides": sides}


def scenario_copy(work: Path, backup: Path, pristine: dict, merged: dict) -> dict:
    """The many-files lake's rows written by one COPY, with DuckDB's defaults and at the floor
    (threads = 1, external file cache off), each in a fresh process, against the merges' figures."""
    rows = sum(t["rows"] for t in pristine.values())
    out = {"files": merged["files_before"], "merges": {side: {"s": merged["sides"][side]["median_s"],
                                                              "rss": merged["sides"][side]["rss_peak_mb"]}
                                                       for side in ("srdp", "plain")}}
    for label, floor in (("copy", False), ("copy_floor", True)):
        root = work / label
        fresh_copy(backup, root)
        r = spawn({"mode": "run", "side": "plain", "op": "copy", "root": str(root), "floor": floor})
        check(r["rows"] == rows, f"{label}: COPY wrote {r['rows']} rows, the lake holds {rows}")
        out[label] = {"s": r["seconds"][0], "rss": r["rss_peak_mb"]}
        shutil.rmtree(root, ignore_errors=True)
    print(f"  COPY of the same rows: defaults {out['copy']['s']:.2f} s / {out['copy']['rss']:.0f} MB, "
          f"floor {out['copy_floor']['s']:.2f} s / {out['copy_floor']['rss']:.0f} MB", flush=True)
    return out


def render_copies(copies: list[dict]) -> str:
    """The many-files merges against one COPY of the same rows (time ratio, peak RSS)."""
    head = ["many files", "way", "seconds", "peak RSS MB", "vs COPY defaults", "vs COPY floor"]
    aligns = ["<", "<", ">", ">", ">", ">"]
    body = []
    for c in copies:
        ways = [("srdp_compact", c["merges"]["srdp"]), ("plain merge", c["merges"]["plain"]),
                ("COPY, defaults", c["copy"]), ("COPY, threads=1 + cache off", c["copy_floor"])]
        for name, w in ways:
            body.append([f"{c['files']:,}", name, f"{w['s']:.2f}", f"{w['rss']:.0f}",
                         f"{w['s'] / c['copy']['s']:.2f}", f"{w['s'] / c['copy_floor']['s']:.2f}"])
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    lines = [fmt_row(head, widths, aligns), fmt_row(["-" * w for w in widths], widths, aligns)]
    lines += [fmt_row(b, widths, aligns) for b in body]
    return "\n".join(lines)


def fmt_row(cells, widths, aligns):
    return "  ".join(f"{c:{a}{w}}" for c, w, a in zip(cells, widths, aligns)).rstrip()


def render(results: list[dict]) -> str:
    head = ["scenario", "datasets", "files", "srdp s", "plain s", "ratio",
            "srdp files/s", "plain files/s", "srdp RSS MB", "plain RSS MB", "check"]
    aligns = ["<", ">", ">", ">", ">", ">", ">", ">", ">", ">", "<"]
    body = []
    for r in results:
        s, p = r["sides"]["srdp"], r["sides"]["plain"]
        files = r["files"]

        def rate(side):
            return f"{files / side['median_s']:,.0f}" if files and side["median_s"] > 0 else "-"

        body.append([
            r["scenario"], f"{r['datasets']:,}", f"{files:,}" if files is not None else "-",
            f"{s['median_s']:.3f}", f"{p['median_s']:.3f}", f"{r['ratio']:.2f}",
            rate(s), rate(p), f"{s['rss_peak_mb']:.0f}", f"{p['rss_peak_mb']:.0f}", r["check"],
        ])
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    lines = [fmt_row(head, widths, aligns), fmt_row(["-" * w for w in widths], widths, aligns)]
    lines += [fmt_row(b, widths, aligns) for b in body]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small scale (5 and 20 datasets, 300 files)")
    ap.add_argument("--datasets", help="comma-separated dataset counts (default 10,100,1000)")
    ap.add_argument("--scenarios", default="count,pressure,flush,compact",
                    help="comma-separated scenarios at each dataset scale (default: all four)")
    ap.add_argument("--files", type=int, help="files in the many-files lake (default 30000; 0 = skip)")
    ap.add_argument("--repeats", type=int, help="flush/compact repetitions per scale (default 5 up to 100 datasets, else 1)")
    ap.add_argument("--workdir", help="where to build the lakes (default: a new folder in $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the lakes after the run")
    ap.add_argument("--out", help="JSON result file (default bench/results/results[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return 0

    scales = [5, 20] if args.quick else [10, 100, 1000]
    if args.datasets is not None:  # "" = no dataset scales (only the many-files lake)
        scales = [int(x) for x in args.datasets.split(",") if x.strip()]
    files = args.files if args.files is not None else (300 if args.quick else 30_000)
    out_path = Path(args.out) if args.out else HERE / "results" / ("results-quick.json" if args.quick else "results.json")
    work_root = Path(tempfile.mkdtemp(prefix="srdp-bench-", dir=args.workdir))

    import duckdb
    import srdp

    if not srdp.extension_path().is_file():
        print(f"srdp extension not found at {srdp.extension_path()}; run `make release`", file=sys.stderr)
        return 2

    wall = time.perf_counter()
    results, builds, turn, copies = [], [], 0, []
    print(f"srdp bench: datasets {scales}, many-files lake {files:,} files; lakes in {work_root}", flush=True)
    try:
        plan = [("datasets", n) for n in scales] + ([("files", files)] if files else [])
        for kind, n in plan:
            work = work_root / f"{kind}-{n}"
            built_at, backup = work / "srdp", work / "pristine"
            t0 = time.perf_counter()
            spec = {"mode": "build", "kind": kind, "root": str(built_at)}
            spec.update({"datasets": n} if kind == "datasets" else {"files": n})
            b = spawn(spec)
            pristine = b["fingerprint"]
            shutil.copytree(built_at, backup)
            summary = summarize_fp(pristine)
            builds.append({"kind": kind, "n": n, "build_s": b["build_s"], **summary})
            print(f"  built {kind}={n:,}: {summary['tables']:,} tables, {summary['files']:,} files, "
                  f"{summary['inlined']:,} inlined rows in {b['build_s']:.1f} s", flush=True)
            datasets = n if kind == "datasets" else 1
            if kind == "datasets":
                scenarios = [sc for sc in ("count", "pressure", "flush", "compact") if sc in args.scenarios.split(",")]
                reps = args.repeats or (5 if n <= 100 else 1)
            else:
                scenarios = ["compact"]
                reps = args.repeats or 1
            for sc in scenarios:
                ts = time.perf_counter()
                if sc in ("count", "pressure"):
                    r = scenario_count(work, pristine, repeats=5 if n <= 100 else 3, turn=turn, op=sc)
                else:
                    r = scenario_maintain(sc, work, backup, pristine, reps, turn, bounded=kind == "files")
                turn += 1
                name = sc if kind == "datasets" else f"compact {n:,} files"
                s, p = r["sides"]["srdp"]["median_s"], r["sides"]["plain"]["median_s"]
                r.update({"scenario": name, "kind": kind, "datasets": datasets, "op": sc,
                          "ratio": s / p if p > 0 else float("nan"), "check": "ok",
                          "repeats": reps if sc not in ("count", "pressure") else len(r["sides"]["srdp"]["seconds"]),
                          "scenario_wall_s": time.perf_counter() - ts})
                results.append(r)
                print(f"  {name:<22} datasets={datasets:<5} srdp {s:8.3f} s  plain {p:8.3f} s  "
                      f"ratio {r['ratio']:.2f}  ({r['scenario_wall_s']:.0f} s)", flush=True)
                if kind == "files":
                    copies.append(scenario_copy(work, backup, pristine, r))
            print(f"  ({kind}={n:,} done in {time.perf_counter() - t0:.0f} s)", flush=True)
    except BenchError as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        print(f"lakes kept in {work_root}", file=sys.stderr)
        return 1
    wall_s = time.perf_counter() - wall

    table = render(results)
    if copies:
        table += "\n\n" + render_copies(copies)
    print()
    print(table)
    print()
    print(f"ratio = srdp seconds / plain seconds (below 1: srdp faster). seconds = median over "
          f"repeats; files/s = files / seconds (flush: Parquet files written; compact: files merged).")
    print(f"RSS = peak resident set (ru_maxrss) of the fresh process that ran the call. check: both "
          f"sides ended with the same rows, checksum, live files and inlined rows per table.")
    print(f"total wall time {wall_s:.0f} s ({wall_s / 60:.1f} min)")

    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "wall_s": wall_s,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "duckdb": duckdb.__version__},
        "srdp_extension": str(srdp.extension_path()),
        "srdp_version": next((r["sides"]["srdp"].get("srdp_version") for r in results), None),
        "layout": {"inline_limit": INLINE_LIMIT, "file_rows": FILE_ROWS, "inline_rows": INLINE_ROWS,
                   "loads": LOADS, "files_rows": FILES_ROWS, "files_per_txn": FILES_PER_TXN},
        "builds": builds,
        "results": results,
        "copies": copies,
        "table": table,
    }
    out_path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"results written to {out_path}")
    if not args.keep:
        shutil.rmtree(work_root, ignore_errors=True)
    else:
        print(f"lakes kept in {work_root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
