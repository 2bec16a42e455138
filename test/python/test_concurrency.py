"""Concurrent appends and srdp_compact on one SQLite catalog, in real processes.

A writer process appends 10-row batches (autocommit INSERTs, inlined) for a few seconds and
retries a batch itself when the catalog is busy; one or two maintenance processes run
``srdp_compact('lake')`` in a loop meanwhile. Afterwards every committed (batch, k) row is there
exactly once, nothing else is, every compaction call either returned rows or failed with an srdp
error that names its attempts, and a fresh process can still write and compact.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import duckdb
import pytest

from conftest import REPO, run_python, write_config

WRITE_SECONDS = 8.0
ROWS_PER_BATCH = 10
MAX_ATTEMPTS = 8

CONFIG = f"""
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
max_attempts = {MAX_ATTEMPTS}
retry_backoff_ms = 50
"""

# The writer retries a batch itself (srdp retries only its own maintenance statements).
WRITER = """
import json, os, sys, time
import duckdb, srdp

cfg, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
con = srdp.connect(config=cfg)
for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
    con.execute(s)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
print("ready", flush=True)
sys.stdin.readline()
committed, failed, retried = [], [], []
start = time.time()
batch = 0
while time.time() - start < seconds:
    for attempt in range(1, 31):
        try:
            con.execute(
                f"INSERT INTO lake.main.e SELECT {batch}, range, 'b{batch}k' || range FROM range({ROWS})"
            )
            committed.append(batch)
            break
        except duckdb.Error as e:
            message = str(e)
            retryable = "database is locked" in message or "conflict" in message.lower()
            if not retryable or attempt == 30:
                failed.append({"batch": batch, "attempts": attempt, "error": message})
                break
            retried.append({"batch": batch, "attempt": attempt, "error": message})
            time.sleep(min(0.005 * 2 ** attempt, 0.25))
    batch += 1
    time.sleep(0.01)
end = time.time()
with open(out, "w") as f:
    json.dump({"start": start, "end": end, "committed": committed, "failed": failed, "retried": retried}, f)
""".replace("{ROWS}", str(ROWS_PER_BATCH))

# A maintenance process: srdp_compact in a loop until the stop file appears.
MAINTAINER = """
import json, os, sys, time
import duckdb, srdp

cfg, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
con = srdp.connect(config=cfg)
for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
    con.execute(s)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
print("ready", flush=True)
sys.stdin.readline()
calls = []
while not os.path.exists(stop):
    t0 = time.time()
    try:
        cur = con.sql("SELECT * FROM srdp_compact('lake')")
        names = cur.columns
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        calls.append({"start": t0, "end": time.time(), "rows": rows})
    except duckdb.Error as e:
        calls.append({"start": t0, "end": time.time(), "error": str(e)})
    time.sleep(0.05)
with open(out, "w") as f:
    json.dump(calls, f, default=str)
"""

# The table as a reader in a fresh process sees it: totals, duplicates, batches, live data files.
STATE = """
def state(con):
    stats = con.sql(
        "SELECT count(*), count(DISTINCT (batch, k)), sum(hash(batch, k))::VARCHAR, "
        "count(*) FILTER (WHERE s <> 'b' || batch || 'k' || k) FROM lake.main.e"
    ).fetchone()
    dupes = con.sql(
        "SELECT batch, k, count(*) FROM lake.main.e GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 20"
    ).fetchall()
    batches = [b for (b,) in con.sql("SELECT DISTINCT batch FROM lake.main.e ORDER BY 1").fetchall()]
    bad_batches = con.sql(
        "SELECT count(*) FROM (SELECT batch FROM lake.main.e GROUP BY batch "
        "HAVING count(*) <> {rows} OR count(DISTINCT k) <> {rows} OR min(k) <> 0 OR max(k) <> {rows} - 1)"
    ).fetchone()[0]
    files = con.sql(
        "SELECT data_file_id, record_count FROM __ducklake_metadata_lake.{meta}.ducklake_data_file "
        "WHERE end_snapshot IS NULL ORDER BY 1"
    ).fetchall()
    return {{"stats": stats, "dupes": dupes, "batches": batches, "bad_batches": bad_batches, "files": files}}
"""

READ_STATE = """
import json, os, srdp
{state}
con = srdp.connect(config={cfg!r})
for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
    con.execute(s)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'reader')")
print(json.dumps(state(con)))
"""

# After everything: can a brand-new process still write and compact?
AFTERWARDS = """
import json, os, srdp
{state}
con = srdp.connect(config={cfg!r})
for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
    con.execute(s)
