"""Retention of the landing zone: deletes what raw holds already, keeps what dlt needs.

Deleted, for loads older than the retention (counted from the later of dlt's load id and the
ledger's record of the load, so a load promoted just now keeps its files for the whole window even
when dlt made it long ago): the data files of each table the ledger records for the load as
promoted (or skipped): the promoted table and the child tables promoted with it, by their exact
names (a table no promotion recorded is never deleted, whatever its name: ``orders__items`` beside
a promotion of ``orders`` alone, a resource named ``orders__archive``); markers and state files of
loads below the **watermark** (the oldest load not wholly in raw: unfinished, quarantined,
waiting, or with a table no promotion took).

Never deleted: ``init`` (without it and the state files dlt wipes its working folder), the newest
state file of each pipeline (without it dlt reloads everything; dlt reads the newest state file
whether or not its load finished), that load's marker, every ``_dlt_version`` file (dlt's
schemas, small), and any marker at or above the watermark.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from srdp.lake.session import LakeSession
from srdp.ingest.landing.ledger import Ledger
from srdp.ingest.landing.zone import LandingZone, Load, load_sort_key

__all__ = ["RetentionReport", "retain"]


@dataclass
class RetentionReport:
    deleted: list[str] = field(default_factory=list)
    watermark: str | None = None
    """The oldest load not wholly in raw (None: every load is)."""
    kept_state_files: list[str] = field(default_factory=list)
    dry_run: bool = False


def retain(
    zone: LandingZone,
    session: LakeSession,
    catalog: str,
    schema: str,
    older_than: dt.timedelta,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> RetentionReport:
    """Deletes what the module doc says from ``zone`` (nothing with ``dry_run``: the report lists
    what would go)."""
    session.attach("reader")
    moment = (now or dt.datetime.now(dt.timezone.utc)).timestamp()
    cutoff = moment - older_than.total_seconds()
    loads = zone.loads()
    recorded = Ledger(catalog, schema, zone.url, "").tables_recorded(session)

    def in_raw(load: Load) -> set[str]:
        return set(recorded.get(load.load_id, {}))

    def wholly_in_raw(load: Load) -> bool:
        return load.finished and set(load.files) <= in_raw(load)

    def settled(load: Load) -> bool:
        """Made and recorded longer ago than the retention."""
        times = [_seconds(when) for when in recorded.get(load.load_id, {}).values()]
        return max([load.created, *times]) < cutoff

    pending = [load for load in loads if not wholly_in_raw(load)]
    watermark = pending[0].load_id if pending else None
    newest_state: dict[str, tuple[tuple[float, str], str]] = {}
    for state in zone.state_files():
        key = load_sort_key(state.load_id)
        if state.pipeline not in newest_state or key > newest_state[state.pipeline][0]:
            newest_state[state.pipeline] = (key, state.path)
    kept_states = {path for _, path in newest_state.values()}
    kept_loads = {load.load_id for load in loads if kept_states & set(load.state_files)}

    doomed: list[str] = []
    for load in loads:
        if not settled(load):
            continue
        for table in sorted(in_raw(load) & set(load.files)):
            doomed += load.files[table]
        below = watermark is None or load_sort_key(load.load_id) < load_sort_key(watermark)
        if below and load.load_id not in kept_loads:
            doomed += [p for p in load.state_files if p not in kept_states]
            if load.marker is not None:
                doomed.append(load.marker)
    report = RetentionReport(watermark=watermark, kept_state_files=sorted(kept_states), dry_run=dry_run)
    report.deleted = sorted(doomed) if dry_run else zone.delete(sorted(doomed))
    return report


def _seconds(when: dt.datetime) -> float:
    """Seconds since the epoch of a ledger timestamp (TIMESTAMPTZ; UTC when it comes back naive)."""
    return (when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)).timestamp()
