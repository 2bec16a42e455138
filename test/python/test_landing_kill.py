"""kill -9 of the landing promotion at random points, then a rerun: every landed row is in raw
exactly once, and at every point raw holds exactly the loads its ledger records (the ledger row
commits in the same DuckLake transaction as the rows).

Eight loads with child rows wait in the landing zone; a promotion process is killed with SIGKILL
at a random moment after it is ready (seeded by ``SRDP_KILL_SEED``, printed on failure), up to
ten times while loads are left, then run to the end. Raw is read back through srdp's attach; expected rows come from the source.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import PY, write_config
from landing_support import LANDING_TOML, expected_items, order, orders_resource, raw_rows

PROMOTE = textwrap.dedent("""
    import sys
    from srdp.dagster import SrdpIOManager
    import srdp.ingest.dlt as srdp_dlt
    from srdp.ingest import promote_landing
    cfg = sys.argv[1]
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    io = SrdpIOManager(config_path=cfg)
    print("ready", flush=True)
    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    print("done", len(outcomes), flush=True)
""")

LOADS, ROWS_PER_LOAD = 8, 40


def ledger_and_raw(cfg: Path) -> tuple[int, list[int]]:
    """(rows the ledger records as promoted, ids in raw), read in one snapshot."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' AND schema_name = 'raw_landed'"
        ).fetchall()}
        if "_srdp_landing_loads" not in tables:
            return 0, []
        con.execute("BEGIN TRANSACTION")
        (recorded,) = con.execute(
            "SELECT coalesce(sum(rows_promoted), 0) FROM lake.raw_landed._srdp_landing_loads").fetchone()
        ids = [r[0] for r in con.execute("SELECT id FROM lake.raw_landed.orders ORDER BY id").fetchall()]
        (items,) = con.execute("SELECT count(*) FROM lake.raw_landed.orders__items").fetchone()
        con.execute("COMMIT")
        return int(recorded) - int(items), ids
    finally:
        con.close()


def test_kill_9_at_random_points_then_rerun_promotes_every_row_exactly_once(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source: list[dict] = []
    for n in range(LOADS):
        source += [order(i) for i in range(n * ROWS_PER_LOAD + 1, (n + 1) * ROWS_PER_LOAD + 1)]
        dest.run(pipeline, orders_resource(source))
    ids = list(range(1, LOADS * ROWS_PER_LOAD + 1))

    seed = int(os.environ.get("SRDP_KILL_SEED", time.time_ns() % 10_000))
    chance = random.Random(seed)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed_with_rows: list[int] = []
    for attempt in range(10):
        process = subprocess.Popen([PY, "-c", PROMOTE, str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env, cwd=tmp_path)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.stderr.read() if process.stderr else ""
        time.sleep(chance.uniform(0.0, 0.3))  # a whole promotion of the 8 loads takes about 1 s
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        parent_rows, in_raw = ledger_and_raw(cfg)
        # Never a row twice, never a row without its ledger entry or the reverse.
        assert len(in_raw) == len(set(in_raw)), f"seed {seed}, attempt {attempt}"
        assert parent_rows == len(in_raw), f"seed {seed}, attempt {attempt}"
        killed_with_rows.append(len(in_raw))
        if len(in_raw) == len(ids):
            break

    done = subprocess.run([PY, "-c", PROMOTE, str(cfg)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert raw_rows(cfg) == [(i, i * 10) for i in ids], f"seed {seed}, rows when killed {killed_with_rows}"
    assert raw_rows(cfg, "orders__items") == expected_items(ids)
    parent_rows, in_raw = ledger_and_raw(cfg)
    assert parent_rows == len(in_raw) == len(ids)
