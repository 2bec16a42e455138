"""The landing zone, dlt's quarantine way in: dlt loads untrusted input into a folder OUTSIDE
DuckLake (``srdp.ingest.dlt.destination(catalog, layer="landing")``: dlt's filesystem destination,
Parquet, state files kept there), and a promotion validates each finished load and appends it to
the catalog's ``promote_into`` raw schema through the IO manager's write path, which stays the only
writer into DuckLake on this path.

* :func:`promote_landing`: one landing table (with its child tables) into raw, every finished load
  exactly once (:mod:`.promote`; the Dagster assets are :func:`srdp.dagster.srdp_landing_assets`).
* :func:`landing_retention`: deletes promoted loads' files older than the retention and keeps
  what dlt needs to go on incrementally (:mod:`.retention`).

These modules import dlt and srdp's IO-manager core, never Dagster itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Protocol

from srdp.lake.session import LakeSession
from srdp.ingest.dlt.destination import DltDestination
from srdp.ingest.dlt.errors import SrdpDltError
from srdp.ingest.landing.promote import Check, Outcome, Promotion
from srdp.ingest.landing.retention import RetentionReport, retain
from srdp.ingest.landing.zone import LandingZone

__all__ = ["Check", "LandingZone", "Outcome", "RetentionReport", "landing_retention", "promote_landing"]

#: The default retention of promoted landing loads.
DEFAULT_RETENTION = dt.timedelta(days=7)


class LakeWriter(Protocol):
    """What the promotion takes from the IO manager (``SrdpIOManager`` has it)."""

    config_path: str
    catalog: str
    writer: str
    secrets: list[str]


def zone_of(destination: DltDestination) -> LandingZone:
    """The landing dataset folder of ``destination`` (``layer="landing"``)."""
    if not destination.is_landing:
        raise SrdpDltError(
            f"srdp.ingest.landing: destination {destination.catalog}.{destination.dataset_name} is not "
            f"the landing zone; pass srdp.ingest.dlt.destination({destination.catalog!r}, layer='landing')"
        )
    return LandingZone(destination.landing_url, destination.storage_credentials)


def _session(destination: DltDestination, io_manager: LakeWriter) -> LakeSession:
    if io_manager.catalog != destination.catalog:
        raise SrdpDltError(
            f"srdp.ingest.landing: the landing zone belongs to catalog {destination.catalog!r} and the IO "
            f"manager writes catalog {io_manager.catalog!r}; give the IO manager catalog={destination.catalog!r}"
        )
    return LakeSession.get(io_manager.config, io_manager.catalog, list(io_manager.secrets))


def promote_landing(
    destination: DltDestination,
    table: str,
    children: Sequence[str] = (),
    *,
    io_manager: LakeWriter,
    keys: Mapping[str, Sequence[str]] | None = None,
    checks: Sequence[Check] = (),
    skip_loads: Sequence[str] = (),
    run_id: str = "",
) -> list[Outcome]:
    """Promotes every finished, valid, not yet promoted load of ``table`` (and ``children``) from
    the landing zone into ``<catalog>.<promote_into>.<table>``, one transaction per load."""
    zone = zone_of(destination)
    assert destination.promote_into is not None
    return Promotion(
        session=_session(destination, io_manager),
        zone=zone,
        catalog=destination.catalog,
        schema=destination.promote_into,
        table=table,
        children=tuple(children),
        writer=io_manager.writer,
        keys=dict(keys or {}),
        checks=tuple(checks),
        skip_loads=tuple(skip_loads),
        run_id=run_id,
    ).run()


def landing_retention(
    destination: DltDestination,
    *,
    io_manager: LakeWriter,
    older_than: dt.timedelta = DEFAULT_RETENTION,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> RetentionReport:
    """Deletes the landing zone's promoted load files older than ``older_than`` (see
    :mod:`.retention` for what is never deleted)."""
    zone = zone_of(destination)
    assert destination.promote_into is not None
    return retain(
        zone, _session(destination, io_manager), destination.catalog, destination.promote_into,
        older_than=older_than, now=now, dry_run=dry_run,
    )
