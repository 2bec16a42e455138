"""make demo, platform step: examples/platform (dlt both ways -> dbt -> IO manager) materialized once in
process on its own embedded lake (SQLite catalog under demo/platform/), then every table it wrote
read back by a plain srdp reader, and the asset graph's edges printed.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import dagster as dg

import srdp

REPO = Path(__file__).resolve().parents[1]
TABLES = [
    "raw.orders", "raw.orders__items", "raw_landed.payments", "curated.orders_clean", "analytics.daily_revenue",
]


def main() -> int:
    shutil.rmtree(REPO / "demo" / "platform", ignore_errors=True)
    path = REPO / "examples" / "platform" / "definitions.py"
    spec = importlib.util.spec_from_file_location("platform_definitions", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    graph = module.defs.resolve_asset_graph()
    print("asset graph (upstream -> downstream):")
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        for child in sorted(graph.get(key).child_keys, key=lambda k: k.to_user_string()):
            print(f"  {key.to_user_string()} -> {child.to_user_string()}")
    job = module.defs.get_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    print(f"dagster run {result.run_id}: {'success' if result.success else 'FAILURE'}")
    if not result.success:
        for event in result.get_step_failure_events():
            print(event.step_failure_data.error.message, file=sys.stderr)
        return 1
    con = srdp.connect(config=str(REPO / "examples" / "platform" / "srdp.toml"))
    con.execute("SELECT * FROM srdp_attach_catalog('lake')")
    for table in TABLES:
        (count,) = con.execute(f"SELECT count(*) FROM lake.{table}").fetchone()
        print(f"  lake.{table}: {count} rows")
    con.execute("DETACH lake")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
