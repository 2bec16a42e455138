"""What each table's health on its own asset costs: the hourly monitor and the nightly job at N
datasets, with and without the health read, and how much the Dagster event log grows.

For each N (default 10, 1000) one SQLite lake of N tables, each with one Parquet file and 5
inlined rows. Measured:

* the health read (``srdp.dagster.health.read_catalog_health``): SQL statements it sends per
  catalog (counted on a proxy of the connection; srdp's own ``srdp_inlined_row_count`` is one
  of them and reads the catalog in a fixed number of metadata queries) and its time, against
  ``srdp_catalog_pressure`` (the monitor's read before);
* one monitor run through Dagster (``execute_in_process`` on a SQLite-backed instance): its
  time, the events it adds to the event log by type, and the growth of the event log's file;
* one maintenance run: the same, and the health read's share of it.

    .venv/bin/python bench/bench_health.py                 # 10 and 1,000 datasets
    .venv/bin/python bench/bench_health.py --datasets 10,100
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg

import srdp
from srdp import dagster as sd
from srdp.dagster.health import read_catalog_health

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
"""


class Counting:
    """A connection proxy that counts the statements sent through it."""

    def __init__(self, con: Any) -> None:
        self.con, self.statements = con, 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.statements += 1
        return self.con.execute(*args, **kwargs)


def build(root: Path, n: int) -> Path:
    cfg = root / "srdp.toml"
    cfg.write_text(CONFIG)
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("BEGIN")
    for i in range(n):
        con.execute(f"CREATE TABLE lake.main.d{i:04d} (id BIGINT, v VARCHAR)")
    con.execute("COMMIT")
    con.execute("BEGIN")
    for i in range(n):
        con.execute(f"INSERT INTO lake.main.d{i:04d} SELECT range, 'big' FROM range(20)")
    con.execute("COMMIT")
    con.execute("BEGIN")
    for i in range(n):
        con.execute(f"INSERT INTO lake.main.d{i:04d} SELECT 100 + range, 'small' FROM range(5)")
    con.execute("COMMIT")
    con.execute("DETACH lake")
    con.close()
    return cfg


def reads(cfg: Path, repeats: int = 3) -> dict[str, Any]:
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    counting = Counting(con)
    health_ms, pressure_ms = [], []
    for _ in range(repeats):
        counting.statements = 0
        start = time.perf_counter()
        datasets = read_catalog_health(counting, "lake")  # type: ignore[arg-type]
        health_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        srdp.call(con, "srdp_catalog_pressure", "lake")
        pressure_ms.append((time.perf_counter() - start) * 1000)
    con.execute("DETACH lake")
    con.close()
    return {
        "datasets read": len(datasets),
        "statements per catalog": counting.statements,
        "health read ms (best)": round(min(health_ms), 1),
        "pressure read ms (best)": round(min(pressure_ms), 1),
    }


def dagster_run(instance: dg.DagsterInstance, defs: dg.Definitions, job: str, home: Path) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in home.rglob("*.db"))
    start = time.perf_counter()
    result = defs.resolve_job_def(job).execute_in_process(instance=instance)
    seconds = time.perf_counter() - start
    assert result.success, job
    kinds = collections.Counter(e.dagster_event.event_type_value for e in instance.all_logs(result.run_id) if e.dagster_event)
    grown = sum(p.stat().st_size for p in home.rglob("*.db")) - size
    return {
        "run s": round(seconds, 2),
        "observations": kinds["ASSET_OBSERVATION"],
        "check evaluations": kinds["ASSET_CHECK_EVALUATION"],
        "events in all": sum(kinds.values()),
        "event log grew KiB": round(grown / 1024),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="10,1000")
    args = ap.parse_args()
    for n in [int(x) for x in args.datasets.split(",")]:
        with tempfile.TemporaryDirectory(prefix="srdp-bench-health-") as tmp:
            root = Path(tmp)
            start = time.perf_counter()
            cfg = build(root / "lake", n) if (root / "lake").mkdir() is None else None
            built = time.perf_counter() - start
            print(f"== {n} datasets (lake built in {built:.1f} s)")
            for key, value in reads(cfg).items():
                print(f"  read      {key}: {value}")
            home = root / "dagster"
            home.mkdir()
            with dg.DagsterInstance.local_temp(str(home)) as instance:
                defs = sd.srdp_definitions(cfg)
                for label, job in (("monitor", sd.MONITOR_JOB), ("monitor", sd.MONITOR_JOB), ("maintain", sd.MAINTENANCE_JOB)):
                    for key, value in dagster_run(instance, defs, job, home).items():
                        print(f"  {label:9} {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
