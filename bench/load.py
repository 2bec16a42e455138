#!/usr/bin/env python3
"""Loaders beside maintenance: does srdp's maintenance finish under ordinary load?

The scenario, in real processes on one lake (alias ``lake``, two tables ``main.events`` and
``main.metrics``):

* ``--loaders`` loader processes (default 2): plain ``srdp.connect`` +
  ``srdp_attach_catalog('lake', role := 'writer')``, then autocommit INSERTs of small batches
  (10-50 rows, inlined in the catalog) for ``--seconds``, alternating between the two tables.
  A loader retries its own batch on contention (``database is locked``, conflicts, ...) with
  jittered doubling waits for up to 60 s, and reports every batch it committed.
* one maintenance process (``--maintainers N``: N of them): ``srdp_compact('lake')`` and
  ``srdp_flush('lake')`` in turn (``--ops``) until the loaders have stopped, recording each call's
  rows (attempts, status) or error text.
* afterwards a fresh process runs one more ``srdp_compact`` and reads the tables back: through
  DuckLake (every committed (loader, batch, k) row exactly once, nothing else, payload intact),
  from the live Parquet files the metadata lists (count and checksum), and the inlined rows left
  in the metadata (none).

The run fails (exit 1, each problem printed) when a maintenance call failed, a loader gave up on a
batch, or a row is missing, duplicated or unexpected. A NOTE says when the run proves less than it
should: fewer than ``--min-calls`` calls started and succeeded inside the loading window, or no
call needed a retry (the maintenance never met contention; on PostgreSQL, DuckLake's own commit
retries may absorb it). The test requires neither problems nor notes.

    .venv/bin/python bench/load.py                           # SQLite catalog, 60 s, 2 loaders
    .venv/bin/python bench/load.py --backend postgres        # PostgreSQL catalog + S3 (moto)
    .venv/bin/python bench/load.py --seconds 20 --loaders 3 --extra 'max_attempts = 20'

``--extra`` adds lines to the catalog's definition in srdp.toml (retry settings);
``--max-retry-seconds N`` sets the catalog's ``max_retry_seconds`` and makes a call that takes longer
a problem. ``SRDP_LOAD_MAINTAINER_SQL`` (statements separated by ``;``) runs on the maintenance
connection before the first call, e.g. ``SET ducklake_retry_wait_ms = 100`` to compare DuckLake's own
commit retry with the one srdp's steps use. The throwaway
PostgreSQL and S3 servers are started and stopped by the script (scripts/servers.py).
test/python/test_maintenance_load.py runs this scenario (``run``, ``problems``, ``proof_gaps``) under
pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import selectors
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from statistics import median
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench import _lit, meta_fingerprint  # noqa: E402

TABLES = ("events", "metrics")
# A loader retries a batch on these (lower-cased substrings), as a loader beside maintenance must.
LOADER_RETRYABLE = (
    "database is locked",
    "conflict",
    "could not serialize",
    "deadlock detected",
    "exceeded the maximum retry count",
)
LOADER_BATCH_BUDGET_S = 60.0
# How long the maintenance process may take to finish its last call once the loaders stopped.
MAINTAINER_GRACE_S = 600.0
ATTEMPTS = re.compile(r"after (\d+) attempt")


# ------------------------------------------------------------------------------------------------
# what is run
# ------------------------------------------------------------------------------------------------

@dataclass
class Lake:
    """A lake to run on: its srdp.toml, the SQL each session runs before attaching (secrets;
    handed to workers on stdin only) and the metadata schema (``main`` for SQLite)."""

    backend: str
    cfg: Path
    meta: str = "main"
    setup: list[str] = field(default_factory=list)


@dataclass
class Settings:
    seconds: float = 60.0
    loaders: int = 2
    # Maintenance processes, each calling the ops in turn (two or more: do they leave the
    # loaders their share of a SQLite catalog's write lock, or hand it to each other?).
    maintainers: int = 1
    min_rows: int = 10
    max_rows: int = 50
    ops: tuple[str, ...] = ("compact", "flush")
    maintenance_pause_s: float = 0.1
    loader_pause_s: float = 0.0
    # Maintenance calls that must start and succeed inside the loading window: a call starved until
    # the loaders stop (it waits out the load instead of finishing under it) leaves fewer.
    min_calls: int = 5
    # False: the loaders alone (the baseline their throughput beside maintenance is compared to).
    maintain: bool = True
    # The catalog's max_retry_seconds when the run sets one (--extra): a call that takes longer
    # than that is a problem, since each of its steps must commit inside that budget.
    max_call_s: float | None = None


SQLITE_TOML = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake/"
{extra}
"""


