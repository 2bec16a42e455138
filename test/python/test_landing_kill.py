"""kill -9 of the landing promotion at random points, then a rerun, and two promotions of one
table at once: every landed row is in raw exactly once, and at every point raw holds exactly the
loads its ledger records (the ledger row commits in the same DuckLake transaction as the rows).

Eight loads with child rows wait in the landing zone; a promotion process is killed with SIGKILL
at a random moment after it is ready (seeded by ``SRDP_KILL_SEED``; the seed is printed, so pytest
shows it with any failure, and is recorded as the test's ``seed`` property), up to ten times while
loads are left, then run to the end. Raw is read back through srdp's attach; expected rows come from
the source.

A kill while the promotion's first writer attach creates the lake leaves a ``lake.sqlite`` that holds
no DuckLake catalog yet. srdp's reader attach then says so (``NOT_INITIALISED``), and a user's rerun
(the next promotion, which attaches as the writer) creates the lake whole and promotes every row.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Callable

import duckdb
import pytest

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import PY, write_config
from landing_support import LANDING_TOML, expected_items, order, orders_resource, raw_rows

PROMOTE = textwrap.dedent("""
    import json, os, sys, time
    from srdp.dagster import SrdpIOManager
    import srdp.ingest.dlt as srdp_dlt
    from srdp.ingest import promote_landing
    cfg = sys.argv[1]
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    io = SrdpIOManager(config_path=cfg, secrets=json.loads(os.environ.get("SRDP_TEST_SECRETS", "[]")))
    print("ready", flush=True)
    while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    print("done", len(outcomes), flush=True)
""")

LOADS, ROWS_PER_LOAD = 8, 40

# srdp's reader attach of a lake.sqlite that a kill left before DuckLake created the catalog in it.
NOT_INITIALISED = (
    "srdp_attach_catalog: catalog 'lake' is not initialised yet: sqlite:{file} holds no complete DuckLake "
    "catalog (a writer's first attach was interrupted, or none has run). A reader never creates a lake; "
    "the writer role creates it on its next attach: srdp_attach_catalog('lake', role := 'writer')"
)


def ledger_and_raw(cfg: Path, setup: list[str] | None = None) -> tuple[int, list[int]]:
    """(rows the ledger records as promoted, ids in raw), read in one snapshot; (0, []) when a kill
    left no lake, or a lake.sqlite that holds no DuckLake catalog yet (srdp's reader says exactly so)."""
    lake_file = cfg.parent / "catalog" / "lake.sqlite"
    if setup is None and not lake_file.exists():
        return 0, []  # killed before the promotion created the lake
    con = srdp.connect(config=cfg)
    for statement in setup or []:
        con.execute(statement)
    try:
        try:
            con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        except duckdb.Error as e:
            if setup is None and NOT_INITIALISED.format(file=lake_file) in str(e):
                print("killed while the first writer attach created the lake: not initialised yet")
                return 0, []
            raise
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


def test_kill_9_at_random_points_then_rerun_promotes_every_row_exactly_once(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source: list[dict] = []
    for n in range(LOADS):
        source += [order(i) for i in range(n * ROWS_PER_LOAD + 1, (n + 1) * ROWS_PER_LOAD + 1)]
        dest.run(pipeline, orders_resource(source))
    ids = list(range(1, LOADS * ROWS_PER_LOAD + 1))

    seed = int(os.environ.get("SRDP_KILL_SEED", time.time_ns() % 10_000))
    print(f"SRDP_KILL_SEED={seed}")  # pytest shows captured output with any failure or error below
    record_property("seed", seed)
    chance = random.Random(seed)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed_with_rows: list[int] = []
    for attempt in range(10):
        process = subprocess.Popen([PY, "-c", PROMOTE, str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env, cwd=tmp_path)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", f"seed {seed}: {process.stderr.read() if process.stderr else ''}"
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
    assert done.returncode == 0, f"seed {seed}: {done.stderr}"
    assert raw_rows(cfg) == [(i, i * 10) for i in ids], f"seed {seed}, rows when killed {killed_with_rows}"
    assert raw_rows(cfg, "orders__items") == expected_items(ids), f"seed {seed}"
    parent_rows, in_raw = ledger_and_raw(cfg)
    assert parent_rows == len(in_raw) == len(ids), f"seed {seed}"


SCHEMAS = LANDING_TOML[LANDING_TOML.index("[catalogs.lake.schemas.raw]"):]


@pytest.mark.parametrize("catalog", ["sqlite", "postgres"])
def test_two_promotions_of_one_table_at_once_promote_every_row_exactly_once(
    tmp_path: Path, catalog: str, request: pytest.FixtureRequest
) -> None:
    """Two processes promote the same three loads at the same moment, three rounds. On PostgreSQL
    (no file lock between them) both transactions really overlap: without the ledger's claim row
    DuckLake would commit both appends."""
    setup: list[str] | None = None
    if catalog == "postgres":
        from pg_lake import new_lake

        lake = new_lake(request.getfixturevalue("servers"), tmp_path,
                        extra='landing_path = "landing"\npromote_into = "raw_landed"\n' + SCHEMAS)
        cfg, setup = lake.cfg, lake.setup_sql()
    else:
        cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source: list[dict] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SRDP_TEST_SECRETS": json.dumps(setup or [])}
    for round_ in range(3):
        for n in range(round_ * 3, round_ * 3 + 3):
            source += [order(i) for i in range(n * ROWS_PER_LOAD + 1, (n + 1) * ROWS_PER_LOAD + 1)]
            dest.run(pipeline, orders_resource(source))
        go = tmp_path / f"go{round_}"
        processes = [
            subprocess.Popen([PY, "-c", PROMOTE, str(cfg), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=tmp_path)
            for _ in range(2)
        ]
        for process in processes:
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        go.touch()  # both start promoting the same three loads now
        for process in processes:
            _, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
        ids = [r["id"] for r in source]
        parent_rows, in_raw = ledger_and_raw(cfg, setup)
        assert in_raw == ids, f"round {round_}: {len(in_raw)} rows for {len(ids)} ids"
        assert parent_rows == len(ids)
