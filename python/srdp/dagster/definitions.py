"""srdp's Dagster definitions: the jobs, schedules and resources, and how an application adds them."""

from __future__ import annotations

import os

import dagster as dg

from srdp.dagster.maintenance import build_nightly_schedule, maintenance_job
from srdp.dagster.pressure import PUBLISHER_KEY, LogPublisher, PressurePublisher, build_hourly_schedule, monitor_job
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, NoStorageIOManager, SrdpResource

__all__ = ["add_srdp_definitions", "srdp_definitions"]


def srdp_definitions(
    config_path: str | os.PathLike[str],
    publisher: PressurePublisher | None = None,
    *,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
) -> dg.Definitions:
    """The srdp jobs, schedules and resources for the definition file at ``config_path``; both
    schedules start as ``default_status`` (running unless told otherwise). srdp's ops send their
    outputs to their own IO manager (``NO_STORAGE_IO_MANAGER_KEY``), never to ``io_manager``."""
    return dg.Definitions(
        jobs=[maintenance_job, monitor_job],
        schedules=[build_nightly_schedule(default_status), build_hourly_schedule(default_status)],
        resources={
            RESOURCE_KEY: SrdpResource(config_path=os.path.abspath(config_path)),
            PUBLISHER_KEY: dg.ResourceDefinition.hardcoded_resource(publisher or LogPublisher()),
            NO_STORAGE_IO_MANAGER_KEY: NoStorageIOManager(),
        },
    )


def add_srdp_definitions(
    defs: dg.Definitions,
    config_path: str | os.PathLike[str],
    *,
    enabled: bool = True,
    publisher: PressurePublisher | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
) -> dg.Definitions:
    """``defs`` plus srdp's maintenance and monitor when datasets are enabled; ``defs`` otherwise.
    Both schedules start as ``default_status`` (running unless told otherwise)."""
    if not enabled:
        return defs
    return dg.Definitions.merge(
        defs, srdp_definitions(config_path, publisher=publisher, default_status=default_status)
    )
