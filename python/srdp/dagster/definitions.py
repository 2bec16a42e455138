"""srdp's Dagster definitions: the jobs, schedules and resources, and how an application adds them."""

from __future__ import annotations

import os
from collections.abc import Sequence

import dagster as dg

from srdp.dagster.config_parameter import resolve_config_argument
from srdp.dagster.health import health_checks as table_health_checks
from srdp.dagster.health import table_asset_groups
from srdp.dagster.io_manager import SrdpIOManager
from srdp.dagster.load_checks import check_io_manager_definitions
from srdp.dagster.maintenance import build_nightly_schedule, maintenance_job
from srdp.dagster.pressure import HEALTH_CHECKS_KEY, PUBLISHER_KEY, LogPublisher, PressurePublisher, build_hourly_schedule, monitor_job
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, NoStorageIOManager, SrdpResource

__all__ = ["IO_MANAGER_KEY", "add_srdp_definitions", "srdp_definitions"]

#: Dagster's default IO manager key, which SrdpIOManager takes with ``io_manager=True``.
IO_MANAGER_KEY = "io_manager"


def srdp_definitions(
    config: str | os.PathLike[str] | None = None,
    publisher: PressurePublisher | None = None,
    *,
    config_path: str | os.PathLike[str] | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
    io_manager: bool = False,
    catalog: str = "lake",
    secrets: Sequence[str] = (),
    checked_assets: Sequence[dg.AssetKey | Sequence[dg.AssetKey]] = (),
) -> dg.Definitions:
    """The srdp jobs, schedules and resources for the definition file at ``config`` (the srdp.toml
    path; ``config_path=`` is its deprecated spelling, accepted this release); both
    schedules start as ``default_status`` (running unless told otherwise). srdp's ops send their
    outputs to their own IO manager (``NO_STORAGE_IO_MANAGER_KEY``), never to ``io_manager``.
    With ``io_manager=True`` the application's ``io_manager`` is :class:`SrdpIOManager` on
    ``catalog`` of the same file. ``secrets`` (CREATE SECRET statements, each best given as
    ``dg.EnvVar``) are run before every attach by the maintenance job, the monitor and the IO
    manager alike: one place for the credentials of a catalog whose roles need DuckDB secrets.
    ``checked_assets``: physical-name keys that get srdp's two advisory health checks
    (:func:`srdp.dagster.health.health_checks`), evaluated by the hourly monitor and, in a run that
    materializes their assets, after them; a key alone has a check step of its own, a sequence
    of keys (those one op materializes together) shares one. With
    ``io_manager=True`` the file and ``catalog`` are checked now, when the code location loads
    (:mod:`srdp.dagster.load_checks`)."""
    path = os.path.abspath(resolve_config_argument("srdp_definitions", config, config_path))
    if io_manager:
        check_io_manager_definitions("srdp_definitions", path, catalog, (), IO_MANAGER_KEY)
    statements = list(secrets)
    checks = table_health_checks(list(checked_assets), RESOURCE_KEY)
    resources: dict[str, object] = {
        HEALTH_CHECKS_KEY: dg.ResourceDefinition.hardcoded_resource(
            frozenset(key for c in checks for key in c.check_keys),
            "the srdp health checks the code location declares",
        ),
        RESOURCE_KEY: SrdpResource(config=path, secrets=statements),
        PUBLISHER_KEY: dg.ResourceDefinition.hardcoded_resource(publisher or LogPublisher()),
        NO_STORAGE_IO_MANAGER_KEY: NoStorageIOManager(),
    }
    if io_manager:
        resources[IO_MANAGER_KEY] = SrdpIOManager(config=path, catalog=catalog, secrets=statements)
    return dg.Definitions(
        asset_checks=checks or None,
        jobs=[maintenance_job, monitor_job],
        schedules=[build_nightly_schedule(default_status), build_hourly_schedule(default_status)],
        resources=resources,
    )


def add_srdp_definitions(
    defs: dg.Definitions,
    config: str | os.PathLike[str] | None = None,
    *,
    config_path: str | os.PathLike[str] | None = None,
    enabled: bool = True,
    publisher: PressurePublisher | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
    io_manager: bool = False,
    catalog: str = "lake",
    secrets: Sequence[str] = (),
    health_checks: bool = True,
) -> dg.Definitions:
    """``defs`` plus srdp's maintenance and monitor when datasets are enabled; ``defs`` otherwise.
    ``config``: the srdp.toml path (``config_path=`` is its deprecated spelling, accepted this release).
    Both schedules start as ``default_status`` (running unless told otherwise). With
    ``io_manager=True``, :class:`SrdpIOManager` on ``catalog`` becomes the ``io_manager`` (an
    application that already sets one is refused rather than silently overridden). ``secrets``:
    the CREATE SECRET statements (``dg.EnvVar``) the maintenance job, the monitor and the IO
    manager run before they attach (see :func:`srdp_definitions`). ``health_checks``: the
    application's table assets (definition metadata ``dagster/table_name`` matching their key:
    srdp's dlt, dbt and IO manager assets) get srdp's two advisory checks, so the monitor's
    results show as badges on them. With ``io_manager=True``, the file, ``catalog``, the owner
    of every schema the IO manager will write and one table per asset and op output (of the
    application's jobs) are checked now, when the code location loads
    (:mod:`srdp.dagster.load_checks`), so ``dagster definitions validate`` fails on a typo."""
    config = resolve_config_argument("add_srdp_definitions", config, config_path)
    if not enabled:
        return defs
    if io_manager and IO_MANAGER_KEY in (defs.resources or {}):
        raise ValueError(
            "add_srdp_definitions(io_manager=True): the application already sets resource "
            "'io_manager'; remove it, or leave io_manager=False and keep the application's own"
        )
    if io_manager:
        assets = list(defs.assets or [])
        check_io_manager_definitions(
            "add_srdp_definitions", os.path.abspath(config), catalog, assets, IO_MANAGER_KEY, jobs=list(defs.jobs or [])
        )
    return dg.Definitions.merge(
        defs,
        srdp_definitions(
            config,
            publisher=publisher,
            default_status=default_status,
            io_manager=io_manager,
            catalog=catalog,
            secrets=secrets,
            checked_assets=table_asset_groups(defs.assets or []) if health_checks else (),
        ),
    )
