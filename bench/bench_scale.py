#!/usr/bin/env python3
"""srdp at scale on a PostgreSQL catalog with S3 data: 1,000 to 10,000 datasets.

One lake per scale (N tables main.dNNNNN, one Parquet file of FILE_ROWS rows each: already
compacted), of which CHANGED datasets changed since the last pass (an inlined append of a few
rows each). Built with plain DuckDB, CREATE TABLEs and inserts BATCH tables per transaction,
timed separately (not part of any figure). Copies of a lake are PostgreSQL databases made with
``CREATE DATABASE ... TEMPLATE`` that share its S3 prefix (no side deletes files: DuckLake's flush
and merge add files and retire old ones in the catalog only; srdp never deletes files).

Per scale, each in a fresh process (servers and lakes as bench/bench_pg.py, whose helpers this
imports):

* **steady state**: ``srdp_compact`` on one copy against the hand-written loop
  (``ducklake_flush_inlined_data`` + ``ducklake_merge_adjacent_files`` with ``execute`` over every
  table, as bench/bench_steady.py) on another, same run; both must end with the same live files,
  snapshots and inlined rows. The loop stops after ``--plain-budget`` seconds: its figure is then
  its time per dataset over the datasets it did, times N (marked ``extrapolated``; no state check).
* **reads** (the largest scale): ``srdp_inlined_row_count`` and ``srdp_catalog_pressure``.
* **Dagster** (the largest scale): srdp's maintenance job (``srdp_definitions``, job
  ``srdp_dataset_maintenance``, ``execute_in_process`` on a SQLite-backed instance in a temporary
  DAGSTER_HOME) on a third copy: run-start overhead, where the time goes (timestamps of the
  run's events and of the job's srdp_compact call), events by type, the bytes of the run's events
  in the instance's storage, and peak RSS.
* **IO manager** (the largest scale against a 10-table lake): one small pandas write through
  ``SrdpIOManager`` in ``dg.materialize``: attach, ownership check and the whole write.

    .venv/bin/python bench/bench_scale.py                          # 1,000 datasets (make bench)
    .venv/bin/python bench/bench_scale.py --datasets 1000,3000,10000

Results: a summary on stdout and JSON in bench/results/scale.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import secrets
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench import FILE_ROWS, MARK, BenchError  # noqa: E402
from bench_pg import (  # noqa: E402
    BUCKET,
    META_SCHEMA,
    WRITER_SECRET,
    Lakes,
    _reap,
    create_secrets,
    plain_connect,
    srdp_connect,
)

CHANGED = 100       # datasets changed since the last pass, at every scale
CHANGED_ROWS = 5    # rows of each change (inlined: below the inlining limit)
BATCH = 500         # tables created per build transaction
IO_SMALL = 10       # datasets of the small lake the IO manager's write is compared on
IO_REPEATS = 5
READ_REPEATS = 3

# The IO manager writes schema `bench`, owned by writer io_manager.
IO_SCHEMA = """
[catalogs.lake.schemas.bench]
writer = "io_manager"
layer = "curated"
"""


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Recorder:
    """Collects the SQL create_secrets sends: the CREATE SECRET statements for Dagster's resources."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def execute(self, sql: str) -> None:
        self.sql.append(sql)


def secret_statements(spec: dict) -> list[str]:
    rec = _Recorder()
    create_secrets(rec, spec)
    return rec.sql


# ------------------------------------------------------------------------------------------------
# workers (fresh processes; spec with credentials on stdin)
# ------------------------------------------------------------------------------------------------

