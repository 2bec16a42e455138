"""srdp's Dagster definitions: the jobs, schedules and resources, and how an application adds them."""

from __future__ import annotations

import os
from collections.abc import Sequence

import dagster as dg

from srdp.dagster.health import health_checks as table_health_checks
from srdp.dagster.health import table_asset_keys
from srdp.dagster.io_manager import SrdpIOManager
from srdp.dagster.maintenance import build_nightly_schedule, maintenance_job
from srdp.dagster.pressure import HEALTH_CHECKS_KEY, PUBLISHER_KEY, LogPublisher, PressurePublisher, build_hourly_schedule, monitor_job
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, NoStorageIOManager, SrdpResource

__all__ = ["IO_MANAGER_KEY", "add_srdp_definitions", "srdp_definitions"]

#: Dagster's default IO manager key, which SrdpIOManager takes with ``io_manager=True``.
IO_MANAGER_KEY = "io_manager"


def srdp_definitions(
    config_path: str | os.PathLike[str],
    publisher: PressurePublisher | None = None,
    *,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
    io_manager: bool = False,
    catalog: str = "lake",
    secrets: Sequence[str] = (),
    checked_assets: Sequence[dg.AssetKey] = (),
) -> dg.Definitions:
    """The srdp jobs, schedules and resources for the definition file at ``config_path``; both
    schedules start as ``default_status`` (running unless told otherwise). srdp's ops send their
    outputs to their own IO manager (``NO_STORAGE_IO_MANAGER_KEY``), never to ``io_manager``.
    With ``io_manager=True`` the application's ``io_manager`` is :class:`SrdpIOManager` on
    ``catalog`` of the same file. ``secrets`` (CREATE SECRET statements, each best given as
    ``dg.EnvVar``) are run before every attach by the maintenance job, the monitor and the IO
    manager alike: one place for the credentials of a catalog whose roles need DuckDB secrets.
    ``checked_assets``: physical-name keys that get srdp's two advisory health checks
    (:func:`srdp.dagster.health.health_checks`), evaluated by the hourly monitor."""
    path = os.path.abspath(config_path)
    statements = list(secrets)
    checks = table_health_checks(list(checked_assets), RESOURCE_KEY) if checked_assets else None
    resources: dict[str, object] = {
        HEALTH_CHECKS_KEY: dg.ResourceDefinition.hardcoded_resource(
            frozenset(checks.check_keys) if checks else frozenset(),
            "the srdp health checks the code location declares",
        ),
        RESOURCE_KEY: SrdpResource(config_path=path, secrets=statements),
        PUBLISHER_KEY: dg.ResourceDefinition.hardcoded_resource(publisher or LogPublisher()),
        NO_STORAGE_IO_MANAGER_KEY: NoStorageIOManager(),
    }
    if io_manager:
        resources[IO_MANAGER_KEY] = SrdpIOManager(config_path=path, catalog=catalog, secrets=statements)
    return dg.Definitions(
        asset_checks=[checks] if checks else None,
        jobs=[maintenance_job, monitor_job],
        schedules=[build_nightly_schedule(default_status), build_hourly_schedule(default_status)],
        resources=resources,
    )


def add_srdp_definitions(
    defs: dg.Definitions,
    config_path: str | os.PathLike[str],
    *,
    enabled: bool = True,
    publisher: PressurePublisher | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
    io_manager: bool = False,
    catalog: str = "lake",
    secrets: Sequence[str] = (),
    health_checks: bool = True,
) -> dg.Definitions:
    """``defs`` plus srdp's maintenance and monitor when datasets are enabled; ``defs`` otherwise.
    Both schedules start as ``default_status`` (running unless told otherwise). With
    ``io_manager=True``, :class:`SrdpIOManager` on ``catalog`` becomes the ``io_manager`` (an
    application that already sets one is refused rather than silently overridden). ``secrets``:
    the CREATE SECRET statements (``dg.EnvVar``) the maintenance job, the monitor and the IO
    manager run before they attach (see :func:`srdp_definitions`). ``health_checks``: the
    application's table assets (definition metadata ``dagster/table_name`` matching their key:
    srdp's dlt, dbt and IO manager assets) get srdp's two advisory checks, so the monitor's
    results show as badges on them."""
    if not enabled:
        return defs
    if io_manager and IO_MANAGER_KEY in (defs.resources or {}):
        raise ValueError(
            "add_srdp_definitions(io_manager=True): the application already sets resource "
            "'io_manager'; remove it, or leave io_manager=False and keep the application's own"
        )
    return dg.Definitions.merge(
        defs,
        srdp_definitions(
            config_path,
            publisher=publisher,
            default_status=default_status,
            io_manager=io_manager,
            catalog=catalog,
            secrets=secrets,
            checked_assets=table_asset_keys(defs.assets or []) if health_checks else (),
        ),
    )
