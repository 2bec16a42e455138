"""SrdpIOManager compares time windows in UTC for reads as for writes, whatever the machine's time
zone: on a machine in New York, a daily partition of a TIMESTAMPTZ column written through the IO
manager (its UTC day) is read back by a downstream asset as exactly the same rows.

The IO manager reads on a cursor of its own, which does not inherit the session's
``SET TimeZone = 'UTC'``; before the fix, the downstream asset read the New York day (05:00 to
05:00 UTC) instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_python, write_config

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

# Runs in a process whose zone is America/New_York: hourly rows of each UTC day, then a downstream
# asset reports the hours of the rows it was given for the same partition.
SCRIPT = """
import datetime as dt
import json

import dagster as dg
import pyarrow as pa

from srdp.dagster.io_manager import SrdpIOManager

daily = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-03")
seen = {{}}


@dg.asset(key_prefix=["analytics"], partitions_def=daily, metadata={{"partition_expr": "ts"}})
def events(context: dg.AssetExecutionContext) -> pa.Table:
    start = context.partition_time_window.start.astimezone(dt.timezone.utc)
    hours = [start + dt.timedelta(hours=h) for h in range(24)]
    return pa.table({{"ts": pa.array(hours, pa.timestamp("us", tz="UTC")), "day": [context.partition_key] * 24}})


@dg.asset(key_prefix=["analytics"], partitions_def=daily)
def report(context: dg.AssetExecutionContext, events: pa.Table) -> None:
    stamps = [t.astimezone(dt.timezone.utc).isoformat() for t in events.column("ts").to_pylist()]
    seen[context.partition_key] = {{"ts": sorted(stamps), "days": sorted(set(events.column("day").to_pylist()))}}


io_manager = SrdpIOManager(config_path={cfg!r})
for key in ("2024-01-01", "2024-01-02"):
    assert dg.materialize([events], partition_key=key, resources={{"io_manager": io_manager}}).success
for key in ("2024-01-01", "2024-01-02"):
    assert dg.materialize([events, report], selection=[report], partition_key=key,
                          resources={{"io_manager": io_manager}}).success
print("SEEN " + json.dumps(seen))
"""


def test_a_daily_partition_reads_back_its_utc_day_on_a_machine_in_new_york(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG)
    out = run_python(SCRIPT.format(cfg=str(cfg)), env={"TZ": "America/New_York"})
    (line,) = [line for line in out.splitlines() if line.startswith("SEEN ")]
    seen = json.loads(line[len("SEEN "):])
    assert seen == {
        day: {"ts": [f"{day}T{h:02d}:00:00+00:00" for h in range(24)], "days": [day]}
        for day in ("2024-01-01", "2024-01-02")
    }