def sqlite_lake(workdir: Path, extra: str = "") -> Lake:
    """A SQLite catalog with local data under ``workdir``; srdp's default retry policy unless
    ``extra`` sets one."""
    cfg = workdir / "srdp.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(textwrap.dedent(SQLITE_TOML).lstrip().format(extra=extra))
    return Lake("sqlite", cfg)


def postgres_lake(servers: Any, workdir: Path, extra: str = "") -> Lake:
    """A fresh PostgreSQL database (catalog) and S3 prefix (data) on the test servers."""
    sys.path[:0] = [str(REPO / "test" / "python"), str(REPO / "scripts")]
    from pg_lake import new_lake

    lake = new_lake(servers, workdir, extra=extra)
    return Lake("postgres", lake.cfg, lake.schema, lake.setup_sql())


def batch_rows(loader: int, batch: int, lo: int, hi: int) -> int:
    """Rows of one batch: deterministic, between lo and hi."""
    return lo + (loader * 7919 + batch * 104729) % (hi - lo + 1)


# ------------------------------------------------------------------------------------------------
# worker side: a fresh process, spec on stdin, result JSON written to spec["out"]
# ------------------------------------------------------------------------------------------------

def _open(spec: dict) -> Any:
    import srdp

    con = srdp.connect(config=spec["cfg"])
    for statement in spec["setup"]:
        con.execute(statement)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    return con


def _ready_then_wait() -> None:
    print("ready", flush=True)
    sys.stdin.readline()  # "go"


def _one_line(message: str) -> str:
    """An error message on one line, shortened (for counting distinct errors)."""
    return " ".join(message.split())[:400]


def work_create(spec: dict) -> dict:
    con = _open(spec)
    for table in TABLES:
        con.execute(f"CREATE TABLE lake.main.{table} (loader BIGINT, batch BIGINT, k BIGINT, s VARCHAR)")
    return {}


def work_loader(spec: dict) -> dict:
    import duckdb

    con = _open(spec)
    me, lo, hi = spec["loader"], spec["min_rows"], spec["max_rows"]
    rng = random.Random(me)
    _ready_then_wait()
    committed: list[list] = []  # [table, batch, rows]
    failed: list[dict] = []
    retried_batches = retries = 0
    errors: Counter[str] = Counter()
    start = time.time()
    batch = 0
    while time.time() - start < spec["seconds"]:
        table, n = TABLES[batch % len(TABLES)], batch_rows(me, batch, lo, hi)
        sql = (
            f"INSERT INTO lake.main.{table} SELECT {me}, {batch}, range, "
            f"'l{me}b{batch}k' || range FROM range({n})"
        )
        t0, attempt = time.time(), 0
        while True:
            attempt += 1
            try:
                con.execute(sql)
                committed.append([table, batch, n])
                break
            except duckdb.Error as e:
                message = str(e)
                retryable = any(t in message.lower() for t in LOADER_RETRYABLE)
                if not retryable or time.time() - t0 > LOADER_BATCH_BUDGET_S:
                    failed.append({"table": table, "batch": batch, "attempts": attempt, "error": message})
                    break
                retries += 1
                errors[_one_line(message)] += 1
                time.sleep(min(0.005 * 2**attempt, 0.25) * rng.uniform(0.5, 1.5))
        retried_batches += attempt > 1
        batch += 1
        if spec["loader_pause_s"]:
            time.sleep(spec["loader_pause_s"])
    return {
        "loader": me, "start": start, "end": time.time(), "committed": committed, "failed": failed,
        "retried_batches": retried_batches, "retries": retries, "errors": dict(errors),
    }


def work_maintainer(spec: dict) -> dict:
    import duckdb
    import srdp

    con = _open(spec)
    for statement in os.environ.get("SRDP_LOAD_MAINTAINER_SQL", "").split(";"):
        if statement.strip():
            con.execute(statement)
    _ready_then_wait()
    calls: list[dict] = []
    stop = Path(spec["stop"])
    n = 0
    while not stop.exists():
        op = spec["ops"][n % len(spec["ops"])]
        n += 1
        t0 = time.time()
        try:
            rows = srdp.call(con, f"srdp_{op}", "lake")
            calls.append({"op": op, "start": t0, "end": time.time(), "rows": rows})
        except duckdb.Error as e:
            calls.append({"op": op, "start": t0, "end": time.time(), "error": str(e)})
        time.sleep(spec["maintenance_pause_s"])
    return {"calls": calls}


