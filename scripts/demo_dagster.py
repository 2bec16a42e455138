"""make demo, last step: the application's assets through srdp's IO manager, then the nightly
maintenance job, both through Dagster on the demo lake.

Loads ``examples/dagster_definitions.py`` (the application's definitions plus srdp's),
materializes its assets (``orders``, ``order_revenue`` and two days of ``daily_orders``) through
``SrdpIOManager`` and prints what each committed, then runs ``srdp_dataset_maintenance`` in
process and prints each dataset's result from the job's outputs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import dagster as dg

from srdp.dagster import MAINTENANCE_JOB

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    spec = importlib.util.spec_from_file_location("dagster_definitions", REPO / "examples" / "dagster_definitions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    instance = dg.DagsterInstance.ephemeral()
    assets = module.app_definitions().assets
    io_manager = module.defs.resources["io_manager"]
    writes = [dg.materialize([module.orders, module.order_revenue], resources={"io_manager": io_manager}, instance=instance)]
    for day in ("2026-12-01", "2026-12-02"):
        writes.append(
            dg.materialize([module.daily_orders], partition_key=day, resources={"io_manager": io_manager}, instance=instance)
        )
    print(f"IO manager: {len(assets)} assets")
    for run in writes:
        for event in run.get_asset_materialization_events():
            meta = event.materialization.metadata
            count = meta.get("dagster/row_count") or meta.get("dagster/partition_row_count")
            print(
                f"  {meta['dagster/table_name'].value}  {meta['srdp/write_mode'].value}  "
                f"{meta['srdp/slice'].value}  rows {count.value if count else '?'}  snapshot {meta['srdp/snapshot_id'].value}"
            )
    job = module.defs.resolve_job_def(MAINTENANCE_JOB)
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    print(f"dagster run {result.run_id}: {'success' if result.success else 'FAILURE'}")
    if not result.success:
        for event in result.get_step_failure_events():
            print(event.step_failure_data.error.message, file=sys.stderr)
        return 1
    columns = ["catalog", "schema_name", "table_name", "rows_flushed", "files_before", "files_after",
               "attempts", "status"]
    results = result.output_for_node("srdp_maintain_datasets", "summary")["results"]
    rows = [[str(v[c]) for c in columns] for v in results]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
