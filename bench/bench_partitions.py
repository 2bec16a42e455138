#!/usr/bin/env python3
"""Partitioned writes and reads: SrdpIOManager against a hand-written DuckLake IO manager, side by
side in real Dagster runs on copies of the same lake.

The lake (SQLite catalog, local data) holds ``bench.sales``: 30 daily partitions (2024-01-01 to
2024-01-30) of ROWS_PER_DAY rows x 10 columns, each written by its own ``dg.materialize`` through
SrdpIOManager, so every partition has its materialization (with ``srdp/snapshot_id``) in a
SQLite-backed Dagster instance and its own Parquet file. Every timed run copies the lake and the
instance first and runs in a fresh process; both IO managers attach before the run starts.

* **read** shapes: ``one partition`` (a daily downstream reading the same day), ``30 partitions``
  (a non-partitioned downstream reading every day: the issue's 900,000 rows) and ``self-dependent``
  (partition 2024-01-16 of ``sales`` reading its own 2024-01-15); each as pandas, polars, pyarrow
  and RecordBatchReader inputs, SrdpIOManager with ``pin_inputs`` on (the default; one pyarrow
  read of one partition also with ``pin_inputs=False``, which shows what the pin's Dagster
  event-log query costs). The time is the IO manager's ``load_input`` plus the asset consuming
  the value (a RecordBatchReader is read batch by batch there). The small reads (one day, ~60 ms,
  where one process's noise would decide a round) run ``--pairs`` back-to-back pairs per round
  (default 3) and a round's ratio is the median of its pairs'.
* **write** shapes: one partition (a day of ROWS_PER_DAY rows replaced) and a single-run backfill
  of the 30 partitions, as pyarrow and pandas outputs; the time is ``handle_output``.

The hand-written IO manager is what a user writes without srdp: ATTACH once (``srdp.connect`` and
``srdp_attach_catalog``, as srdp's), reads ``SELECT * FROM lake.bench.sales WHERE day >= 'start'
AND day < 'end'`` converted with DuckDB's own ``.df()`` / ``.pl()`` / ``.to_arrow_table()`` /
``.to_arrow_reader()``, writes ``BEGIN; DELETE FROM ... WHERE day >= ? AND day < ?; INSERT INTO ...
SELECT * FROM frame; COMMIT``. Both sides' results must agree (rows, ``sum(id)``, checksum and
column types); after writes the table's rows and checksum must equal the pristine lake's.

    .venv/bin/python bench/bench_partitions.py                     # 5 rounds
    .venv/bin/python bench/bench_partitions.py --quick             # 3,000 rows a day, 2 rounds
    .venv/bin/python bench/bench_partitions.py --scenarios read --kinds pyarrow,pandas

Results: a table on stdout and JSON in bench/results/partitions.json (partitions-quick.json).
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sides  # noqa: E402
from iomanagers import Clock, hand_io_manager_class, srdp_io_manager_class  # noqa: E402

DAYS = 30
ROWS_PER_DAY = 30_000
START = date(2024, 1, 1)
GOAL = 1.20
COLUMNS = ["id", "day", "k", "a", "b", "c", "flag", "ts", "s", "name"]
CHECKSUM = f"count(*), sum(id)::VARCHAR, sum(hash({', '.join(COLUMNS)}))::VARCHAR"

TOML = """[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.bench]
writer = "io_manager"
layer = "curated"
"""

KINDS = ("pandas", "polars", "pyarrow", "RecordBatchReader")
READ_SHAPES = ("one partition", "30 partitions", "self-dependent")
#: Reads of one day (~60 ms): one process's noise would decide a round, so each round runs
#: several back-to-back pairs (``--pairs``) and takes the median of their ratios.
SMALL_READS = ("one partition", "self-dependent")
WRITE_SHAPES = ("one partition", "30 partitions")
ONE_DAY = "2024-01-15"


# ------------------------------------------------------------------------------------------------
# worker side
# ------------------------------------------------------------------------------------------------


def daily():
    import dagster as dg

    return dg.DailyPartitionsDefinition(start_date=START.isoformat(), end_date=(START + timedelta(days=DAYS)).isoformat())


def make_frame(days: list[int], rows: int, kind: str) -> Any:
    """Deterministic rows of the given day offsets: 10 columns (BIGINT, DATE, INTEGER, 2 DOUBLE,
    BIGINT, BOOLEAN, TIMESTAMP, 2 strings), as a pyarrow Table or a pandas DataFrame."""
    import numpy as np
    import pyarrow as pa

    parts = []
    for d in days:
        rng = np.random.default_rng(d)
        ids = np.arange(d * rows, (d + 1) * rows, dtype=np.int64)
        parts.append({
            "id": ids,
            "day": np.full(rows, np.datetime64(START, "D") + np.timedelta64(d, "D")),
            "k": (ids % 1000).astype(np.int32),
            "a": rng.random(rows),
            "b": rng.normal(size=rows),
            "c": rng.integers(0, 1 << 40, rows),
            "flag": ids % 3 == 0,
            "ts": np.datetime64(datetime.combine(START, datetime.min.time()), "us")
            + np.timedelta64(d, "D").astype("timedelta64[us]") + (ids % 86400).astype("timedelta64[s]"),
            "s": np.array([f"s{i}" for i in ids], dtype=object),
            "name": np.array(["alpha", "beta", "gamma", "delta"], dtype=object)[ids % 4],
        })
    columns = {c: np.concatenate([p[c] for p in parts]) for c in COLUMNS}
    table = pa.table({
        **{c: pa.array(v) for c, v in columns.items() if c != "day"},
        "day": pa.array(columns["day"].astype("datetime64[D]"), pa.date32()),
    }).select(COLUMNS)
    return table.to_pandas(date_as_object=True) if kind == "pandas" else table


def checksum(obj: Any) -> list[Any]:
    """Rows, sum(id) and the checksum of a frame, and its column types as DuckDB sees them."""
    import duckdb

    con = duckdb.connect()
    con.register("frame", obj)
    row = con.execute(f"SELECT {CHECKSUM} FROM frame").fetchone()
    types = [str(t) for t in con.sql("SELECT * FROM frame LIMIT 0").types]
    con.close()
    return [int(row[0]), row[1], row[2], types]


def annotation(kind: str) -> Any:
    import pyarrow as pa

    if kind == "pandas":
        import pandas as pd

        return pd.DataFrame
    if kind == "polars":
        import polars as pl

        return pl.DataFrame
    return pa.RecordBatchReader if kind == "RecordBatchReader" else pa.Table


def consume(value: Any, kind: str) -> list[Any]:
    """What the consuming asset does with its input, timed: a reader is read batch by batch (rows
    and sum(id)); the checksum of any other frame is taken untimed (both sides' values are
    already in memory)."""
    if kind == "RecordBatchReader":
        import pyarrow.compute as pc

        start = time.perf_counter()
        rows, total = 0, 0
        for batch in value:
            rows += batch.num_rows
            total += pc.sum(batch.column("id")).as_py() or 0
        Clock.spent += time.perf_counter() - start
        return [rows, str(total)]
    return checksum(value.to_arrow() if kind == "polars" else value)


def sales_asset(kind: str, frame: Any = None, self_dependent: bool = False, single_run: bool = False):
    """``bench/sales`` (daily, partition_expr ``day``): returns ``frame``, or (self-dependent)
    reads its previous partition as ``kind`` and writes nothing."""
    import dagster as dg

    seen: list[Any] = []
    options: dict[str, Any] = {"backfill_policy": dg.BackfillPolicy.single_run()} if single_run else {}
    if self_dependent:
        options["ins"] = {"previous": dg.AssetIn(
            key=dg.AssetKey(["bench", "sales"]),
            partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
        )}

        def body(previous):
            seen.append(consume(previous, kind))

        body.__annotations__ = {"previous": annotation(kind), "return": None}
    else:
        def body():
            return frame

        body.__annotations__ = {"return": Any}
    asset = dg.asset(name="sales", key_prefix=["bench"], partitions_def=daily(),
                     metadata={"partition_expr": "day"}, **options)(body)
    return asset, seen


def consumer_asset(kind: str, shape: str):
    """A downstream of ``bench/sales`` reading it as ``kind``: daily (one partition) or not
    partitioned (every partition)."""
    import dagster as dg

    seen: list[Any] = []

    def consumer(sales):
        seen.append(consume(sales, kind))

    consumer.__annotations__ = {"sales": annotation(kind), "return": None}
    options: dict[str, Any] = {"partitions_def": daily()} if shape == "one partition" else {}
    return dg.asset(name="consumer", key_prefix=["bench"], **options)(consumer), seen


def instance_at(root: Path):
    import dagster as dg

    return dg.DagsterInstance.local_temp(tempdir=str(root / "dagster"))


def build(spec: dict) -> dict:
    """The lake and the instance: 30 partitions, each written by a run of its own through srdp."""
    import dagster as dg

    root, rows = Path(spec["root"]), spec["rows"]
    root.mkdir(parents=True)
    (root / "srdp.toml").write_text(TOML)
    (root / "dagster").mkdir()
    (root / "dagster" / "dagster.yaml").write_text(sides.DAGSTER_YAML)
    io = {"io_manager": srdp_io_manager_class()(config=str(root / "srdp.toml"))}
    instance = instance_at(root)
    for d in range(DAYS):
        asset, _ = sales_asset("pyarrow", make_frame([d], rows, "pyarrow"))
        key = (START + timedelta(days=d)).isoformat()
        assert dg.materialize([asset], resources=io, partition_key=key, instance=instance).success
    return verify(spec)


def verify(spec: dict) -> dict:
    """Rows and checksum of bench.sales, and of the day ONE_DAY, read by a process of its own."""
    import srdp

    con = srdp.connect(config=str(Path(spec["root"]) / "srdp.toml"))
    con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    whole = con.execute(f"SELECT {CHECKSUM} FROM lake.bench.sales").fetchone()
    one = con.execute(f"SELECT {CHECKSUM} FROM lake.bench.sales WHERE day = DATE '{ONE_DAY}'").fetchone()
    con.execute("DETACH lake")
    return {"whole": list(whole), "one": list(one)}


def run(spec: dict) -> dict:
    """One timed run of one side (see the module doc)."""
    import dagster as dg

    from srdp.lake import LakeSession

    root, kind, shape, side = Path(spec["root"]), spec["kind"], spec["shape"], spec["side"]
    config = str(root / "srdp.toml")
    role = "writer" if spec["what"] == "write" else "reader"
    if side == "srdp":
        io_manager = srdp_io_manager_class()(config=config, pin_inputs=spec.get("pin", True))
        LakeSession.get(config, "lake").attach(role)
    else:
        io_manager = hand_io_manager_class()(config=config, role=role)
        io_manager.con()
    resources = {"io_manager": io_manager}
    instance = instance_at(root)
    instance.get_latest_materialization_event(dg.AssetKey(["bench", "warm_up"]))
    out: dict[str, Any] = {}
    if spec["what"] == "write":
        days = [14] if shape == "one partition" else list(range(DAYS))
        frame = make_frame(days, spec["rows"], kind)
        asset, _ = sales_asset(kind, frame, single_run=True)
        before = sides.peak_rss_mb()
        if shape == "one partition":
            result = dg.materialize([asset], resources=resources, partition_key=ONE_DAY, instance=instance)
        else:
            job = dg.Definitions(assets=[asset], jobs=[dg.define_asset_job("backfill", selection=[asset])],
                                 resources=resources).resolve_job_def("backfill")
            last = (START + timedelta(days=DAYS - 1)).isoformat()
            result = job.execute_in_process(instance=instance, tags={
                "dagster/asset_partition_range_start": START.isoformat(), "dagster/asset_partition_range_end": last})
        assert result.success
    else:
        if shape == "self-dependent":
            asset, seen = sales_asset(kind, self_dependent=True)
            before = sides.peak_rss_mb()
            result = dg.materialize([asset], resources=resources, partition_key="2024-01-16", instance=instance)
        else:
            upstream, _ = sales_asset(kind)
            consumer, seen = consumer_asset(kind, shape)
            before = sides.peak_rss_mb()
            result = dg.materialize([upstream, consumer], selection=[consumer], resources=resources, instance=instance,
                                    partition_key=ONE_DAY if shape == "one partition" else None)
        assert result.success
        out["seen"] = seen[0]
        if side == "srdp":
            logs = [e.user_message for e in instance.all_logs(result.run_id) if ": reading " in e.user_message]
            out["pinned"] = bool(logs) and " at snapshot " in logs[0]
    out.update({"seconds": Clock.spent, "rss_before_mb": before, "rss_peak_mb": sides.peak_rss_mb()})
    return out


def worker(spec: dict) -> None:
    sides.emit({"build": build, "run": run, "verify": verify}[spec["mode"]](spec))


# ------------------------------------------------------------------------------------------------
# orchestrator side
# ------------------------------------------------------------------------------------------------


def restore(pristine: Path, root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(pristine, root)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="3,000 rows a day, 2 rounds")
    ap.add_argument("--rows", type=int, help=f"rows per daily partition (default {ROWS_PER_DAY:,})")
    ap.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    ap.add_argument("--scenarios", default="read,write", help="read, write or both (default)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="frame types (default: all)")
    ap.add_argument("--shapes", default=None, help="shapes, comma-separated (default: all)")
    ap.add_argument("--pairs", type=int, default=3,
                    help="back-to-back srdp/hand pairs per round for the small reads (default 3)")
    ap.add_argument("--workdir", help="where to build the lake (default: a new folder in $TMPDIR)")
    ap.add_argument("--out", help="JSON result file (default bench/results/partitions[-quick].json)")
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    rows = args.rows or (3_000 if args.quick else ROWS_PER_DAY)
    rounds = args.rounds or (2 if args.quick else 5)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    wanted = {s.strip() for s in args.scenarios.split(",")}
    shapes = {s.strip() for s in args.shapes.split(",")} if args.shapes else None
    out_path = Path(args.out) if args.out else HERE / "results" / ("partitions-quick.json" if args.quick else "partitions.json")
    work = Path(tempfile.mkdtemp(prefix="srdp-bench-partitions-", dir=args.workdir))
    script = str(Path(__file__).resolve())
    print(f"partitioned writes and reads: {DAYS} daily partitions x {rows:,} rows, {rounds} rounds, "
          f"load average {sides.load_average()}; lakes in {work}", flush=True)
    wall = time.perf_counter()
    pristine, root = work / "pristine", work / "lake"
    try:
        # Built where the runs use it (the catalog stores its data path), then kept as the pristine copy.
        built = sides.spawn(script, {"mode": "build", "root": str(root), "rows": rows})
        shutil.copytree(root, pristine)
        print(f"  built in {time.perf_counter() - wall:.0f} s: {built['whole'][0]:,} rows", flush=True)
        scenarios: list[sides.Scenario] = []
        for what, shape_list in (("read", READ_SHAPES), ("write", WRITE_SHAPES)):
            if what not in wanted:
                continue
            for shape in shape_list:
                for kind in kinds:
                    if shapes and shape not in shapes or what == "write" and kind not in ("pyarrow", "pandas"):
                        continue
                    sc = sides.Scenario(f"{what} {shape}, {kind}", ["srdp", "hand-written"],
                                        goals={"hand-written": GOAL} if what == "read" else {})
                    sc.extra.update({"what": what, "shape": shape, "kind": kind, "pin": True})
                    if what == "read" and shape in SMALL_READS:
                        sc.extra["pairs"] = args.pairs
                    scenarios.append(sc)
            if what == "read" and "pyarrow" in kinds and (not shapes or "one partition" in shapes):
                # What the pinned snapshot costs: one Dagster event-log query per input.
                sc = sides.Scenario("read one partition, pyarrow, pin_inputs=False", ["srdp", "hand-written"])
                sc.extra.update({"what": "read", "shape": "one partition", "kind": "pyarrow", "pin": False,
                                 "pairs": args.pairs})
                scenarios.append(sc)
        answers: dict[str, dict[str, Any]] = {}

        def one(sc: sides.Scenario, side: str, turn: int) -> tuple[float, float]:
            restore(pristine, root)
            spec = {"mode": "run", "root": str(root), "rows": rows, "side": side,
                    **{k: sc.extra[k] for k in ("what", "shape", "kind", "pin")}}
            r = sides.spawn(script, spec)
            if sc.extra["what"] == "read":
                expected = built["whole"] if sc.extra["shape"] == "30 partitions" else None
                got = r["seen"]
                other = answers.setdefault(sc.name, {}).setdefault("seen", got)
                sides.check(got == other, f"{sc.name}: {side} read {got}, the other side {other}")
                if expected is not None:
                    sides.check(got[:2] == expected[:2], f"{sc.name}: {side} read {got[:2]}, the table has {expected[:2]}")
                if side == "srdp":
                    sides.check(r["pinned"] == sc.extra["pin"], f"{sc.name}: srdp pinned: {r['pinned']}")
            else:
                after = sides.spawn(script, {"mode": "verify", "root": str(root)})
                sides.check(after == built, f"{sc.name}: {side} left {after}, the pristine lake has {built}")
            return r["seconds"], r["rss_peak_mb"]

        sides.run_rounds(scenarios, rounds, one, log=lambda line: print(line, flush=True))
    except sides.BenchError as error:
        print(f"\nFAILED: {error}\nlakes kept in {work}", file=sys.stderr)
        return 1
    table = sides.render(scenarios)
    print()
    print(table)
    print(f"\nratio = srdp / hand-written, the median of the per-round ratios (each side a fresh process on "
          f"a fresh copy; the order rotates by round; a small read's round is the median of {args.pairs} "
          f"back-to-back pairs, the order alternating). Seconds: the IO manager's load_input and the asset "
          f"consuming the value (reads), handle_output (writes). load: the 1-minute load average before "
          f"each round (now {sides.load_average()}). total wall time {time.perf_counter() - wall:.0f} s")
    sides.write_results(out_path, scenarios, table, rows_per_day=rows, days=DAYS, rounds=rounds, pairs=args.pairs)
    print(f"results written to {out_path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