def work_verify(spec: dict) -> dict:
    """One more compaction in a fresh process, then the tables as DuckLake, the Parquet files
    and the metadata see them."""
    import duckdb
    import srdp

    con = _open(spec)
    try:
        final: dict = {"rows": srdp.call(con, "srdp_compact", "lake")}
    except duckdb.Error as e:
        final = {"error": str(e)}
    meta = f"__ducklake_metadata_lake.{spec['meta']}"
    fp = meta_fingerprint(con, meta)
    data_path = con.sql(f"SELECT value FROM {meta}.ducklake_metadata WHERE key = 'data_path'").fetchone()[0]
    tables = {}
    for table in TABLES:
        scan = con.sql(
            "SELECT count(*), count(DISTINCT (loader, batch, k)), COALESCE(sum(hash(loader, batch, k)), 0)::VARCHAR, "
            f"count(*) FILTER (WHERE s IS DISTINCT FROM 'l' || loader || 'b' || batch || 'k' || k) FROM lake.main.{table}"
        ).fetchone()
        groups = con.sql(
            f"SELECT loader, batch, count(*), count(DISTINCT k), min(k), max(k) FROM lake.main.{table} GROUP BY ALL"
        ).fetchall()
        # Live data files, their paths resolved as DuckLake stores them (relative to table,
        # schema and data path), read with read_parquet: an independent count of the rows.
        files = [r[0] for r in con.execute(
            "SELECT CASE WHEN f.path_is_relative THEN "
            "  CASE WHEN t.path_is_relative THEN CASE WHEN s.path_is_relative THEN $1 ELSE '' END || s.path ELSE '' END"
            "  || t.path || f.path ELSE f.path END "
            f"FROM {meta}.ducklake_data_file f JOIN {meta}.ducklake_table t USING (table_id) "
            f"JOIN {meta}.ducklake_schema s USING (schema_id) "
            "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL "
            "AND s.schema_name = 'main' AND t.table_name = $2",
            [data_path, table],
        ).fetchall()]
        parquet = (0, "0")
        if files:
            parquet = con.execute(
                "SELECT count(*), COALESCE(sum(hash(loader, batch, k)), 0)::VARCHAR FROM read_parquet($1)", [files]
            ).fetchone()
        tables[table] = {
            "scan": list(scan), "groups": [list(g) for g in groups], "files": len(files),
            "parquet": list(parquet), "inlined": fp[table]["inlined"],
        }
    return {"final": final, "tables": tables}


WORKERS = {"create": work_create, "loader": work_loader, "maintainer": work_maintainer, "verify": work_verify}


def worker() -> None:
    spec = json.loads(sys.stdin.readline())
    result = WORKERS[spec["role"]](spec)
    Path(spec["out"]).write_text(json.dumps(result, default=str))


# ------------------------------------------------------------------------------------------------
# orchestrator side
# ------------------------------------------------------------------------------------------------

class LoadError(RuntimeError):
    """A worker could not start or finish; the message has its stderr."""


@dataclass
class Outcome:
    backend: str
    settings: Settings
    loaders: list[dict]
    calls: list[dict]
    final: dict
    tables: dict
    expected: dict  # table -> {"rows": n, "checksum": str, "batches": {(loader, batch): rows}}


