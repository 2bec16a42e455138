#!/usr/bin/env python3
"""Unpartitioned replaces and reads through SrdpIOManager, side by side with hand-written DuckLake
IO managers in real Dagster runs: time and peak memory for the same frame.

The lake (SQLite catalog, local data) holds ``bench.t``: ROWS rows x 10 columns (bench_io's
frame), written by ``dg.materialize`` through SrdpIOManager so that its materialization (with
``srdp/snapshot_id``) is in a SQLite-backed Dagster instance. Every timed run copies the lake and
the instance, runs in a fresh process (the same modules imported, the frame built and the lake
attached before the run) and reports the seconds of the IO manager's call and the process's peak
RSS (``ru_maxrss``).

* **replace** (pyarrow and pandas): the asset returns the same ROWS rows again. srdp's default
  write mode (one transaction, the table keeps its identity and history) against the hand-written
  ``BEGIN; DELETE FROM t; INSERT INTO t SELECT * FROM frame; COMMIT`` (the goal: <= 1.10 x) and
  ``CREATE OR REPLACE TABLE t AS SELECT * FROM frame`` (a new table: no DELETE to pay). The
  table's rows and checksum are checked after every run.
* **read** (pyarrow and pandas): a downstream asset reads ``bench.t`` (srdp: ``pin_inputs`` on),
  against the hand-written ``SELECT * FROM t`` ``.to_arrow_table()`` / ``.df()``; both values'
  rows and checksums must equal the table's.

Peak memory goal: <= 1.10 x the hand-written side for the same frame, writes and reads. A replace
(about half a second, where one process's noise on two cores would decide a round) runs each side
``--pairs`` times per round back to back (default 3, the order rotating) and a round's ratio is
the median of its runs' ratios.

    .venv/bin/python bench/bench_unpartitioned.py              # 1,000,000 rows, 5 rounds
    .venv/bin/python bench/bench_unpartitioned.py --quick      # 100,000 rows, 2 rounds

Results: a table on stdout and JSON in bench/results/unpartitioned.json (-quick.json).
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sides  # noqa: E402
from bench_io import TOML, checksum_of, make_frame  # noqa: E402
from iomanagers import Clock, hand_io_manager_class, srdp_io_manager_class  # noqa: E402

GOAL = 1.10
KINDS = ("pyarrow", "pandas")
TRANSACTION, CREATE_OR_REPLACE = "hand-written transaction", "hand-written CREATE OR REPLACE"


def instance_at(root: Path) -> Any:
    import dagster as dg

    return dg.DagsterInstance.local_temp(tempdir=str(root / "dagster"))


def producer(frame: Any) -> Any:
    import dagster as dg

    @dg.asset(key_prefix=["bench"], name="t")
    def t() -> Any:
        return frame

    return t


def build(spec: dict) -> dict:
    """The lake and the instance: bench.t written once through srdp."""
    import dagster as dg

    root = Path(spec["root"])
    root.mkdir(parents=True)
    (root / "srdp.toml").write_text(TOML)
    (root / "dagster").mkdir()
    (root / "dagster" / "dagster.yaml").write_text(sides.DAGSTER_YAML)
    frame = make_frame(spec["rows"], "arrow")
    io = {"io_manager": srdp_io_manager_class()(config=str(root / "srdp.toml"))}
    assert dg.materialize([producer(frame)], resources=io, instance=instance_at(root)).success
    return {"expected": checksum_of(frame), **verify(spec)}


def verify(spec: dict) -> dict:
    """Rows and checksum of bench.t, and its table id, read by a process of its own."""
    import srdp
    from bench_io import CHECKSUM

    con = srdp.connect(config=str(Path(spec["root"]) / "srdp.toml"))
    con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    row = con.execute(f"SELECT {CHECKSUM} FROM lake.bench.t").fetchone()
    table_id = con.execute(
        "SELECT table_id FROM __ducklake_metadata_lake.main.ducklake_table WHERE table_name = 't' AND end_snapshot IS NULL"
    ).fetchone()[0]
    con.execute("DETACH lake")
    return {"result": [int(row[0]), row[1]], "table_id": int(table_id)}


def run(spec: dict) -> dict:
    """One timed run of one side (see the module doc)."""
    import dagster as dg
    import pandas as pd
    import pyarrow as pa

    from srdp.lake import LakeSession

    root, side, kind = Path(spec["root"]), spec["side"], spec["kind"]
    config = str(root / "srdp.toml")
    role = "writer" if spec["what"] == "replace" else "reader"
    if side == "srdp":
        io_manager = srdp_io_manager_class()(config=config)
        LakeSession.get(config, "lake").attach(role)
    else:
        replace = "create or replace" if side == CREATE_OR_REPLACE else "transaction"
        io_manager = hand_io_manager_class()(config=config, role=role, replace=replace)
        io_manager.con()
    instance = instance_at(root)
    instance.get_latest_materialization_event(dg.AssetKey(["bench", "warm_up"]))
    resources = {"io_manager": io_manager}
    out: dict[str, Any] = {}
    if spec["what"] == "replace":
        frame = make_frame(spec["rows"], "pandas" if kind == "pandas" else "arrow")
        before = sides.peak_rss_mb()
        assert dg.materialize([producer(frame)], resources=resources, instance=instance).success
        out["frame"] = checksum_of(frame)  # what CREATE OR REPLACE leaves: the frame's own types
    else:
        annotation = pd.DataFrame if kind == "pandas" else pa.Table
        seen: list[Any] = []

        def consumer(t):
            seen.append(t)

        consumer.__annotations__ = {"t": annotation, "return": None}
        reader = dg.asset(key_prefix=["bench"], name="consumer")(consumer)
        before = sides.peak_rss_mb()
        assert dg.materialize([producer(None), reader], selection=[reader], resources=resources,
                              instance=instance).success
        out["seen"] = checksum_of(seen[0])
    out.update({"seconds": Clock.spent, "rss_before_mb": before, "rss_peak_mb": sides.peak_rss_mb()})
    return out


def worker(spec: dict) -> None:
    sides.emit({"build": build, "run": run, "verify": verify}[spec["mode"]](spec))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="100,000 rows, 2 rounds")
    ap.add_argument("--rows", type=int, help="rows (default 1,000,000)")
    ap.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    ap.add_argument("--scenarios", default="replace,read", help="replace, read or both (default)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="frame types (default: pyarrow,pandas)")
    ap.add_argument("--pairs", type=int, default=3,
                    help="back-to-back runs of the sides per round for the replaces (default 3)")
    ap.add_argument("--workdir", help="where to build the lake (default: a new folder in $TMPDIR)")
    ap.add_argument("--out", help="JSON result file (default bench/results/unpartitioned[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    rounds = args.rounds or (2 if args.quick else 5)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    wanted = {s.strip() for s in args.scenarios.split(",")}
    out_path = Path(args.out) if args.out else HERE / "results" / (
        "unpartitioned-quick.json" if args.quick else "unpartitioned.json")
    work = Path(tempfile.mkdtemp(prefix="srdp-bench-unpartitioned-", dir=args.workdir))
    script = str(Path(__file__).resolve())
    print(f"unpartitioned replaces and reads: {rows:,} rows x 10 columns, {rounds} rounds, load average "
          f"{sides.load_average()}; lakes in {work}", flush=True)
    wall = time.perf_counter()
    pristine, root = work / "pristine", work / "lake"
    try:
        built = sides.spawn(script, {"mode": "build", "root": str(root), "rows": rows})
        shutil.copytree(root, pristine)
        sides.check(built["result"] == built["expected"], f"build: the lake has {built['result']}, the frame {built['expected']}")
        scenarios = []
        for kind in kinds:
            if "replace" in wanted:
                scenarios.append(sides.Scenario(f"replace, {kind}", ["srdp", TRANSACTION, CREATE_OR_REPLACE],
                                                goals={TRANSACTION: GOAL},
                                                extra={"what": "replace", "kind": kind, "pairs": args.pairs}))
            if "read" in wanted:
                scenarios.append(sides.Scenario(f"read, {kind}", ["srdp", "hand-written"], goals={},
                                                extra={"what": "read", "kind": kind}))

        answers: dict[str, Any] = {}

        def one(sc: sides.Scenario, side: str, turn: int) -> tuple[float, float]:
            shutil.rmtree(root)
            shutil.copytree(pristine, root)
            spec = {"mode": "run", "root": str(root), "rows": rows, "side": side, **sc.extra}
            r = sides.spawn(script, spec)
            if sc.extra["what"] == "replace":
                after = sides.spawn(script, {"mode": "verify", "root": str(root)})
                # srdp and the transaction keep the table's types; CREATE OR REPLACE takes the frame's.
                expected = r["frame"] if side == CREATE_OR_REPLACE else built["expected"]
                sides.check(after["result"] == expected, f"{sc.name} {side}: the lake has {after['result']}, not {expected}")
                if side != CREATE_OR_REPLACE:
                    sides.check(after["table_id"] == built["table_id"], f"{sc.name} {side}: the table got a new id")
            else:
                # Rows as the table's; the checksum as the other side's (pandas loads DATE as datetime64).
                other = answers.setdefault(sc.name, r["seen"])
                sides.check(r["seen"][0] == built["expected"][0] and r["seen"] == other,
                            f"{sc.name} {side}: read {r['seen']}, the other side {other}, the table {built['expected']}")
            return r["seconds"], r["rss_peak_mb"]

        sides.run_rounds(scenarios, rounds, one, log=lambda line: print(line, flush=True))
    except sides.BenchError as error:
        print(f"\nFAILED: {error}\nlakes kept in {work}", file=sys.stderr)
        return 1
    table = sides.render(scenarios)
    print()
    print(table)
    print("\nmemory (peak RSS of each side's process, median of the per-round ratios srdp / other side; goal "
          f"<= {GOAL:.2f}):")
    for sc in scenarios:
        s = sc.summary()
        for other, r in s["rss_ratios"].items():
            print(f"  {sc.name:<16} vs {other:<32} {r['median']:.2f} ({min(r['each']):.2f}-{max(r['each']):.2f}); "
                  f"medians {sides.median(sc.rss_mb[sc.srdp]):.0f} / {sides.median(sc.rss_mb[other]):.0f} MB")
    print(f"\nratio = srdp / other side, the median of the per-round ratios (each side a fresh process on a "
          f"fresh copy; the order rotates by round); seconds: the IO manager's handle_output (replace) or "
          f"load_input (read). load: the 1-minute load average before each round (now {sides.load_average()}). "
          f"total wall time {time.perf_counter() - wall:.0f} s")
    sides.write_results(out_path, scenarios, table, rows=rows, rounds=rounds)
    print(f"results written to {out_path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
