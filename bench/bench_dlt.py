#!/usr/bin/env python3
"""Small incremental dlt loads: srdp's helper (``srdp.ingest.dlt``) against dlt's own ``ducklake``
destination, side by side.

Each side, in a fresh process of its own per round, on a lake of its own (SQLite catalog, local
data, created by ``srdp_attach_catalog`` before the clock): one pipeline, a first load of ROWS
orders (with nested items: dlt makes a child table), then LOADS incremental loads of BATCH new
orders each (append; what raw_append_only allows), each timed alone.

* **srdp**: ``destination("lake").pipeline("shop")``, then ``dest.run(pipeline, data)`` per load:
  srdp.toml read and the writer checked (once per pipeline and process), the rules applied, the
  relaxed rules warned about, every write labelled with its writer (DuckLake commit author).
* **dlt**: ``dlt.pipeline("shop", destination=dlt.destinations.ducklake(credentials=...))`` with
  the credentials srdp would give (the same lake, the same DuckDB settings), then
  ``pipeline.run(data, write_disposition="append")`` per load.

Both lakes must end with the same rows in ``raw.orders`` and ``raw.orders__items`` and the same
number of completed loads. The figure is the median over rounds of the per-round ratio of the
sides' median incremental load (goal <= 1.05), and the same for the first load.

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


def run(spec: dict) -> dict:
    """One side: a first load and ``loads`` incremental ones, each timed."""
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

    seconds = []
    start_id = 0
    for number in range(spec["loads"] + 1):
        n = spec["rows"] if number == 0 else spec["batch"]
        data = dlt.resource(orders(start_id, n), name="orders")
        start = time.perf_counter()
        info = load(data)
        seconds.append(time.perf_counter() - start)
        assert not info.has_failed_jobs
        start_id += n
    con = srdp.connect(config=config)
    con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    state = {
        "orders": list(con.execute("SELECT count(*), sum(id), sum(amount) FROM lake.raw.orders").fetchone()),
        "items": list(con.execute("SELECT count(*), sum(qty) FROM lake.raw.orders__items").fetchone()),
        "loads": con.execute("SELECT count(*) FROM lake.raw._dlt_loads WHERE status = 0").fetchone()[0],
    }
    con.execute("DETACH lake")
    return {"first_s": seconds[0], "incremental_s": seconds[1:], "state": state, "rss_peak_mb": sides.peak_rss_mb()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 1 + 4 loads")
    ap.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    ap.add_argument("--loads", type=int, help="incremental loads per round (default 10; 4 with --quick)")
    ap.add_argument("--out", help="JSON result file (default bench/results/dlt[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        sides.emit(run(json.loads(args.worker)))
        return 0
    rounds = args.rounds or (2 if args.quick else 5)
    loads = args.loads or (4 if args.quick else 10)
    out_path = Path(args.out) if args.out else HERE / "results" / ("dlt-quick.json" if args.quick else "dlt.json")
    work = Path(tempfile.mkdtemp(prefix="srdp-bench-dlt-"))
    script = str(Path(__file__).resolve())
    print(f"dlt loads: a first load of {ROWS:,} orders, then {loads} loads of {BATCH} each, {rounds} rounds, "
          f"load average {sides.load_average()}", flush=True)
    wall = time.perf_counter()
    incremental = sides.Scenario(f"incremental load ({BATCH} orders)", ["srdp", "dlt ducklake"], goals={"dlt ducklake": GOAL})
    first = sides.Scenario(f"first load ({ROWS:,} orders)", ["srdp", "dlt ducklake"])
    states: dict[str, Any] = {}

    def one(sc: sides.Scenario, side: str, turn: int) -> tuple[float, float]:
        root = work / f"r{turn}-{side.split()[0]}"
        r = sides.spawn(script, {"root": str(root), "side": side, "rows": ROWS, "batch": BATCH, "loads": loads})
        shutil.rmtree(root, ignore_errors=True)
        other = states.setdefault(turn, r["state"])
        sides.check(r["state"] == other, f"round {turn}: {side} left {r['state']}, the other side {other}")
        sides.check(r["state"]["loads"] == loads + 1, f"{side}: {r['state']['loads']} completed loads")
        first.add(side, r["first_s"], r["rss_peak_mb"])
        incremental.extra.setdefault("each", {}).setdefault(side, []).append(r["incremental_s"])
        return statistics.median(r["incremental_s"]), r["rss_peak_mb"]

    try:
        sides.run_rounds([incremental], rounds, one, log=lambda line: print(line, flush=True))
    except sides.BenchError as error:
        print(f"\nFAILED: {error}\nlakes kept in {work}", file=sys.stderr)
        return 1
    first.loads = incremental.loads
    table = sides.render([incremental, first])
    print()
    print(table)
    print(f"\nincremental: per round, each side's median over its {loads} incremental loads; ratio = srdp / dlt, the "
          f"median of the per-round ratios (each side a fresh process and lake; the order rotates by round). "
          f"load: the 1-minute load average before each round (now {sides.load_average()}). total wall time "
          f"{time.perf_counter() - wall:.0f} s")
    sides.write_results(out_path, [incremental, first], table, rows=ROWS, batch=BATCH, loads=loads, rounds=rounds)
    print(f"results written to {out_path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
