"""srdp's Dagster definitions: the jobs, schedules and resources, and how an application adds them."""

from __future__ import annotations

import os

import dagster as dg

from srdp.dagster.maintenance import maintenance_job, nightly_schedule
from srdp.dagster.pressure import PUBLISHER_KEY, LogPublisher, PressurePublisher, hourly_schedule, monitor_job
from srdp.dagster.resource import RESOURCE_KEY, SrdpResource

__all__ = ["add_srdp_definitions", "srdp_definitions"]


def srdp_definitions(config_path: str | os.PathLike[str], publisher: PressurePublisher | None = None) -> dg.Definitions:
    """The srdp jobs, schedules and resources for the definition file at ``config_path``."""
    return dg.Definitions(
        jobs=[maintenance_job, monitor_job],
        schedules=[nightly_schedule, hourly_schedule],
        resources={
            RESOURCE_KEY: SrdpResource(config_path=os.path.abspath(config_path)),
            PUBLISHER_KEY: dg.ResourceDefinition.hardcoded_resource(publisher or LogPublisher()),
        },
    )


def add_srdp_definitions(
    defs: dg.Definitions,
    config_path: str | os.PathLike[str],
    *,
    enabled: bool = True,
    publisher: PressurePublisher | None = None,
) -> dg.Definitions:
    """``defs`` plus srdp's maintenance and monitor when datasets are enabled; ``defs`` otherwise."""
    if not enabled:
        return defs
    return dg.Definitions.merge(defs, srdp_definitions(config_path, publisher=publisher))