class Worker:
    """One worker process; its spec (credentials included) goes in on stdin."""

    def __init__(self, role: str, spec: dict, workdir: Path, name: str) -> None:
        self.name = name
        self.out = workdir / f"{name}.json"
        self.err = workdir / f"{name}.stderr"
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=REPO,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err.open("w"), text=True,
        )
        self.send(json.dumps({**spec, "role": role, "out": str(self.out)}))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_ready(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            line = self.proc.stdout.readline().strip() if sel.select(timeout) else ""
        if line != "ready":
            self.kill()
            raise LoadError(f"{self.name} did not start within {timeout} s ({line!r}):\n{self.err.read_text()}")

    def result(self, timeout: float) -> dict:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise LoadError(f"{self.name} still running after {timeout:.0f} s:\n{self.err.read_text()[-4000:]}")
        if self.proc.returncode != 0 or not self.out.exists():
            raise LoadError(f"{self.name} failed (exit {self.proc.returncode}):\n{self.err.read_text()[-4000:]}")
        return json.loads(self.out.read_text())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run(lake: Lake, settings: Settings, workdir: Path) -> Outcome:
    """Creates the tables, runs loaders beside a maintenance process, then verifies the lake."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = {"cfg": str(lake.cfg), "setup": lake.setup, "meta": lake.meta, **asdict(settings)}
    Worker("create", base, workdir, "create").result(timeout=120)
    stop = workdir / "stop"
    workers: list[Worker] = []
    try:
        maintainers = [
            Worker("maintainer", {**base, "stop": str(stop)}, workdir, f"maintainer{i or ''}")
            for i in range(settings.maintainers if settings.maintain else 0)
        ]
        workers += maintainers
        loaders = [Worker("loader", {**base, "loader": i}, workdir, f"loader{i}") for i in range(settings.loaders)]
        workers += loaders
        for w in workers:
            w.wait_ready(timeout=120)
        for w in workers:  # the maintainers first: the loaders start into running maintenance
            w.send("go")
        loaded = [w.result(timeout=settings.seconds + LOADER_BATCH_BUDGET_S + 120) for w in loaders]
        stop.touch()
        calls = sorted(
            (c for m in maintainers for c in m.result(timeout=MAINTAINER_GRACE_S)["calls"]), key=lambda c: c["start"]
        )
    finally:
        for w in workers:
            w.kill()
    checked = Worker("verify", base, workdir, "verify").result(timeout=MAINTAINER_GRACE_S)
    return Outcome(lake.backend, settings, loaded, calls, checked["final"], checked["tables"], expected(loaded))


def expected(loaders: list[dict]) -> dict:
    """Per table: the committed batches, their row count and checksum (computed by plain DuckDB
    from what the loaders reported, not from the lake)."""
    import duckdb

    out = {}
    con = duckdb.connect()
    try:
        for table in TABLES:
            batches = {(r["loader"], b): n for r in loaders for (t, b, n) in r["committed"] if t == table}
            keys = list(batches)
            rows, checksum = con.execute(
                "SELECT count(*), COALESCE(sum(hash(l, b, k)), 0)::VARCHAR FROM "
                "(SELECT unnest($1::BIGINT[]) AS l, unnest($2::BIGINT[]) AS b, unnest($3::BIGINT[]) AS n) x, "
                "LATERAL (SELECT range AS k FROM range(x.n))",
                [[l for l, _ in keys], [b for _, b in keys], list(batches.values())],
            ).fetchone()
            out[table] = {"rows": rows, "checksum": checksum, "batches": batches}
    finally:
        con.close()
    return out


# ------------------------------------------------------------------------------------------------
# figures and checks
# ------------------------------------------------------------------------------------------------

def call_attempts(call: dict) -> int | None:
    """The most attempts any step of the call needed (a failed call: the attempts its error names)."""
    if "rows" in call:
        return max((int(r["attempts"]) for r in call["rows"]), default=1)
    m = ATTEMPTS.search(call["error"])
    return int(m.group(1)) if m else None


def call_retries(call: dict) -> int:
    """Sum over the call's datasets of attempts - 1 (a failed call: its failing step's)."""
    if "rows" in call:
        return sum(max(int(r["attempts"]) - 1, 0) for r in call["rows"])  # 0 attempts: nothing called
    return max((call_attempts(call) or 1) - 1, 0)


def during_load(outcome: Outcome) -> list[dict]:
    """Successful calls that started and completed while every loader was loading."""
    start, end = max(r["start"] for r in outcome.loaders), min(r["end"] for r in outcome.loaders)
    return [c for c in outcome.calls if "rows" in c and c["start"] >= start and c["end"] <= end]


def loader_rate(outcome: Outcome) -> float:
    """Batches the loaders committed per second of their loading window, all loaders together."""
    window = max(r["end"] for r in outcome.loaders) - min(r["start"] for r in outcome.loaders)
    return sum(len(r["committed"]) for r in outcome.loaders) / max(window, 1e-9)


def summarize(outcome: Outcome) -> dict:
    calls = outcome.calls
    attempts = [a for a in (call_attempts(c) for c in calls) if a is not None]
    found = sum(t["scan"][0] for t in outcome.tables.values())
    return {
        "backend": outcome.backend,
        "seconds": outcome.settings.seconds,
        "loaders": outcome.settings.loaders,
        "maintainers": outcome.settings.maintainers,
        "maintenance calls": len(calls),
        "calls by function": dict(Counter(f"srdp_{c['op']}" for c in calls)),
        "calls succeeded during load": len(during_load(outcome)),
        "calls that needed retries": sum(1 for a in attempts if a >= 2),
        "total retries": sum(call_retries(c) for c in calls),
        "failures": sum(1 for c in calls if "error" in c),
        "failures by function": dict(Counter(f"srdp_{c['op']}" for c in calls if "error" in c)),
        "max attempts": max(attempts, default=0),
        "max call duration s": round(max((c["end"] - c["start"] for c in calls), default=0.0), 2),
        "median call duration s": round(median([c["end"] - c["start"] for c in calls] or [0.0]), 2),
        "loader batches committed": sum(len(r["committed"]) for r in outcome.loaders),
        "loader batches per s": round(loader_rate(outcome), 1),
        "loader batches retried": sum(r["retried_batches"] for r in outcome.loaders),
        "loader retries": sum(r["retries"] for r in outcome.loaders),
        "loader batches failed": sum(len(r["failed"]) for r in outcome.loaders),
        "rows committed": sum(e["rows"] for e in outcome.expected.values()),
        "rows checked": found,
    }


def row_problems(outcome: Outcome) -> list[str]:
    """Every committed (loader, batch, k) row exactly once, nothing else, in DuckLake's scan and
    in the live Parquet files; no inlined rows left after the final compaction."""
    out = []
    for table, seen in outcome.tables.items():
        want = outcome.expected[table]
        count, distinct, checksum, bad_payload = seen["scan"]
        if (count, distinct, checksum) != (want["rows"], want["rows"], want["checksum"]):
            out.append(f"{table}: scan has {count} rows ({distinct} distinct, checksum {checksum}); "
                       f"loaders committed {want['rows']} (checksum {want['checksum']})")
        if bad_payload:
            out.append(f"{table}: {bad_payload} rows with a wrong payload")
        groups = {(g[0], g[1]): g[2:] for g in seen["groups"]}
        missing = sorted(set(want["batches"]) - set(groups))
        unexpected = sorted(set(groups) - set(want["batches"]))
        wrong = sorted(k for k, n in want["batches"].items() if k in groups and groups[k] != [n, n, 0, n - 1])
        if missing or unexpected or wrong:
            out.append(f"{table}: (loader, batch) missing {missing[:10]} ({len(missing)}), unexpected "
                       f"{unexpected[:10]} ({len(unexpected)}), wrong rows {[(k, groups[k]) for k in wrong[:10]]} ({len(wrong)})")
        if seen["parquet"] != [want["rows"], want["checksum"]]:
            out.append(f"{table}: live Parquet files ({seen['files']}) hold {seen['parquet'][0]} rows "
                       f"(checksum {seen['parquet'][1]}); loaders committed {want['rows']} ({want['checksum']})")
        if seen["inlined"]:
            out.append(f"{table}: {seen['inlined']} inlined rows left after the final srdp_compact")
    return out


def problems(outcome: Outcome) -> list[str]:
    """Everything that makes the run a failure, each with the full error text."""
    out = []
    for c in outcome.calls:
        if "error" in c:
            out.append(f"srdp_{c['op']} failed after {c['end'] - c['start']:.1f} s "
                       f"({call_attempts(c)} attempts): {c['error']}")
        elif {(r["schema_name"], r["table_name"]) for r in c["rows"]} != {("main", t) for t in TABLES}:
            out.append(f"srdp_{c['op']} returned rows for other datasets: {c['rows']}")
        limit = outcome.settings.max_call_s
        if limit is not None and c["end"] - c["start"] > limit:
            out.append(f"srdp_{c['op']} took {c['end'] - c['start']:.1f} s, longer than max_retry_seconds = {limit:g}")
    if "error" in outcome.final:
        out.append(f"the final srdp_compact (no load) failed: {outcome.final['error']}")
    for r in outcome.loaders:
        for f in r["failed"]:
            out.append(f"loader {r['loader']} gave up on batch {f['batch']} after {f['attempts']} attempts: {f['error']}")
    return out + row_problems(outcome)


def proof_gaps(outcome: Outcome, contention: bool = True) -> list[str]:
    """Why a run without problems would still prove nothing: too few maintenance calls that
    started and succeeded inside the loading window, or (``contention``) none that met contention
    (needed a retry; on PostgreSQL DuckLake's own commit retries may absorb it)."""
    s = summarize(outcome)
    out: list[str] = []
    if not outcome.settings.maintain:
        return out
    if s["calls succeeded during load"] < outcome.settings.min_calls:
        out.append(f"only {s['calls succeeded during load']} maintenance calls succeeded while the loaders "
                   f"ran (at least {outcome.settings.min_calls} wanted)")
    if contention and s["max attempts"] < 2:
        out.append("no maintenance call needed a retry: the maintenance never met contention")
    return out


def report(outcome: Outcome) -> str:
    s = summarize(outcome)
    width = max(len(k) for k in s)
    lines = [f"{k:<{width}}  {v}" for k, v in s.items()]
    t0 = min(r["start"] for r in outcome.loaders)
    lines.append(f"loading window s  {max(r['end'] for r in outcome.loaders) - t0:.1f}")
    lines.append("calls (function, start-end s from the loading start, attempts, ok): " + ", ".join(
        f"{c['op']} {c['start'] - t0:.1f}-{c['end'] - t0:.1f} {call_attempts(c)} {'ok' if 'rows' in c else 'FAILED'}"
        for c in outcome.calls))
    errors = Counter(_one_line(c["error"]) for c in outcome.calls if "error" in c)
    lines += [f"maintenance error x{n}: {e}" for e, n in errors.most_common()]
    loader_errors: Counter[str] = Counter()
    for r in outcome.loaders:
        loader_errors.update(r["errors"])
    lines += [f"loader retry x{n}: {e}" for e, n in loader_errors.most_common(5)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--loaders", type=int, default=2)
    parser.add_argument("--maintainers", type=int, default=1, help="maintenance processes")
    parser.add_argument("--rows", default="10-50", help="rows per batch, lo-hi")
    parser.add_argument("--ops", default="compact,flush", help="maintenance functions called in turn")
    parser.add_argument("--min-calls", type=int, default=Settings.min_calls)
    parser.add_argument("--loader-pause", type=float, default=Settings.loader_pause_s,
                        help="seconds each loader waits after a committed batch (0: back to back)")
    parser.add_argument("--extra", default="", help="lines added to the catalog's definition in srdp.toml")
    parser.add_argument("--max-retry-seconds", type=float,
                        help="the catalog's max_retry_seconds (added to --extra); a longer call is a problem")
    parser.add_argument("--workdir", type=Path, help="default: a temporary folder, removed unless --keep")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, help="write the figures and problems as JSON")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the first run with the loaders alone (no throughput ratio)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return 0
    lo, hi = (int(x) for x in args.rows.split("-"))
    settings = Settings(seconds=args.seconds, loaders=args.loaders, maintainers=args.maintainers, min_rows=lo, max_rows=hi,
                        ops=tuple(args.ops.split(",")), min_calls=args.min_calls,
                        loader_pause_s=args.loader_pause, max_call_s=args.max_retry_seconds)
    if args.max_retry_seconds is not None:
        args.extra += f"\nmax_retry_seconds = {int(args.max_retry_seconds)}"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="srdp-load-"))
    servers = None
    try:
        if args.backend == "postgres":
            sys.path.insert(0, str(REPO / "scripts"))
            import servers as servers_module

            # Outside the private temporary folder: the postgres user must reach the cluster.
            servers = servers_module.start(Path(tempfile.gettempdir()) / f"srdp-load-servers-{os.getpid()}")
            make = lambda name: postgres_lake(servers, workdir / name, args.extra)  # noqa: E731
        else:
            make = lambda name: sqlite_lake(workdir / name, args.extra)  # noqa: E731
        alone = None
        if not args.no_baseline:  # the same loaders on a lake of their own, nothing else running
            alone = run(make("alone"), replace(settings, maintain=False), workdir / "alone")
        outcome = run(make("lake"), settings, workdir / "run")
    finally:
        if servers is not None:
            servers.stop()
        if not args.keep and args.workdir is None:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    found, gaps = problems(outcome), proof_gaps(outcome, contention=args.backend == "sqlite")
    print(report(outcome))
    figures = summarize(outcome)
    if alone is not None:
        found += [f"loaders alone: {p}" for p in problems(alone)]
        figures["loader batches per s alone"] = round(loader_rate(alone), 1)
        figures["loader throughput beside maintenance / alone"] = round(loader_rate(outcome) / loader_rate(alone), 2)
        print(f"loader batches per s alone  {figures['loader batches per s alone']}")
        print(f"loader throughput beside maintenance / alone  {figures['loader throughput beside maintenance / alone']}")
    for p in found:
        print("PROBLEM:", p)
    for g in gaps:
        print("NOTE:", g)
    if args.out:
        args.out.write_text(json.dumps({"figures": figures, "problems": found, "gaps": gaps}, indent=2))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
