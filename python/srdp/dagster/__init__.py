"""Dagster side of srdp: nightly dataset maintenance and the hourly catalog-pressure monitor.

Everything here calls srdp's SQL through :func:`srdp.connect`, so Dagster attaches and
maintains the lake exactly as the DuckDB CLI, dbt and dlt do.

* :class:`SrdpResource` (``resource``) opens DuckDB with srdp loaded from a definition file and
  attaches catalogs (as writer for maintenance); :class:`NoStorageIOManager` takes srdp's own op
  outputs (key ``NO_STORAGE_IO_MANAGER_KEY``) and stores nothing, so an application's
  ``io_manager`` never receives them.
* Job ``srdp_dataset_maintenance`` (``maintenance``): one ``srdp_compact`` per catalog, which
  reads the catalog once and flushes, rewrites (files that carry deletes) and merges the
  datasets one at a time, in (schema, table) order. Every step commits on its own and srdp retries transaction conflicts itself,
  so the job has no Dagster retry policy. Each dataset's result is one dynamic output with its
  metadata and one log line. A failing dataset fails the run; the datasets before it stay
  committed, and a rerun revisits every dataset harmlessly (maintenance re-plans from the
  current snapshot).
* Schedule ``srdp_dataset_maintenance_nightly``: ``0 2 * * *`` UTC, running by default
  (``default_status`` of :func:`add_srdp_definitions` sets both schedules').
* Job ``srdp_catalog_pressure_monitor`` and schedule ``srdp_catalog_pressure_hourly``
  (``pressure``; ``0 * * * *`` UTC, running by default): one Dagster warning and one published
  ``DatasetCatalogPressure`` event per dataset over the threshold, on every check. Publishing
  is fail-open: a publisher that raises is logged and never fails the run.
* :func:`add_srdp_definitions` (``definitions``) adds all of it to an application's ``Definitions``.
* :func:`srdp_dlt_assets` and :class:`SrdpDltTranslator` (``dlt_assets``): Dagster assets over
  dagster-dlt that load through :mod:`srdp.ingest.dlt`; imported on first use, so a Dagster
  application without dlt never imports it.
* :class:`SrdpDbtTranslator` (``dbt_assets``): dagster-dbt's translator keyed and named by the
  physical table, imported (with dagster-dbt) on first use; :func:`srdp_table` (``lineage``)
  gives an IO manager asset the same key and ``dagster/table_name``, so dlt, dbt and IO manager
  assets form one graph.

>>> defs = add_srdp_definitions(my_defs, config="/etc/srdp/srdp.toml")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from srdp.dagster.definitions import add_srdp_definitions, srdp_definitions
from srdp.dagster.io_manager import SNAPSHOT_KEY, IOManagerError, SrdpIOManager
from srdp.dagster.lineage import SrdpTable, srdp_table, table_asset_key
from srdp.dagster.maintenance import (
    MAINTENANCE_JOB,
    MAINTENANCE_SCHEDULE,
    MaintenanceConfig,
    build_nightly_schedule,
    maintain_catalog,
    maintain_dataset,
    maintain_datasets,
    maintenance_job,
    nightly_schedule,
)
from srdp.dagster.pressure import (
    MONITOR_JOB,
    MONITOR_SCHEDULE,
    PRESSURE_EVENT,
    PUBLISHER_KEY,
    LogPublisher,
    PressureEvent,
    PressureMonitorConfig,
    PressurePublisher,
    build_hourly_schedule,
    check_catalog_pressure,
    hourly_schedule,
    monitor_job,
    pressure_events,
    publish_events,
)
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, NoStorageIOManager, SrdpResource
from srdp.extras import missing_extra

if TYPE_CHECKING:
    from srdp.dagster.dbt_assets import SrdpDbtTranslator as SrdpDbtTranslator
    from srdp.dagster.dlt_assets import SrdpDltTranslator as SrdpDltTranslator
    from srdp.dagster.dlt_assets import srdp_dlt_assets as srdp_dlt_assets
    from srdp.dagster.landing_assets import landing_retention_schedule as landing_retention_schedule
    from srdp.dagster.landing_assets import srdp_landing_assets as srdp_landing_assets

__all__ = [
    "MAINTENANCE_JOB",
    "MAINTENANCE_SCHEDULE",
    "MONITOR_JOB",
    "MONITOR_SCHEDULE",
    "NO_STORAGE_IO_MANAGER_KEY",
    "PRESSURE_EVENT",
    "PUBLISHER_KEY",
    "RESOURCE_KEY",
    "LogPublisher",
    "MaintenanceConfig",
    "NoStorageIOManager",
    "PressureEvent",
    "PressureMonitorConfig",
    "PressurePublisher",
    "SNAPSHOT_KEY",
    "IOManagerError",
    "SrdpIOManager",
    "SrdpResource",
    "SrdpTable",
    "add_srdp_definitions",
    "build_hourly_schedule",
    "build_nightly_schedule",
    "check_catalog_pressure",
    "hourly_schedule",
    "maintain_catalog",
    "maintain_dataset",
    "maintain_datasets",
    "maintenance_job",
    "monitor_job",
    "nightly_schedule",
    "pressure_events",
    "publish_events",
    "srdp_definitions",
    "srdp_table",
    "table_asset_key",
]

#: Names that live in srdp.dagster.dlt_assets, imported (with dlt and dagster-dlt) on first use only.
_DLT_NAMES = frozenset({"SrdpDltTranslator", "srdp_dlt_assets"})
#: Names that live in srdp.dagster.dbt_assets, imported (with dagster-dbt) on first use only.
_DBT_NAMES = frozenset({"SrdpDbtTranslator"})
#: Names that live in srdp.dagster.landing_assets, imported (with dlt) on first use only.
_LANDING_NAMES = frozenset({"srdp_landing_assets", "landing_retention_schedule"})


def __getattr__(name: str) -> Any:
    module = (
        "dlt_assets" if name in _DLT_NAMES else "dbt_assets" if name in _DBT_NAMES else "landing_assets" if name in _LANDING_NAMES else None
    )
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        loaded = importlib.import_module(f"srdp.dagster.{module}")
    except ImportError as error:
        raise missing_extra(error.name or module, error) from error
    return getattr(loaded, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | _DLT_NAMES | _DBT_NAMES | _LANDING_NAMES)