con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
con.execute("INSERT INTO lake.main.e SELECT {batch}, range, 'b{batch}k' || range FROM range({rows})")
first = con.sql("SELECT rows_flushed, attempts, status FROM srdp_compact('lake')").fetchall()
second = con.sql("SELECT rows_flushed, attempts, status FROM srdp_compact('lake')").fetchall()
inlined = con.sql("SELECT inlined_rows FROM srdp_inlined_row_count('lake')").fetchall()
print(json.dumps({{"first": first, "second": second, "inlined": inlined, **state(con)}}))
"""

FINAL_BATCH = 1_000_000


def checksum(batches: list[int]) -> str:
    """sum(hash(batch, k)) over the given batches, computed by DuckDB the same way as in the lake."""
    con = duckdb.connect()
    try:
        value = con.execute(
            "SELECT sum(hash(b, k))::VARCHAR FROM (SELECT unnest($1::BIGINT[]) AS b), "
            f"(SELECT range AS k FROM range({ROWS_PER_BATCH}))",
            [batches],
        ).fetchone()[0]
    finally:
        con.close()
    return value


def spawn(script: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"process did not start: {line!r}\n{err}")
    return proc


def finish(proc: subprocess.Popen, timeout: float) -> None:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"process {proc.args[:2]} is wedged: still running after {timeout} s")
    assert proc.returncode == 0, err


def check_calls(calls: list[dict], name: str) -> list[dict]:
    """Every call returned one row for main.e with attempts >= 1, or an srdp error with attempts."""
    assert calls, f"{name} made no srdp_compact call"
    ok = []
    for call in calls:
        if "rows" in call:
            assert len(call["rows"]) == 1, call
            row = call["rows"][0]
            assert (row["catalog"], row["schema_name"], row["table_name"]) == ("lake", "main", "e"), call
            assert 1 <= int(row["attempts"]) <= MAX_ATTEMPTS, call
            assert int(row["rows_flushed"]) >= 0 and int(row["duration_ms"]) >= 0, call
            assert row["status"] in {"compacted", "nothing to do"}, call
            ok.append(call)
        else:
            error = call["error"]
            m = re.search(r"srdp_compact: dataset 'main\.e' failed to (\w[\w -]*) after (\d+) attempt\(s\): ", error)
            assert m, f"{name}: srdp_compact failed without reporting its attempts:\n{error}"
            assert 1 <= int(m.group(2)) <= MAX_ATTEMPTS, error
    return ok


def run_race(tmp_path, maintainers: int, cfg=None, env=None):
    """The race on the SQLite catalog of CONFIG, or on ``cfg`` with session setup in ``env``."""
    cfg = cfg or write_config(tmp_path, CONFIG)
    env = env or {}
    run_python(
        f"""
        import json, os, srdp
        con = srdp.connect(config={str(cfg)!r})
        for s in json.loads(os.environ.get("SRDP_TEST_SETUP", "[]")):
            con.execute(s)
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
        con.execute("CREATE TABLE lake.main.e (batch BIGINT, k BIGINT, s VARCHAR)")
        """,
        env=env,
    )
    stop = tmp_path / "stop"
    writer_out = tmp_path / "writer.json"
    maint_outs = [tmp_path / f"maintainer{i}.json" for i in range(maintainers)]
    procs = [spawn(WRITER, str(cfg), str(writer_out), str(WRITE_SECONDS), env=env)]
    try:
        procs += [spawn(MAINTAINER, str(cfg), str(out), str(stop), env=env) for out in maint_outs]
        for proc in reversed(procs):  # maintainers first, so the writer starts into running compactions
            proc.stdin.write("go\n")
            proc.stdin.flush()
        finish(procs[0], timeout=WRITE_SECONDS + 30)
        stop.touch()
        for proc in procs[1:]:
            # The longest possible compaction (8 attempts of both steps) is well under this.
            finish(proc, timeout=40)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    writer = json.loads(writer_out.read_text())
    calls = [json.loads(out.read_text()) for out in maint_outs]
    return cfg, writer, calls


def assert_table(seen: dict, batches: list[int]) -> None:
    """Every row of every given batch is there exactly once, and nothing else is."""
    expected = sorted(batches)
    count, distinct, total, bad_payload = seen["stats"]
    assert seen["dupes"] == [], (
        f"duplicated (batch, k) rows, e.g. {seen['dupes'][:5]}; live data files (id, rows): {seen['files']}"
    )
    assert seen["batches"] == expected, {
        "missing": sorted(set(expected) - set(seen["batches"])),
        "unexpected": sorted(set(seen["batches"]) - set(expected)),
    }
    assert seen["bad_batches"] == 0
    assert (count, distinct, bad_payload) == (len(expected) * ROWS_PER_BATCH, len(expected) * ROWS_PER_BATCH, 0)
    assert total == checksum(expected)


def check_outcome(cfg, writer, all_calls, env=None, meta="main"):
    committed, failed = writer["committed"], writer["failed"]
    failed_ids = [f["batch"] for f in failed]
    assert len(committed) >= 20, writer  # the writer did real work
    assert len(set(committed)) == len(committed) and not set(committed) & set(failed_ids)
    for f in failed:
        # A batch may only have been given up on for the contention errors it retries.
        assert "database is locked" in f["error"] or "conflict" in f["error"].lower(), f

    during = []
    for i, calls in enumerate(all_calls):
        ok = check_calls(calls, f"maintainer {i}")
        during += [c for c in ok if c["start"] < writer["end"] and c["end"] > writer["start"]]
    # At least one successful compaction overlapped the writing window and actually flushed rows.
    assert during, "no srdp_compact call succeeded while the writer ran"
    assert any(int(c["rows"][0]["rows_flushed"]) > 0 for c in during), during

    state = STATE.format(rows=ROWS_PER_BATCH, meta=meta)
    # 1. The table exactly as the writer and the maintainers left it.
    after_race = json.loads(run_python(READ_STATE.format(state=state, cfg=str(cfg)), env=env, timeout=60))
    assert_table(after_race, committed)
    # 2. No process is wedged: a fresh one writes, compacts, and the second compaction finds nothing.
    out = json.loads(
        run_python(
            AFTERWARDS.format(state=state, cfg=str(cfg), batch=FINAL_BATCH, rows=ROWS_PER_BATCH), env=env, timeout=60
        )
    )
    assert_table(out, committed + [FINAL_BATCH])
    (rows_flushed, attempts, status), = out["first"]
    assert rows_flushed >= ROWS_PER_BATCH and attempts >= 1 and status == "compacted"
    assert out["second"] == [[0, 1, "nothing to do"]]
    assert out["inlined"] == [[0]]
    assert len(out["files"]) == 1  # everything merged into one file
    return after_race, out


@pytest.mark.parametrize(
    "maintainers",
    [1, 2, 2, 2],
    ids=["one_maintainer", "two_maintainers_run1", "two_maintainers_run2", "two_maintainers_run3"],
)
def test_appends_survive_concurrent_compaction(tmp_path, maintainers):
    """Committed batches are all there exactly once after concurrent srdp_compact loops.

    Two maintainers run three times: before srdp bound and executed each step in one transaction,
    about one run in three duplicated rows (both processes merged the same files, see
    test_known_ducklake_defects.py). The assertion message lists duplicated rows and live files.
    """
    cfg, writer, calls = run_race(tmp_path, maintainers)
    after_race, out = check_outcome(cfg, writer, calls)
    summary = {
        "committed": len(writer["committed"]),
        "failed": len(writer["failed"]),
        "writer_retries": len(writer["retried"]),
        "calls": [len(c) for c in calls],
        "call_errors": [sum("error" in x for x in c) for c in calls],
        "rows": out["stats"][0],
        "files_after_race": len(after_race["files"]),
        "errors": sorted({x["error"] for c in calls for x in c if "error" in x}),
        "max_attempts": max(int(x["rows"][0]["attempts"]) for c in calls for x in c if "rows" in x),
    }
    print(json.dumps(summary))


@pytest.mark.parametrize("maintainers", [1, 2], ids=["one_maintainer", "two_maintainers"])
def test_appends_survive_concurrent_compaction_on_postgres_and_s3(servers, tmp_path, maintainers):
    """The same race on a PostgreSQL catalog with an S3 data path (credentials in DuckDB secrets)."""
    from pg_lake import new_lake

    lake = new_lake(servers, tmp_path, extra=f"max_attempts = {MAX_ATTEMPTS}\nretry_backoff_ms = 50")
    env = {"SRDP_TEST_SETUP": json.dumps(lake.setup_sql())}
    cfg, writer, calls = run_race(tmp_path, maintainers, cfg=lake.cfg, env=env)
    after_race, out = check_outcome(cfg, writer, calls, env=env, meta=lake.schema)
    print(json.dumps({"committed": len(writer["committed"]), "calls": [len(c) for c in calls]}))