def changed_tables(n: int) -> list[str]:
    return [f"d{i:05d}" for i in range(0, n, max(1, n // CHANGED))][:CHANGED]


def w_build(spec: dict) -> dict:
    """N tables with one Parquet file each, BATCH per transaction; then CHANGED inlined appends."""
    con = plain_connect(spec)
    n = spec["datasets"]
    start = time.perf_counter()
    for first in range(0, n, BATCH):
        con.execute("BEGIN TRANSACTION")
        for i in range(first, min(n, first + BATCH)):
            t = f"lake.main.d{i:05d}"
            con.execute(f"CREATE TABLE {t} (id BIGINT, v VARCHAR)")
            con.execute(f"INSERT INTO {t} SELECT range, 'd{i}-' || range FROM range({FILE_ROWS})")
        con.execute("COMMIT")
    tables_s = time.perf_counter() - start
    con.execute("BEGIN TRANSACTION")
    for t in changed_tables(n):
        con.execute(f"INSERT INTO lake.main.{t} SELECT 10000000 + range, 'changed' FROM range({CHANGED_ROWS})")
    con.execute("COMMIT")
    con.close()
    return {"build_s": time.perf_counter() - start, "tables_s": tables_s}


def w_srdp(spec: dict) -> dict:
    """Reads (optional), then one steady-state srdp_compact, timed."""
    import srdp

    con = srdp_connect(spec)
    out: dict[str, Any] = {"rss_before_mb": rss_mb()}
    if spec.get("reads"):
        for name, fn, kw in (("count", "srdp_inlined_row_count", {}), ("pressure", "srdp_catalog_pressure", {"threshold": 1})):
            times, rows = [], None
            for _ in range(READ_REPEATS):
                t = time.perf_counter()
                rows = srdp.call(con, fn, "lake", **kw)
                times.append(time.perf_counter() - t)
            out[name] = {"seconds": times, "rows": len(rows)}
        inlined = sum(int(r["inlined_rows"]) for r in srdp.call(con, "srdp_inlined_row_count", "lake"))
        if inlined != CHANGED_ROWS * len(changed_tables(spec["datasets"])):
            raise BenchError(f"srdp_inlined_row_count: {inlined} inlined rows, built {CHANGED_ROWS * CHANGED}")
    if spec.get("profile"):
        # Where the time goes: DuckDB's QueryLog split by statement (bench/profile_steps.py).
        import profile_steps

        got: list = []
        wall, spent, logged = profile_steps.profile(
            con, lambda c: got.append(srdp.call(c, "srdp_compact", "lake")), srdp_side=True)
        rows = got[0]
        out["seconds"] = wall
        out["profile"] = {"statements_logged": logged,
                          "seconds": {f"{owner}: {what}": s for (owner, what), s in sorted(spent.items(), key=lambda kv: -kv[1])}}
    else:
        t = time.perf_counter()
        rows = srdp.call(con, "srdp_compact", "lake")
        out["seconds"] = time.perf_counter() - t
    out["datasets"] = len(rows)
    out["merged"] = sum(1 for r in rows if r["files_processed"])
    out["rows_flushed"] = sum(int(r["rows_flushed"] or 0) for r in rows)
    out["rss_mb"] = rss_mb()
    con.close()
    return out


def w_plain(spec: dict) -> dict:
    """The hand-written loop over every table (bench_steady.py's), stopped after the budget."""
    con = plain_connect(spec)
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' AND schema_name = 'main' ORDER BY 1").fetchall()]
    budget = spec.get("budget_s") or float("inf")
    done = 0
    start = time.perf_counter()
    for t in tables:
        con.execute(f"SELECT * FROM ducklake_flush_inlined_data('lake', schema_name => 'main', table_name => '{t}')").fetchall()
        con.execute(f"SELECT * FROM ducklake_merge_adjacent_files('lake', '{t}', schema => 'main')").fetchall()
        done += 1
        if time.perf_counter() - start > budget:
            break
    seconds = time.perf_counter() - start
    con.close()
    return {"seconds": seconds, "datasets_done": done, "datasets": len(tables), "rss_mb": rss_mb()}


def w_dagster(spec: dict) -> dict:
    """srdp's maintenance job through Dagster, with timestamps of where its time goes."""
    home = Path(spec["dagster_home"])
    home.mkdir(parents=True)
    os.environ["DAGSTER_HOME"] = str(home)
    import collections
    import sqlite3

    import dagster as dg

    import srdp.dagster.maintenance as maintenance
    from srdp import dagster as sd

    marks: dict[str, float] = {}

    def timed(name: str, fn):
        def wrapper(*a, **kw):
            marks[f"{name}_start"] = time.time()
            try:
                return fn(*a, **kw)
            finally:
                marks[f"{name}_end"] = time.time()
        return wrapper

    # Instrumentation only: the job calls these module functions by name.
    maintenance.maintain_catalog = timed("compact", maintenance.maintain_catalog)
    maintenance._health_after = timed("health", maintenance._health_after)
    defs = sd.srdp_definitions(spec["toml"], secrets=secret_statements(spec))
    job = defs.resolve_job_def(sd.MAINTENANCE_JOB)
    rss_before = rss_mb()
    with dg.DagsterInstance.get() as instance:
        t0 = time.time()
        result = job.execute_in_process(instance=instance)
        t1 = time.time()
        if not result.success:
            raise BenchError("maintenance job failed")
        logs = instance.all_logs(result.run_id)
    kinds = collections.Counter(e.dagster_event.event_type_value if e.dagster_event else "LOG" for e in logs)
    first = {}
    for e in logs:
        k = e.dagster_event.event_type_value if e.dagster_event else "LOG"
        if k == "LOG" and not (e.user_message or "").startswith("srdp: lake."):
            continue
        first.setdefault(k, e.timestamp)
    last = {}
    for e in logs:
        last[e.dagster_event.event_type_value if e.dagster_event else "LOG"] = e.timestamp
    outputs = [e for e in logs if e.dagster_event and e.dagster_event.event_type_value == "STEP_OUTPUT"]
    # The datasets per status, from the job's one output (its log has a line per dataset that had
    # a step and a few per catalog for the rest).
    statuses = result.output_for_node("srdp_maintain_datasets", "summary")["by_status"]
    storage = {}
    for db in sorted(home.rglob("*.db")):
        c = sqlite3.connect(db)
        try:
            n, size = c.execute("SELECT count(*), coalesce(sum(length(event)), 0) FROM event_logs WHERE run_id = ?",
                                [result.run_id]).fetchone()
        except sqlite3.Error:
            n, size = None, None
        c.close()
        storage[str(db.relative_to(home))] = {"file_bytes": db.stat().st_size, "run_events": n, "run_event_bytes": size}
    rel = lambda t: round(t - t0, 3)  # noqa: E731
    return {
        "total_s": t1 - t0,
        "marks_s": {
            "run_start": rel(first.get("RUN_START", first.get("PIPELINE_START", t0))),
            "step_start": rel(first["STEP_START"]),
            "compact_start": rel(marks["compact_start"]),
            "compact_end": rel(marks["compact_end"]),
            "health_end": rel(marks["health_end"]),
            "first_dataset_log": rel(first.get("LOG", t1)),
            "first_output": rel(outputs[0].timestamp),
            "last_output": rel(outputs[-1].timestamp),
            "step_success": rel(first["STEP_SUCCESS"]),
            "run_success": rel(first.get("RUN_SUCCESS", first.get("PIPELINE_SUCCESS", t1))),
            "returned": rel(t1),
        },
        "events": dict(kinds),
        "events_total": len(logs),
        "statuses": dict(statuses),
        "storage": storage,
        "rss_before_mb": rss_before,
        "rss_mb": rss_mb(),
    }


def w_io(spec: dict) -> dict:
    """One small pandas write through SrdpIOManager, IO_REPEATS + 1 times in this process
    (the first attaches), plus the attach and the ownership check alone."""
    import dagster as dg
    import pandas as pd

    import srdp
    from srdp.dagster.io_manager import SrdpIOManager

    stmts = secret_statements(spec)
    attach = []
    for _ in range(2):
        t = time.perf_counter()
        con = srdp_connect(spec)
        attach.append(time.perf_counter() - t)
    check = []
    for _ in range(IO_REPEATS):
        t = time.perf_counter()
        srdp.call(con, "srdp_check_writer", "lake", "bench", "io_manager")
        check.append(time.perf_counter() - t)
    con.close()
    handle: list[float] = []

    class Timed(SrdpIOManager):
        def handle_output(self, context, obj):  # noqa: ANN001
            t = time.perf_counter()
            super().handle_output(context, obj)
            handle.append(time.perf_counter() - t)

    @dg.asset(key=["bench", "probe"])
    def probe():  # noqa: ANN202 - Dagster resolves annotations at module scope
        return pd.DataFrame({"id": range(10), "v": [f"r{i}" for i in range(10)]})

    io = Timed(config_path=spec["toml"], secrets=stmts)
    whole = []
    for _ in range(IO_REPEATS + 1):
        t = time.perf_counter()
        if not dg.materialize([probe], resources={"io_manager": io}).success:
            raise BenchError("materialize failed")
        whole.append(time.perf_counter() - t)
    return {"attach_s": attach, "check_writer_s": check, "handle_output_s": handle, "materialize_s": whole,
            "rss_mb": rss_mb()}


def worker() -> None:
    spec = json.loads(sys.stdin.read())
    fn = {"build": w_build, "srdp": w_srdp, "plain": w_plain, "dagster": w_dagster, "io": w_io}[spec["mode"]]
    out = fn(spec)
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------------
# orchestrator
# ------------------------------------------------------------------------------------------------

_LIVE: set[subprocess.Popen] = set()


def spawn(spec: dict) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _LIVE.add(proc)
    try:
        stdout, stderr = proc.communicate(json.dumps(spec))
    finally:
        _LIVE.discard(proc)
    lines = [line for line in stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        shown = {k: v for k, v in spec.items() if k not in ("pg", "s3")}
        raise BenchError(f"worker {shown} failed (exit {proc.returncode}):\n{stderr[-4000:]}{stdout[-2000:]}")
    return json.loads(lines[-1][len(MARK):])


def clone(lakes: Lakes, spec: dict, suffix: str) -> dict:
    """A copy of the lake: a PostgreSQL database from the lake's as template, same S3 prefix."""
    database = f"{spec['database']}_{suffix}"
    lakes.servers.psql(f"CREATE DATABASE {database} TEMPLATE {spec['database']}")
    toml = Path(spec["toml"]).with_name(f"srdp_{suffix}.toml")
    toml.write_text(Path(spec["toml"]).read_text().replace(f"dbname={spec['database']} ", f"dbname={database} "))
    copy = {**spec, "database": database, "toml": str(toml)}
    lakes.vacuum(copy)
    return copy


def state(lakes: Lakes, spec: dict) -> dict:
    q = lambda sql: lakes.servers.psql(sql, spec["database"]).strip()  # noqa: E731
    return {
        "live_files": int(q(f"SELECT count(*) FROM {META_SCHEMA}.ducklake_data_file WHERE end_snapshot IS NULL")),
        "snapshots": int(q(f"SELECT count(*) FROM {META_SCHEMA}.ducklake_snapshot")),
    }


def pg_stats(lakes: Lakes, spec: dict) -> dict:
    q = lambda sql: lakes.servers.psql(sql, spec["database"]).strip()  # noqa: E731
    return {
        "tables": int(q(f"SELECT count(*) FROM {META_SCHEMA}.ducklake_table WHERE end_snapshot IS NULL")),
        "inlined_tables": int(q(f"SELECT count(*) FROM {META_SCHEMA}.ducklake_inlined_data_tables")),
        "pg_relations": int(q("SELECT count(*) FROM pg_class WHERE relkind = 'r'")),
        "database_mb": round(int(q("SELECT pg_database_size(current_database())")) / 2**20, 1),
    }


def build_lake(lakes: Lakes, n: int, name: str) -> tuple[dict, dict]:
    spec = lakes.new(name, n)
    Path(spec["toml"]).write_text(Path(spec["toml"]).read_text() + IO_SCHEMA)
    built = spawn(lakes.worker_spec(spec, mode="build"))
    lakes.vacuum(spec)
    built.update(pg_stats(lakes, spec))
    print(f"  {n} datasets built in {built['build_s']:.1f} s ({built['tables_s']:.1f} s tables, "
          f"{BATCH} per transaction); {built['pg_relations']} PostgreSQL tables, {built['database_mb']} MB", flush=True)
    return spec, built


def profile_scale(lakes: Lakes, n: int) -> dict:
    """srdp_compact on a fresh lake of n datasets with DuckDB's QueryLog on and every PostgreSQL
    statement of its database logged (log_min_duration_statement = 0): where its time goes."""
    print(f"== profile: {n} datasets, {CHANGED} changed", flush=True)
    pristine, built = build_lake(lakes, n, f"p{n}")
    lake = clone(lakes, pristine, "prof")
    lakes.servers.psql(f"ALTER DATABASE {lake['database']} SET log_min_duration_statement = 0")
    s = spawn(lakes.worker_spec(lake, mode="srdp", profile=True))
    print(f"  srdp_compact {s['seconds']:.2f} s, {s['profile']['statements_logged']} DuckDB statements logged", flush=True)
    for what, sec in list(s["profile"]["seconds"].items())[:8]:
        print(f"    {what:60s} {sec:8.2f} s", flush=True)
    for spec in (pristine, lake):
        lakes.drop(spec)
    return {"datasets": n, "changed": CHANGED, "build": built, "srdp": s, "profile_database": lake["database"]}


def scale(lakes: Lakes, n: int, turn: int, budget: float, largest: bool) -> dict:
    print(f"== {n} datasets, {CHANGED} changed", flush=True)
    pristine, built = build_lake(lakes, n, f"n{n}")
    s_lake, p_lake = clone(lakes, pristine, "srdp"), clone(lakes, pristine, "plain")
    before = state(lakes, pristine)
    sides = {}
    for side in (["srdp", "plain"] if turn % 2 == 0 else ["plain", "srdp"]):
        lake = s_lake if side == "srdp" else p_lake
        sides[side] = spawn(lakes.worker_spec(lake, mode=side, reads=largest, budget_s=budget))
    s, p = sides["srdp"], sides["plain"]
    complete = p["datasets_done"] == p["datasets"]
    plain_s = p["seconds"] if complete else p["seconds"] / p["datasets_done"] * p["datasets"]
    after = {"srdp": state(lakes, s_lake), "plain": state(lakes, p_lake)}
    if s["merged"] != len(changed_tables(n)) or s["rows_flushed"] != CHANGED_ROWS * len(changed_tables(n)):
        raise BenchError(f"{n}: srdp merged {s['merged']} datasets, flushed {s['rows_flushed']} rows")
    if complete and after["srdp"] != after["plain"]:
        raise BenchError(f"{n} datasets: srdp {after['srdp']} != plain {after['plain']}")
    how = "" if complete else f" extrapolated from {p['datasets_done']} datasets in {p['seconds']:.0f} s"
    print(f"  srdp_compact {s['seconds']:.2f} s ({s['seconds'] / n * 1000:.2f} ms/dataset, {s['merged']} merged, "
          f"RSS {s['rss_mb']:.0f} MB); plain loop {plain_s:.1f} s"
          f"{how}"
          f" ({plain_s / n * 1000:.1f} ms/dataset); plain/srdp {plain_s / s['seconds']:.1f}x; "
          f"live files {before['live_files']} -> {after['srdp']['live_files']}"
          f"{' (same as plain)' if complete else ''}", flush=True)
    if largest:
        for k in ("count", "pressure"):
            print(f"  {k}: {', '.join(f'{x:.3f}' for x in s[k]['seconds'])} s ({s[k]['rows']} rows)", flush=True)
    extra: list[dict] = []
    out = {"datasets": n, "changed": CHANGED, "build": built, "before": before, "after": after,
           "srdp": s, "plain": {**p, "complete": complete, "seconds_for_all": plain_s}}
    if largest:
        d_lake = clone(lakes, pristine, "dagster")
        extra.append(d_lake)
        out["dagster"] = dagster_job(lakes, d_lake, n)
        small, _ = build_lake(lakes, IO_SMALL, f"n{IO_SMALL}_io")
        extra.append(small)
        io = {}
        for which in (["large", "small"] if turn % 2 == 0 else ["small", "large"]):
            io[which] = spawn(lakes.worker_spec(s_lake if which == "large" else small, mode="io"))
        out["io"] = {"large_datasets": n, "small_datasets": IO_SMALL, **io}
        for which in ("small", "large"):
            r = io[which]
            print(f"  io {which}: attach {min(r['attach_s']):.3f} s, check_writer "
                  f"{statistics.median(r['check_writer_s']) * 1000:.1f} ms, handle_output first "
                  f"{r['handle_output_s'][0]:.3f} s then median {statistics.median(r['handle_output_s'][1:]):.3f} s, "
                  f"materialize first {r['materialize_s'][0]:.3f} s then median {statistics.median(r['materialize_s'][1:]):.3f} s",
                  flush=True)
    for spec in [pristine, s_lake, p_lake, *extra]:
        lakes.drop(spec)
    return out


def dagster_job(lakes: Lakes, lake: dict, n: int) -> dict:
    """The Dagster maintenance job over ``lake`` in a worker process, printed."""
    d = spawn(lakes.worker_spec(lake, mode="dagster", dagster_home=str(lakes.root / f"dagster_{n}")))
    m = d["marks_s"]
    run_db = next((v for k, v in d["storage"].items() if k.endswith(".db") and "runs/" in k and v["run_events"]), {})
    print(f"  dagster job: total {d['total_s']:.1f} s; step start {m['step_start']:.2f} s, srdp_compact "
          f"{m['compact_start']:.2f}-{m['compact_end']:.2f} s, health read to {m['health_end']:.2f} s, "
          f"outputs {m['first_output']:.2f}-{m['last_output']:.2f} s, step success {m['step_success']:.2f} s; "
          f"{d['events_total']} events {d['events']}, statuses {d['statuses']}, run db {run_db}; "
          f"RSS {d['rss_before_mb']:.0f} -> {d['rss_mb']:.0f} MB", flush=True)
    return d


def dagster_only(lakes: Lakes, n: int) -> dict:
    """``--dagster-only``: the same steady-state lake, the Dagster job alone (no plain loop)."""
    print(f"== {n} datasets, {CHANGED} changed: the Dagster maintenance job alone", flush=True)
    pristine, built = build_lake(lakes, n, f"n{n}")
    try:
        return {"datasets": n, "changed": CHANGED, "build": built, "dagster": dagster_job(lakes, pristine, n)}
    finally:
        lakes.drop(pristine)


def _stop_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--datasets", default="1000", help="comma-separated scales (default 1000)")
    ap.add_argument("--plain-budget", type=float, default=900.0,
                    help="seconds after which the hand-written loop stops and is extrapolated (default 900)")
    ap.add_argument("--pg-slow-ms", type=float, default=200.0,
                    help="log PostgreSQL statements slower than this (log_min_duration_statement; default 200)")
    ap.add_argument("--profile", action="store_true",
                    help="instead of the figures: srdp_compact per scale with DuckDB's QueryLog and every PostgreSQL statement logged")
    ap.add_argument("--out", help="JSON result file (default bench/results/scale.json)")
    ap.add_argument("--dagster-only", action="store_true",
                    help="build each scale's steady-state lake and run only the Dagster maintenance job")
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    scales = [int(x) for x in args.datasets.split(",") if x.strip()]
    out_path = Path(args.out) if args.out else HERE / "results" / "scale.json"

    import duckdb
    import srdp

    if not srdp.extension_path().is_file():
        print(f"srdp extension not found at {srdp.extension_path()}; run `make release`", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO / "scripts"))
    import servers as servers_module

    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    wall = time.perf_counter()
    workdir = Path("/tmp") / f"srdp-bench-scale-{os.getpid()}-{secrets.token_hex(4)}"
    results: list[dict] = []
    servers = None
    pg_version = ""
    slow: dict = {}
    try:
        print(f"srdp scale bench (postgres+s3): datasets {scales}; servers in {workdir}", flush=True)
        servers = servers_module.start(workdir)
        servers_module.create_bucket(servers, BUCKET)
        pg_version = servers.psql("SHOW server_version").strip()
        # Where the time goes: every PostgreSQL statement slower than --pg-slow-ms, by database.
        servers.psql(f"ALTER SYSTEM SET log_min_duration_statement = {int(args.pg_slow_ms)}")
        servers.psql("ALTER SYSTEM SET log_line_prefix = '%m db=%d '")
        servers.psql("SELECT pg_reload_conf()")
        lakes = Lakes(servers, workdir / "lakes")
        for turn, n in enumerate(scales):
            if args.profile:
                results.append(profile_scale(lakes, n))
            elif args.dagster_only:
                results.append(dagster_only(lakes, n))
            else:
                results.append(scale(lakes, n, turn, args.plain_budget, n == max(scales)))
            write(out_path, results, pg_version, wall, slow_log(workdir))
    except (BenchError, servers_module.ServerError) as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        for proc in list(_LIVE):
            proc.kill()
        if servers is not None:
            slow = slow_log(workdir)
            servers.stop()
            _reap(servers.s3_pid)
    if len(results) > 1 and not args.profile and not args.dagster_only:
        base = results[0]
        for r in results:
            ratio = (r["srdp"]["seconds"] / r["datasets"]) / (base["srdp"]["seconds"] / base["datasets"])
            r["per_dataset_vs_smallest"] = ratio
            print(f"  srdp_compact per dataset at {r['datasets']}: {r['srdp']['seconds'] / r['datasets'] * 1000:.2f} ms "
                  f"({ratio:.2f}x that at {base['datasets']})")
    wall_s = time.perf_counter() - wall
    write(out_path, results, pg_version, wall, slow)
    print(f"total wall time {wall_s:.0f} s; results written to {out_path}")
    return 0


def slow_log(workdir: Path) -> dict:
    """PostgreSQL's statements over log_min_duration_statement, per database: count, total ms,
    and the five slowest statement shapes (numbers replaced by N)."""
    import re

    log = workdir / "postgres.log"
    out: dict[str, dict] = {}
    if not log.is_file():
        return out
    pat = re.compile(r" db=(\S*) .*?duration: ([0-9.]+) ms\s+(?:statement|execute [^:]*): (.*)")
    shapes: dict[str, dict[str, list[float]]] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = pat.search(line)
        if not m:
            continue
        db, ms, sql = m.group(1), float(m.group(2)), re.sub(r"\d+", "N", m.group(3))[:160]
        d = out.setdefault(db, {"statements": 0, "total_ms": 0.0})
        d["statements"] += 1
        d["total_ms"] = round(d["total_ms"] + ms, 1)
        shapes.setdefault(db, {}).setdefault(sql, []).append(ms)
    for db, by in shapes.items():
        top = sorted(by.items(), key=lambda kv: -sum(kv[1]))[:5]
        out[db]["top"] = [{"sql": k, "count": len(v), "total_ms": round(sum(v), 1), "max_ms": max(v)} for k, v in top]
    return out


def write(out_path: Path, results: list[dict], pg_version: str, wall: float, slow: dict) -> None:
    import duckdb
    import srdp

    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "backend": "postgres+s3",
        "wall_s": time.perf_counter() - wall,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "duckdb": duckdb.__version__, "postgres": pg_version, "load1": os.getloadavg()[0]},
        "srdp_extension": str(srdp.extension_path()),
        "layout": {"file_rows": FILE_ROWS, "changed": CHANGED, "changed_rows": CHANGED_ROWS, "batch": BATCH,
                   "metadata_schema": META_SCHEMA, "writer_secret": WRITER_SECRET, "bucket": BUCKET},
        "results": results,
        "pg_slow_statements": slow,
    }
    out_path.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
