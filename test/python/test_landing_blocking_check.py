"""A quarantined landing load fails the promotion step: the ``landing_loads`` check is blocking, so
``dagster asset materialize`` (Dagster's own CLI, in a fresh process) exits non-zero and the assets
downstream of raw do not run on stale input; after ``skip_loads`` names the load, the same command
succeeds and downstream runs again."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import REPO, write_config
from landing_support import LANDING_TOML, order

DEFS = '''
import json
import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"

import dagster as dg
import dlt
import pyarrow as pa
from dagster_dlt import DagsterDltResource

import srdp.ingest.dlt as srdp_dlt
from srdp.dagster import SrdpIOManager, srdp_dlt_assets, srdp_landing_assets

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "srdp.toml")
ROWS = json.load(open(os.path.join(HERE, "rows.json")))


@dlt.source
def shop():
    @dlt.resource(write_disposition="append")
    def orders(cursor=dlt.sources.incremental("id", initial_value=0)):
        yield from (r for r in ROWS if r["id"] > cursor.last_value)

    return orders


landing = srdp_dlt.destination("lake", config=CONFIG, layer="landing")
landed = srdp_dlt_assets(
    dlt_source=shop(), destination=landing, dlt_pipeline=landing.pipeline("shop", pipelines_dir=os.path.join(HERE, "p"))
)
skip = [s for s in os.environ.get("SKIP_LOADS", "").split(",") if s]
promoted = srdp_landing_assets(landing, {"orders": ["orders__items"]}, keys={"orders": ["id"]}, skip_loads=skip)


@dg.asset(key=["lake", "analytics", "order_total"], ins={"orders": dg.AssetIn(key=["lake", "raw_landed", "orders"])})
def order_total(orders: pa.Table) -> pa.Table:
    with open(os.path.join(HERE, "downstream.log"), "a") as log:
        log.write(f"{orders.num_rows}\\n")
    return pa.table({"orders": [orders.num_rows]})


defs = dg.Definitions(
    assets=[landed, *promoted, order_total],
    resources={"io_manager": SrdpIOManager(config=CONFIG), "dlt": DagsterDltResource()},
)
'''


def materialize(folder: Path, skip_loads: str = "") -> tuple[int, str]:
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "asset", "materialize", "-f", "defs.py", "--select", "*"],
        cwd=folder,
        env={**os.environ, "DAGSTER_HOME": str(folder / "home"), "SKIP_LOADS": skip_loads,
             "RUNTIME__DLTHUB_TELEMETRY": "false"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def downstream_runs(folder: Path) -> list[str]:
    log = folder / "downstream.log"
    return log.read_text().split() if log.exists() else []


def test_a_quarantined_load_fails_the_cli_run_and_downstream_waits(tmp_path: Path) -> None:
    write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    (tmp_path / "defs.py").write_text(DEFS)
    (tmp_path / "home").mkdir()
    rows = [order(i) for i in range(1, 5)]
    (tmp_path / "rows.json").write_text(json.dumps(rows))

    code, output = materialize(tmp_path)
    assert code == 0, output[-3000:]
    assert downstream_runs(tmp_path) == ["4"]

    # A load whose amount does not fit is quarantined: the step fails, the CLI exits non-zero and
    # order_total does not run.
    (tmp_path / "rows.json").write_text(json.dumps([*rows, order(5, amount="five")]))
    code, output = materialize(tmp_path)
    assert code != 0
    assert "DagsterAssetCheckFailedError: 1 blocking asset check failed with ERROR severity:" in output
    assert "landing_loads" in output.split("DagsterAssetCheckFailedError: 1 blocking asset check")[1]
    (quarantined,) = set(re.findall(r"landing orders: load (\S+) quarantined", output))
    assert downstream_runs(tmp_path) == ["4"]

    # The documented way past it: skip_loads names the load; the run succeeds, downstream runs.
    code, output = materialize(tmp_path, skip_loads=quarantined)
    assert code == 0, output[-3000:]
    assert f"landing orders: load {quarantined} skipped" in output
    assert downstream_runs(tmp_path) == ["4", "4"]
