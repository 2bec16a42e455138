"""Two promotions of one landing table that truly overlap, on a SQLite catalog: two processes,
each with its own DuckDB, are both inside their promotion transaction at once, each having found
the load new and written its rows, its ledger rows and its claim row; only then does either
commit. One commit wins; the other fails (on SQLite with "database is locked": DuckLake keeps its
SQLite read transaction open until the commit, so the lock refuses it before DuckLake's conflict
check on the claim row would), srdp retries it, and the retry's ledger check finds the load
recorded and stops. Exactly one process promotes the load: raw holds every landed row once (count
and checksum), the ledger one ``promoted`` row per table. A ledger that let the retry record the
load again fails here (2 promotions, 80 rows for 40 ids).

To make the overlap certain, each process wraps srdp's ``Ledger.record`` (the last step inside
the transaction) to wait, on its first call only, until the other process has reached the same
point. DuckDB, DuckLake and dlt run as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import PY, write_config
from landing_support import LANDING_TOML, checksum, expected_items, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import promote_landing

PROMOTE = textwrap.dedent("""
    import json, os, sys, time
    from srdp.dagster import SrdpIOManager
    import srdp.ingest.dlt as srdp_dlt
    from srdp.ingest import promote_landing
    from srdp.ingest.landing.ledger import Ledger
    from srdp.dagster.lake import LakeSession

    cfg, mine, theirs = sys.argv[1:4]
    table, children = json.loads(sys.argv[4])
    calls = []
    original = Ledger.record

    def record(self, con, load_id, *args, **kwargs):
        try:
            original(self, con, load_id, *args, **kwargs)
        except Exception as error:
            calls.append(type(error).__name__)
            raise
        calls.append("recorded")
        if len(calls) == 1:  # inside the first transaction: wait for the other one to be inside too
            open(mine, "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(theirs):
                if time.monotonic() > deadline:
                    raise RuntimeError("the other promotion never reached its transaction")
                time.sleep(0.005)

    Ledger.record = record
    retried = []
    asked = LakeSession.call

    def call(self, function, *args, **named):
        if function == "srdp_retry_wait":  # a failed transaction: srdp decides whether to retry
            retried.append(args[1].splitlines()[-1])
        return asked(self, function, *args, **named)

    LakeSession.call = call
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    outcomes = promote_landing(dest, table, children, io_manager=SrdpIOManager(config_path=cfg))
    print(json.dumps({"outcomes": [[o.load_id, o.status] for o in outcomes], "calls": calls, "retried": retried}))
""")


def ledger_rows(cfg: Path) -> list[tuple[str, str, str]]:
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return con.execute(
            "SELECT table_name, load_id, status FROM lake.raw_landed._srdp_landing_loads ORDER BY ALL").fetchall()
    finally:
        con.close()


def _race(tmp_path: Path, promotions: tuple[tuple[str, list[str]], tuple[str, list[str]]]) -> tuple[
        Path, srdp_dlt.DltDestination, list[int], str, str, list[dict]]:
    """Lands and promotes a first load, lands a second one, then runs ``promotions`` (table,
    children) in two processes that are both inside their transaction before either commits."""
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(i) for i in range(1, 21)]
    first = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    # The raw tables and the ledger exist already (creating them would conflict by itself), so
    # the claim rows are the only rows both transactions touch.
    promoted = promote_landing(dest, "orders", ["orders__items"], io_manager=SrdpIOManager(config_path=str(cfg)))
    assert [(o.load_id, o.status) for o in promoted] == [(first, "promoted")]
    source += [order(i) for i in range(21, 41)]
    load = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    marks = [tmp_path / "inside-a", tmp_path / "inside-b"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    processes = [
        subprocess.Popen([PY, "-c", PROMOTE, str(cfg), str(mine), str(theirs), json.dumps(which)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        for (mine, theirs), which in zip((marks, marks[::-1]), promotions)
    ]
    reports = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    # Both were inside their transaction with the load unrecorded.
    assert all(report["calls"][0] == "recorded" for report in reports), reports
    return cfg, dest, [r["id"] for r in source], first, load, reports


def test_two_overlapping_promotions_on_sqlite_promote_the_load_once(tmp_path: Path) -> None:
    both = ("orders", ["orders__items"])
    cfg, _, ids, first, load, reports = _race(tmp_path, (both, both))
    # Exactly one promoted the load, the other's commit conflicted, and its retry found the load
    # recorded.
    winners = [r for r in reports if r["outcomes"] == [[load, "promoted"]]]
    losers = [r for r in reports if r["outcomes"] == []]
    assert (len(winners), len(losers)) == (1, 1), reports
    assert losers[0]["calls"] == ["recorded", "AlreadyPromoted"], reports
    assert len(losers[0]["retried"]) == 1 and winners[0]["retried"] == [], reports
    in_raw = raw_rows(cfg)
    assert (len(in_raw), checksum(in_raw)) == (len(ids), checksum([(i, i * 10) for i in ids]))
    assert raw_rows(cfg, "orders__items") == expected_items(ids)
    assert ledger_rows(cfg) == sorted([
        ("orders", first, "promoted"), ("orders__items", first, "promoted"),
        ("orders", load, "claim"), ("orders", load, "promoted"),
        ("orders__items", load, "claim"), ("orders__items", load, "promoted"),
    ])


def test_two_overlapping_promotions_that_share_a_child_table_promote_it_once(tmp_path: Path) -> None:
    """``orders`` with ``orders__items`` beside ``orders__items`` on its own: their only common
    ledger row is the child's claim row. One commits; the other's retry finds the child table
    recorded. If the child-only promotion won, the parent's next run promotes ``orders`` alone."""
    cfg, dest, ids, first, load, reports = _race(tmp_path, (("orders", ["orders__items"]), ("orders__items", [])))
    assert sorted(len(r["outcomes"]) for r in reports) == [0, 1], reports
    loser = next(r for r in reports if r["outcomes"] == [])
    assert loser["calls"] == ["recorded", "AlreadyPromoted"] and len(loser["retried"]) == 1, reports
    rerun = promote_landing(dest, "orders", ["orders__items"], io_manager=SrdpIOManager(config_path=str(cfg)))
    child_won = reports[1]["outcomes"] == [[load, "promoted"]]
    assert [(o.load_id, o.status) for o in rerun] == ([(load, "promoted")] if child_won else []), reports
    in_raw = raw_rows(cfg)
    assert (len(in_raw), checksum(in_raw)) == (len(ids), checksum([(i, i * 10) for i in ids]))
    items = raw_rows(cfg, "orders__items")
    assert (len(items), checksum(items)) == (len(expected_items(ids)), checksum(expected_items(ids)))
