#!/usr/bin/env python3
"""Small incremental dlt loads: srdp's helper (``srdp.ingest.dlt``) against dlt's own ``ducklake``
destination, side by side.

Each side, in a fresh process of its own per round, on a lake of its own (SQLite catalog, local
data, created by ``srdp_attach_catalog`` before the clock): one pipeline, a first load of ROWS
orders (with nested items: dlt makes a child table), then LOADS incremental loads of BATCH new
orders each (append; what raw_append_only allows), each timed alone. The two processes run in
lockstep: load by load, one side then the other (which goes first alternates), so that each
pair of loads meets the same moment of a shared machine.

* **srdp**: ``destination("lake").pipeline("shop")``, then ``dest.run(pipeline, data)`` per load:
  srdp.toml read and the writer checked (once per pipeline and process), the rules applied, the
  relaxed rules warned about, every write labelled with its writer (DuckLake commit author).
* **dlt**: ``dlt.pipeline("shop", destination=dlt.destinations.ducklake(credentials=...))`` with
  the credentials srdp would give (the same lake, the same DuckDB settings), then
  ``pipeline.run(data, write_disposition="append")`` per load.

Both lakes must end with the same rows in ``raw.orders`` and ``raw.orders__items`` and the same
number of completed loads. A round's figure is the median of its pairs' ratios srdp / dlt; the
result is the median over rounds (goal <= 1.05 for the incremental loads; the first load beside).

    .venv/bin/python bench/bench_dlt.py                # 5 rounds of 1 + 10 loads
    .venv/bin/python bench/bench_dlt.py --quick        # 2 rounds of 1 + 4 loads

Results: a table on stdout and JSON in bench/results/dlt.json (dlt-quick.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sides  # noqa: E402

GOAL = 1.05
ROWS, BATCH = 1_000, 20

TOML = """[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""


def orders(start: int, n: int) -> list[dict[str, Any]]:
    """Orders with nested items (0-2 each)."""
    return [
        {"id": i, "customer": f"c{i % 7}", "amount": i * 3, "items": [{"sku": f"s{i}-{k}", "qty": k + 1} for k in range(i % 3)]}
        for i in range(start, start + n)
    ]


def serve(spec: dict) -> None:
    """One side, in lockstep with the other: sets the lake and the pipeline up, then answers on
    stdin ``ready``, ``load`` (the next load, timed: the first of ``rows`` orders, then ``batch``
    each) and ``state`` (the lake's rows and completed loads; then it exits)."""
    import dlt
    import srdp
    import srdp.ingest.dlt as srdp_dlt

    root, side = Path(spec["root"]), spec["side"]
    root.mkdir(parents=True)
    (root / "srdp.toml").write_text(TOML)
    config = str(root / "srdp.toml")
    con = srdp.connect(config=config)  # the lake exists before either side's clock starts
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("DETACH lake")
    con.close()
    pipelines = str(root / "pipelines")
    if side == "srdp":
        dest = srdp_dlt.destination("lake", config=config)
        pipeline = dest.pipeline("shop", pipelines_dir=pipelines)

        def load(data: Any) -> Any:
            return dest.run(pipeline, data)
    else:
        credentials = srdp_dlt.destination("lake", config=config).credentials()
        pipeline = dlt.pipeline("shop", destination=dlt.destinations.ducklake(credentials=credentials),
                                dataset_name="raw", pipelines_dir=pipelines)

        def load(data: Any) -> Any:
            return pipeline.run(data, write_disposition="append")

    start_id = 0
    for command in sys.stdin:
        if command.strip() == "ready":  # set up: the lake and the pipeline exist
            sides.emit({"ready": True})
            continue
        if command.strip() == "load":
            n = spec["rows"] if start_id == 0 else spec["batch"]
            data = dlt.resource(orders(start_id, n), name="orders")
            start = time.perf_counter()
            info = load(data)
            seconds = time.perf_counter() - start
            assert not info.has_failed_jobs
            start_id += n
            sides.emit({"seconds": seconds})
            continue
        con = srdp.connect(config=config)
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        state = {
            "orders": list(con.execute("SELECT count(*), sum(id), sum(amount) FROM lake.raw.orders").fetchone()),
            "items": list(con.execute("SELECT count(*), sum(qty) FROM lake.raw.orders__items").fetchone()),
            "loads": con.execute("SELECT count(*) FROM lake.raw._dlt_loads WHERE status = 0").fetchone()[0],
        }
        con.execute("DETACH lake")
        sides.emit({"state": state, "rss_peak_mb": sides.peak_rss_mb()})
        return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 1 + 4 loads")
    ap.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    ap.add_argument("--loads", type=int, help="incremental loads per round (default 10; 4 with --quick)")
    ap.add_argument("--out", help="JSON result file (default bench/results/dlt[-quick].json)")
    args = ap.parse_args()
    if args.serve:
        serve(json.loads(args.serve))
        return 0
    rounds = args.rounds or (2 if args.quick else 5)
    loads = args.loads or (4 if args.quick else 10)
    out_path = Path(args.out) if args.out else HERE / "results" / ("dlt-quick.json" if args.quick else "dlt.json")
    work = Path(tempfile.mkdtemp(prefix="srdp-bench-dlt-"))
    script = str(Path(__file__).resolve())
    print(f"dlt loads: a first load of {ROWS:,} orders, then {loads} loads of {BATCH} each, {rounds} rounds, "
          f"load average {sides.load_average()}", flush=True)
    wall = time.perf_counter()
    srdp_side, dlt_side = "srdp", "dlt ducklake"
    incremental = sides.Scenario(f"incremental load ({BATCH} orders)", [srdp_side, dlt_side], goals={dlt_side: GOAL})
    first = sides.Scenario(f"first load ({ROWS:,} orders)", [srdp_side, dlt_side])
    try:
        for turn in range(rounds):
            load = sides.load_average()
            print(f"  round {turn + 1}/{rounds} (load average {load})", flush=True)
            workers = {
                side: sides.Worker(script, {"root": str(work / f"r{turn}-{side.split()[0]}"), "side": side,
                                            "rows": ROWS, "batch": BATCH}, work / f"r{turn}-{side.split()[0]}.log")
                for side in (srdp_side, dlt_side)
            }
            try:
                for worker in workers.values():
                    worker.ask("ready")
                times: dict[str, list[float]] = {srdp_side: [], dlt_side: []}
                for number in range(loads + 1):
                    for side in sides.rotate([srdp_side, dlt_side], turn + number):
                        times[side].append(workers[side].ask("load")["seconds"])
                ends = {side: w.ask("state") for side, w in workers.items()}
            finally:
                for worker in workers.values():
                    worker.close()
            sides.check(ends[srdp_side]["state"] == ends[dlt_side]["state"],
                        f"round {turn}: srdp left {ends[srdp_side]['state']}, dlt {ends[dlt_side]['state']}")
            sides.check(ends[srdp_side]["state"]["loads"] == loads + 1, f"{ends[srdp_side]['state']['loads']} loads")
            pairs = [a / b for a, b in zip(times[srdp_side][1:], times[dlt_side][1:])]
            incremental.round_ratios.setdefault(dlt_side, []).append(statistics.median(pairs))
            first.round_ratios.setdefault(dlt_side, []).append(times[srdp_side][0] / times[dlt_side][0])
            for side in (srdp_side, dlt_side):
                incremental.add(side, statistics.median(times[side][1:]), ends[side]["rss_peak_mb"])
                first.add(side, times[side][0], ends[side]["rss_peak_mb"])
                incremental.extra.setdefault("each", {}).setdefault(side, []).append(times[side][1:])
            incremental.loads.append(load)
            print(f"    srdp {statistics.median(times[srdp_side][1:]):.3f} s, dlt {statistics.median(times[dlt_side][1:]):.3f} s "
                  f"per incremental load (median); pairs srdp / dlt: median {statistics.median(pairs):.2f} "
                  f"({min(pairs):.2f}-{max(pairs):.2f}); first load {times[srdp_side][0]:.2f} / "
                  f"{times[dlt_side][0]:.2f} s", flush=True)
    except sides.BenchError as error:
        print(f"\nFAILED: {error}\nlakes kept in {work}", file=sys.stderr)
        return 1
    first.loads = incremental.loads
    table = sides.render([incremental, first])
    print()
    print(table)
    print(f"\nincremental: the two sides run in lockstep, each in a process and on a lake of its own: load by load, one "
          f"side then the other (which goes first alternates). A round's ratio is the median of its {loads} pairs' "
          f"srdp / dlt; the table's ratio the median over rounds; seconds: medians per round. "
          f"load: the 1-minute load average before each round (now {sides.load_average()}). total wall time "
          f"{time.perf_counter() - wall:.0f} s")
    sides.write_results(out_path, [incremental, first], table, rows=ROWS, batch=BATCH, loads=loads, rounds=rounds)
    print(f"results written to {out_path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
