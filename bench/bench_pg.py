#!/usr/bin/env python3
"""srdp maintenance benchmark on PostgreSQL catalogs with S3 data paths.

The PostgreSQL + S3 column of ``make bench``: the same lake layout, scenarios, checks and table
as bench/bench.py (SQLite catalogs, local data), but every lake has its catalog in a PostgreSQL
database of its own and its data under a prefix of its own in one S3 bucket. The script starts a
throwaway PostgreSQL cluster and a moto S3 server itself (scripts/servers.py) and always stops
them, also on failure or Ctrl-C.

A PostgreSQL database and an S3 prefix cannot simply be copied like a SQLite file, so every
maintenance run gets a lake of its own, built fresh (untimed, before the timed runs of its scale,
then `VACUUM ANALYZE`d): per scale one lake for count, and per repeat one lake per side for flush
and for compact. All lakes of a scale must fingerprint identically after the build.

Each side runs in its own fresh Python process (peak RSS via ``ru_maxrss``); only the call is
timed. Credentials exist only as DuckDB secrets created in the worker processes (handed over on
stdin, never in srdp.toml and never on a command line). Both sides must end with identical lakes
(rows and checksum per table, live data files per table, inlined rows per table); any
difference fails the run (exit 1).

    .venv/bin/python bench/bench_pg.py            # 10 and 100 datasets
    .venv/bin/python bench/bench_pg.py --quick    # 5 and 20 datasets, for development

Results: a fixed-width table on stdout and JSON in bench/results/ (results-pg.json, or
results-pg-quick.json for --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

# The layout, checks and table format are bench.py's, so both columns measure the same thing.
from bench import (  # noqa: E402
    FILE_ROWS,
    INLINE_LIMIT,
    INLINE_ROWS,
    LOADS,
    MARK,
    BenchError,
    _lit,
    check,
    compare_lakes,
    fingerprint,
    fmt_row,
    order_for,
    side_summary,
    summarize_fp,
    time_calls,
)

BACKEND = "postgres+s3"
BUCKET = "srdp-bench"
META_SCHEMA = "lake"        # PostgreSQL schema of the DuckLake metadata (srdp's metadata_schema)
WRITER_SECRET = "pg_writer"  # DuckDB secret named by writer_secret in srdp.toml
META = f"__ducklake_metadata_lake.{META_SCHEMA}"

# No credentials here: srdp finds them in the DuckDB secret named by writer_secret.
TOML = """[catalogs.lake]
metadata = "postgres:dbname={database} host=127.0.0.1 port={port}"
metadata_schema = "{schema}"
data_path = "{data_path}"
data_inlining_row_limit = {limit}
writer_secret = "{secret}"
"""


# ------------------------------------------------------------------------------------------------
# worker side: runs in a fresh process, reads its spec (with the credentials) from stdin and
# prints one MARK line of JSON
# ------------------------------------------------------------------------------------------------

def data_path(spec: dict) -> str:
    return f"s3://{BUCKET}/{spec['prefix']}/"


def create_secrets(con, spec: dict) -> None:
    """What every session on the lake runs first: the S3 secret and the PostgreSQL writer secret
    (temporary DuckDB secrets: they live only in this process)."""
    s3, pg = spec["s3"], spec["pg"]
    con.execute(
        f"CREATE OR REPLACE SECRET bench_s3 (TYPE s3, KEY_ID {_lit(s3['key'])}, SECRET {_lit(s3['secret'])}, "
        f"REGION {_lit(s3['region'])}, ENDPOINT {_lit(s3['endpoint'])}, URL_STYLE 'path', USE_SSL false)"
    )
    con.execute(
        f"CREATE OR REPLACE SECRET {WRITER_SECRET} (TYPE postgres, HOST '127.0.0.1', PORT {int(pg['port'])}, "
        f"DATABASE {_lit(spec['database'])}, USER {_lit(pg['user'])}, PASSWORD {_lit(pg['password'])})"
    )


def plain_connect(spec: dict, read_only: bool = False):
    """A plain DuckDB connection (no srdp) with the lake attached as srdp attaches it
    (the same ATTACH statement srdp's attach plan produces for a writer)."""
    import duckdb
    import srdp

    con = duckdb.connect(config=srdp.duckdb_config())
    create_secrets(con, spec)
    opts = [
        f"DATA_PATH {_lit(data_path(spec))}",
        f"METADATA_SCHEMA {_lit(META_SCHEMA)}",
        f"DATA_INLINING_ROW_LIMIT {INLINE_LIMIT}",
        f"META_SECRET {_lit(WRITER_SECRET)}",
    ]
    if read_only:
        opts.append("READ_ONLY")
    target = f"ducklake:postgres:dbname={spec['database']} host=127.0.0.1 port={int(spec['pg']['port'])}"
    con.execute(f"ATTACH {_lit(target)} AS lake ({', '.join(opts)})")
    return con


def srdp_connect(spec: dict):
    import srdp

    con = srdp.connect(config=spec["toml"])
    create_secrets(con, spec)
    con.sql("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    return con


def build(spec: dict) -> dict:
    """Builds the lake (empty database, empty prefix) with plain DuckDB, bench.py's layout:
    N tables main.dNNNN, two loads over all datasets, each one Parquet insert + one inlined insert."""
    con = plain_connect(spec)
    start = time.perf_counter()
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
    seconds = time.perf_counter() - start
    fp = fingerprint(con, META)
    con.close()
    return {"build_s": seconds, "fingerprint": fp}


def run(spec: dict) -> dict:
    """One side of one scenario in a fresh process: attach, time the call(s), then peak RSS.
    (The lake is fingerprinted afterwards by a separate `verify` process.)"""
    side, op = spec["side"], spec["op"]
    con = srdp_connect(spec) if side == "srdp" else plain_connect(spec)
    return time_calls(con, side, op, spec.get("repeats", 1), META)


def verify(spec: dict) -> dict:
    """Full fingerprint of a lake, through a plain read-only attach (after the timed call)."""
    return {"fingerprint": fingerprint(plain_connect(spec, read_only=True), META)}


def worker() -> None:
    spec = json.loads(sys.stdin.read())
    out = {"build": build, "run": run, "verify": verify}[spec["mode"]](spec)
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------------
# orchestrator side
# ------------------------------------------------------------------------------------------------

_LIVE: set[subprocess.Popen] = set()  # running workers, killed if the run is interrupted


def spawn_all(specs: list[dict], jobs: int | None = None) -> list[dict]:
    """Runs workers, at most `jobs` at a time (concurrency only ever for untimed work: builds and
    verification). The spec, credentials included, goes to the worker on stdin."""

    def one(spec: dict) -> dict:
        proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _LIVE.add(proc)
        try:
            stdout, stderr = proc.communicate(json.dumps(spec))
        finally:
            _LIVE.discard(proc)
        lines = [l for l in stdout.splitlines() if l.startswith(MARK)]
        if proc.returncode != 0 or not lines:
            shown = {k: v for k, v in spec.items() if k not in ("pg", "s3")}
            raise BenchError(f"worker {shown} failed (exit {proc.returncode}):\n{stderr}{stdout}")
        return json.loads(lines[-1][len(MARK):])

    if len(specs) == 1:
        return [one(specs[0])]
    pool = ThreadPoolExecutor(max_workers=jobs or len(specs))
    try:
        return list(pool.map(one, specs))
    finally:
        # On failure or interrupt: start nothing more (main() kills the workers still running).
        pool.shutdown(wait=False, cancel_futures=True)


def spawn(spec: dict) -> dict:
    return spawn_all([spec])[0]


class Lakes:
    """Creates lakes on the servers: a database, a prefix, an srdp.toml, and the worker spec."""

    def __init__(self, servers, root: Path):
        self.servers = servers
        self.root = root
        self.creds = {
            "pg": {"port": servers.pg_port, "user": servers.pg_superuser, "password": servers.pg_password},
            "s3": {"endpoint": servers.s3_endpoint, "key": servers.s3_access_key,
                   "secret": servers.s3_secret_key, "region": servers.s3_region},
        }

    def new(self, name: str, datasets: int) -> dict:
        database = f"bench_{name}"
        self.servers.psql(f"CREATE DATABASE {database}")
        spec = {"name": name, "database": database, "prefix": name, "datasets": datasets}
        toml = self.root / name / "srdp.toml"
        toml.parent.mkdir(parents=True)
        toml.write_text(TOML.format(database=database, port=self.servers.pg_port, schema=META_SCHEMA,
                                    data_path=data_path(spec), limit=INLINE_LIMIT, secret=WRITER_SECRET))
        spec["toml"] = str(toml)
        return spec

    def vacuum(self, spec: dict) -> None:
        self.servers.psql("VACUUM ANALYZE", spec["database"])

    def drop(self, spec: dict) -> None:
        self.servers.psql(f"DROP DATABASE IF EXISTS {spec['database']} WITH (FORCE)")

    def worker_spec(self, spec: dict, **kw) -> dict:
        return {**spec, **self.creds, **kw}


def scenario_count(lakes: Lakes, lake: dict, pristine: dict, repeats: int, turn: int) -> dict:
    """Both sides on the same (pristine) lake, one process each, `repeats` calls, median."""
    out = {}
    for side in order_for(turn):
        out[side] = spawn(lakes.worker_spec(lake, mode="run", side=side, op="count", repeats=repeats))
    expected = {name: t["inlined"] for name, t in pristine.items()}
    check(out["srdp"]["counts"] == expected,
          "count: srdp_inlined_row_count differs from the lake's inlined rows")
    names = {str(t["table_id"]): name for name, t in pristine.items()}
    plain = {names[i]: n for i, n in out["plain"]["counts_by_id"].items() if n}
    check(plain == {k: v for k, v in expected.items() if v},
          "count: the hand-written SQL differs from the lake's inlined rows")
    return {"files": None, "rows": sum(expected.values()),
            "sides": {side: side_summary([r]) for side, r in out.items()}}


def scenario_maintain(op: str, lakes: Lakes, pairs: list[dict], pristine: dict, turn: int) -> dict:
    """For every repeat, srdp and plain each on a lake of its own (built fresh, identical). After
    each pair, both lakes are fingerprinted (untimed, concurrently) and compared."""
    runs = {"srdp": [], "plain": []}
    after = {}
    for rep, pair in enumerate(pairs):
        for side in order_for(turn + rep):
            runs[side].append(spawn(lakes.worker_spec(pair[side], mode="run", side=side, op=op, repeats=1)))
        fs, fp = (r["fingerprint"] for r in spawn_all(
            [lakes.worker_spec(pair[side], mode="verify") for side in ("srdp", "plain")]))
        s, p = runs["srdp"][-1], runs["plain"][-1]
        compare_lakes(f"{op}: srdp vs plain", fs, fp)
        compare_lakes(f"{op}: srdp vs pristine", fs, pristine, keys=("rows", "checksum"))
        check(all(t["inlined"] == 0 for t in fs.values()), f"{op}: inlined rows left after the call")
        flushed = sum(t["inlined"] for t in pristine.values())
        check(s["rows_flushed"] == p["rows_flushed"] == flushed,
              f"{op}: rows flushed: srdp {s['rows_flushed']}, plain {p['rows_flushed']}, inlined {flushed}")
        if op == "compact":
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


def render(results: list[dict]) -> str:
    """bench.py's table with a backend column."""
    head = ["scenario", "backend", "datasets", "files", "srdp s", "plain s", "ratio",
            "srdp files/s", "plain files/s", "srdp RSS MB", "plain RSS MB", "check"]
    aligns = ["<", "<", ">", ">", ">", ">", ">", ">", ">", ">", ">", "<"]
    body = []
    for r in results:
        s, p = r["sides"]["srdp"], r["sides"]["plain"]
        files = r["files"]

        def rate(side):
            return f"{files / side['median_s']:,.0f}" if files and side["median_s"] > 0 else "-"

        body.append([
            r["scenario"], r["backend"], f"{r['datasets']:,}", f"{files:,}" if files is not None else "-",
            f"{s['median_s']:.3f}", f"{p['median_s']:.3f}", f"{r['ratio']:.2f}",
            rate(s), rate(p), f"{s['rss_peak_mb']:.0f}", f"{p['rss_peak_mb']:.0f}", r["check"],
        ])
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    lines = [fmt_row(head, widths, aligns), fmt_row(["-" * w for w in widths], widths, aligns)]
    lines += [fmt_row(b, widths, aligns) for b in body]
    return "\n".join(lines)


def bench_scale(lakes: Lakes, n: int, reps: int, jobs: int, turn: int, results: list, builds: list) -> int:
    """Builds every lake of one scale (untimed, `jobs` at a time), then runs count, flush and
    compact. Returns the next `turn`."""
    t0 = time.perf_counter()
    count_lake = lakes.new(f"n{n}_count", n)
    pairs = {op: [{side: lakes.new(f"n{n}_{op}_r{rep}_{side}", n) for side in ("srdp", "plain")}
                  for rep in range(reps)] for op in ("flush", "compact")}
    every = [count_lake] + [pair[side] for op in pairs for pair in pairs[op] for side in pair]
    built = spawn_all([lakes.worker_spec(lake, mode="build") for lake in every], jobs=jobs)
    pristine = built[0]["fingerprint"]
    for lake, b in zip(every[1:], built[1:]):
        compare_lakes(f"build: {lake['name']} vs {every[0]['name']}", b["fingerprint"], pristine)
    # Settle every catalog the same way before the timed runs: vacuumed and analyzed, so
    # PostgreSQL's autovacuum does not pick the fresh databases up in the middle of a timed call.
    for lake in every:
        lakes.vacuum(lake)
    summary = summarize_fp(pristine)
    build_s = [b["build_s"] for b in built]
    builds.append({"n": n, "lakes": len(every), "build_s": build_s, "build_wall_s": time.perf_counter() - t0,
                   **summary})
    print(f"  built {len(every)} lakes of {n:,} datasets: {summary['tables']:,} tables, {summary['files']:,} files, "
          f"{summary['inlined']:,} inlined rows each; {statistics.median(build_s):.1f} s per lake, "
          f"{time.perf_counter() - t0:.0f} s in all", flush=True)
    for sc in ("count", "flush", "compact"):
        ts = time.perf_counter()
        if sc == "count":
            r = scenario_count(lakes, count_lake, pristine, repeats=5, turn=turn)
        else:
            r = scenario_maintain(sc, lakes, pairs[sc], pristine, turn)
        turn += 1
        s, p = r["sides"]["srdp"]["median_s"], r["sides"]["plain"]["median_s"]
        r.update({"scenario": sc, "backend": BACKEND, "kind": "datasets", "datasets": n, "op": sc,
                  "ratio": s / p if p > 0 else float("nan"), "check": "ok",
                  "repeats": reps if sc != "count" else len(r["sides"]["srdp"]["seconds"]),
                  "scenario_wall_s": time.perf_counter() - ts})
        results.append(r)
        print(f"  {sc:<8} datasets={n:<5} srdp {s:8.3f} s  plain {p:8.3f} s  "
              f"ratio {r['ratio']:.2f}  ({r['scenario_wall_s']:.0f} s)", flush=True)
    for lake in every:
        lakes.drop(lake)
    print(f"  ({n:,} datasets done in {time.perf_counter() - t0:.0f} s)", flush=True)
    return turn


def _reap(pid: int, timeout: float = 10.0) -> None:
    """Waits for the moto server (our child, sent SIGTERM by Servers.stop) to exit."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.1)


def _stop_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # runs the finally blocks: workers killed, servers stopped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small scale (5 and 20 datasets)")
    ap.add_argument("--datasets", help="comma-separated dataset counts (default 10,100)")
    ap.add_argument("--repeats", type=int, help="flush/compact repetitions per scale, each on freshly built lakes (default 3)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="lakes built at the same time (untimed; default 2)")
    ap.add_argument("--out", help="JSON result file (default bench/results/results-pg[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0

    scales = [5, 20] if args.quick else [10, 100]
    if args.datasets:
        scales = [int(x) for x in args.datasets.split(",") if x.strip()]
    out_path = Path(args.out) if args.out else HERE / "results" / ("results-pg-quick.json" if args.quick else "results-pg.json")

    import duckdb
    import srdp

    if not srdp.extension_path().is_file():
        print(f"srdp extension not found at {srdp.extension_path()}; run `make release`", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO / "scripts"))
    import servers as servers_module

    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    wall = time.perf_counter()
    # Directly under /tmp, not in a private temporary folder: postgres runs as the postgres user.
    workdir = Path("/tmp") / f"srdp-bench-pg-{os.getpid()}-{secrets.token_hex(4)}"
    results, builds, turn = [], [], 0
    servers = None
    try:
        print(f"srdp bench ({BACKEND}): datasets {scales}; starting PostgreSQL and moto S3 in {workdir}", flush=True)
        try:
            servers = servers_module.start(workdir)
            servers_module.create_bucket(servers, BUCKET)
        except servers_module.ServerError as e:
            print(f"servers did not start: {e}", file=sys.stderr)
            return 2
        pg_version = servers.psql("SHOW server_version").strip()
        print(f"  PostgreSQL {pg_version} on port {servers.pg_port}, S3 (moto) on {servers.s3_endpoint}, "
              f"bucket {BUCKET}", flush=True)
        lakes = Lakes(servers, workdir / "lakes")
        for n in scales:
            reps = args.repeats or 3
            turn = bench_scale(lakes, n, reps, args.jobs, turn, results, builds)
    except BenchError as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        for proc in list(_LIVE):
            proc.kill()
        if servers is not None:
            servers.stop()
            _reap(servers.s3_pid)
            print("  servers stopped", flush=True)
    wall_s = time.perf_counter() - wall

    table = render(results)
    print()
    print(table)
    print()
    print("ratio = srdp seconds / plain seconds (below 1: srdp faster). seconds = median over "
          "repeats; files/s = files / seconds (flush: Parquet files written; compact: files merged).")
    print("RSS = peak resident set (ru_maxrss) of the fresh process that ran the call. check: both "
          "sides ended with the same rows, checksum, live files and inlined rows per table.")
    print(f"total wall time {wall_s:.0f} s ({wall_s / 60:.1f} min)")

    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        from importlib.metadata import version
        moto_version = version("moto")
    except Exception:  # noqa: BLE001 - informational only
        moto_version = None
    doc = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "backend": BACKEND,
        "quick": args.quick,
        "wall_s": wall_s,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "duckdb": duckdb.__version__,
                    "postgres": pg_version, "moto": moto_version},
        "srdp_extension": str(srdp.extension_path()),
        "srdp_version": next((r["sides"]["srdp"].get("srdp_version") for r in results), None),
        "layout": {"inline_limit": INLINE_LIMIT, "file_rows": FILE_ROWS, "inline_rows": INLINE_ROWS,
                   "loads": LOADS, "metadata_schema": META_SCHEMA, "bucket": BUCKET},
        "builds": builds,
        "results": results,
        "table": table,
    }
    out_path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"results written to {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
