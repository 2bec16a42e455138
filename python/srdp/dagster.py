"""Dagster side of srdp: nightly dataset maintenance and the hourly catalog-pressure monitor.

Everything here calls srdp's SQL through :func:`srdp.connect`, so Dagster attaches and
maintains the lake exactly as the DuckDB CLI, dbt and dlt do.

* :class:`SrdpResource` opens DuckDB with srdp loaded from a definition file and attaches
  catalogs (as writer for maintenance).
* Job ``srdp_dataset_maintenance``: datasets one at a time, in (catalog, schema, table) order;
  for each: check pressure (``srdp_inlined_row_count``), ``srdp_flush``, ``srdp_compact``. Every
  step commits on its own and srdp retries transaction conflicts itself, so the job has no
  Dagster retry policy. Each dataset's result is one dynamic output with its metadata and one
  log line. A failing dataset fails the run; the datasets before it stay committed, and a rerun
  revisits every dataset harmlessly (maintenance re-plans from the current snapshot).
* Schedule ``srdp_dataset_maintenance_nightly``: ``0 2 * * *`` UTC, running by default.
* Job ``srdp_catalog_pressure_monitor`` and schedule ``srdp_catalog_pressure_hourly``
  (``0 * * * *`` UTC, running by default): one Dagster warning and one published
  ``DatasetCatalogPressure`` event per dataset over the threshold, on every check. Publishing
  is fail-open: a publisher that raises is logged and never fails the run.
* :func:`add_srdp_definitions` adds all of it to an application's ``Definitions``.

>>> defs = add_srdp_definitions(my_defs, config_path="/etc/srdp/srdp.toml")
"""


import dataclasses
import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import dagster as dg
import duckdb

import srdp

__all__ = [
    "MAINTENANCE_JOB",
    "MAINTENANCE_SCHEDULE",
    "MONITOR_JOB",
    "MONITOR_SCHEDULE",
    "PRESSURE_EVENT",
    "LogPublisher",
    "MaintenanceConfig",
    "PressureEvent",
    "PressureMonitorConfig",
    "PressurePublisher",
    "SrdpResource",
    "add_srdp_definitions",
    "srdp_definitions",
]

MAINTENANCE_JOB = "srdp_dataset_maintenance"
MAINTENANCE_SCHEDULE = "srdp_dataset_maintenance_nightly"
MONITOR_JOB = "srdp_catalog_pressure_monitor"
MONITOR_SCHEDULE = "srdp_catalog_pressure_hourly"
PRESSURE_EVENT = "DatasetCatalogPressure"

#: The resource keys the jobs require.
RESOURCE_KEY = "srdp"
PUBLISHER_KEY = "srdp_pressure_publisher"


class SrdpResource(dg.ConfigurableResource):
    """DuckDB with srdp loaded from ``config_path``; catalogs attached on request."""

    config_path: str

    def connect(self, catalogs: Sequence[str] | None = None, role: str = "writer") -> duckdb.DuckDBPyConnection:
        """A new connection with ``catalogs`` (default: every catalog of the file) attached."""
        con = srdp.connect(config=self.config_path)
        try:
            for catalog in catalogs or self.catalogs(con):
                srdp.call(con, "srdp_attach_catalog", catalog, role=role)
        except Exception:
            con.close()
            raise
        return con

    @staticmethod
    def catalogs(con: duckdb.DuckDBPyConnection) -> list[str]:
        """Every catalog of the definition, in name order."""
        return sorted(r["catalog"] for r in srdp.call(con, "srdp_catalogs"))


class MaintenanceConfig(dg.Config):
    """Run config of ``srdp_dataset_maintenance``; empty = every dataset of every catalog."""

    catalogs: list[str] = []
    namespace: str | None = None  # schema
    name: str | None = None  # table
    dry_run: bool = False


def _mapping_key(*parts: str) -> str:
    key = "__".join(re.sub(r"[^A-Za-z0-9_]", "_", p) for p in parts)
    return key or "_"


@dg.op(
    name="srdp_maintain_datasets",
    out=dg.DynamicOut(dict),
    required_resource_keys={RESOURCE_KEY},
    description="Per dataset, one at a time: pressure check, srdp_flush, srdp_compact.",
    tags={"kind": "srdp"},
)
def maintain_datasets(context: dg.OpExecutionContext, config: MaintenanceConfig) -> Iterator[dg.DynamicOutput]:
    resource: SrdpResource = getattr(context.resources, RESOURCE_KEY)
    con = resource.connect(config.catalogs or None, role="writer")
    done: list[str] = []
    try:
        catalogs = config.catalogs or resource.catalogs(con)
        for catalog in catalogs:
            datasets = srdp.call(
                con, "srdp_inlined_row_count", catalog, schema_name=config.namespace, table_name=config.name
            )
            for dataset in datasets:
                schema, table = dataset["schema_name"], dataset["table_name"]
                qualified = f"{catalog}.{schema}.{table}"
                try:
                    (flush,) = srdp.call(
                        con, "srdp_flush", catalog, schema_name=schema, table_name=table, dry_run=config.dry_run
                    )
                    (compact,) = srdp.call(
                        con, "srdp_compact", catalog, schema_name=schema, table_name=table, dry_run=config.dry_run
                    )
                except duckdb.Error as e:
                    raise dg.Failure(
                        description=(
                            f"srdp maintenance failed at dataset {qualified}: {e}. "
                            f"Datasets committed before it: {', '.join(done) or 'none'}. "
                            "A rerun revisits the committed datasets harmlessly."
                        ),
                        metadata={"dataset": qualified, "datasets_done": len(done)},
                    ) from e
                result = {
                    "catalog": catalog,
                    "schema_name": schema,
                    "table_name": table,
                    "inlined_rows_before": int(dataset["inlined_rows"]),
                    "rows_flushed": int(flush["rows_flushed"]) + int(compact["rows_flushed"] or 0),
                    "files_before": compact["files_before"],
                    "files_after": compact["files_after"],
                    "files_processed": compact["files_processed"],
                    "files_created": compact["files_created"],
                    "flush_attempts": int(flush["attempts"]),
                    "attempts": int(compact["attempts"]),
                    "status": compact["status"],
                }
                context.log.info(
                    f"srdp: {qualified}: {result['status']}; {result['inlined_rows_before']} inlined rows, "
                    f"{result['rows_flushed']} flushed, files {result['files_before']} -> {result['files_after']}, "
                    f"attempts flush {result['flush_attempts']} / compact {result['attempts']}"
                )
                done.append(qualified)
                yield dg.DynamicOutput(
                    result,
                    mapping_key=_mapping_key(catalog, schema, table),
                    metadata={k: v for k, v in result.items() if v is not None},
                )
    finally:
        con.close()


@dg.job(
    name=MAINTENANCE_JOB,
    description="srdp dataset maintenance: flush and compact every selected dataset, one at a time.",
    tags={"srdp": "maintenance"},
)
def maintenance_job() -> None:
    maintain_datasets()


@dataclasses.dataclass(frozen=True)
class PressureEvent:
    """One ``DatasetCatalogPressure`` row of ``srdp_catalog_pressure``."""

    event: str
    catalog: str
    schema_name: str
    table_name: str
    inlined_rows: int
    threshold: int
    checked_at: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class PressurePublisher(Protocol):
    """Where pressure events go (a message bus, an alerting hook, ...)."""

    def publish(self, event: PressureEvent) -> None: ...


class LogPublisher:
    """The default publisher: one JSON line per event on the ``srdp.pressure`` logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("srdp.pressure")

    def publish(self, event: PressureEvent) -> None:
        self.logger.warning(json.dumps(event.as_dict(), sort_keys=True))


class PressureMonitorConfig(dg.Config):
    """Run config of the monitor; ``threshold`` defaults to each catalog's pressure_warning_rows."""

    catalogs: list[str] = []
    threshold: int | None = None


@dg.op(
    name="srdp_check_catalog_pressure",
    required_resource_keys={RESOURCE_KEY, PUBLISHER_KEY},
    description="Warns and publishes one DatasetCatalogPressure event per dataset over the threshold.",
    tags={"kind": "srdp"},
)
def check_catalog_pressure(context: dg.OpExecutionContext, config: PressureMonitorConfig) -> int:
    resource: SrdpResource = getattr(context.resources, RESOURCE_KEY)
    publisher: PressurePublisher = getattr(context.resources, PUBLISHER_KEY)
    con = resource.connect(config.catalogs or None, role="reader")
    events: list[PressureEvent] = []
    try:
        for catalog in config.catalogs or resource.catalogs(con):
            for row in srdp.call(con, "srdp_catalog_pressure", catalog, threshold=config.threshold):
                events.append(
                    PressureEvent(
                        event=row["event"],
                        catalog=row["catalog"],
                        schema_name=row["schema_name"],
                        table_name=row["table_name"],
                        inlined_rows=int(row["inlined_rows"]),
                        threshold=int(row["threshold"]),
                        checked_at=row["checked_at"].isoformat(),
                    )
                )
    finally:
        con.close()
    failures = 0
    for event in events:
        context.log.warning(
            f"{event.event}: {event.catalog}.{event.schema_name}.{event.table_name} has "
            f"{event.inlined_rows} inlined rows (threshold {event.threshold}); run srdp_flush or "
            f"the {MAINTENANCE_JOB} job"
        )
        try:
            publisher.publish(event)
        except Exception as e:  # fail-open: publishing is advisory
            failures += 1
            context.log.error(f"publishing {event.event} for {event.catalog}.{event.schema_name}.{event.table_name} failed (ignored): {e!r}")
    context.add_output_metadata({"events": len(events), "publish_failures": failures})
    return len(events)


@dg.job(
    name=MONITOR_JOB,
    description="srdp catalog pressure: warn about datasets with too many inlined rows.",
    tags={"srdp": "monitor"},
)
def monitor_job() -> None:
    check_catalog_pressure()


nightly_schedule = dg.ScheduleDefinition(
    name=MAINTENANCE_SCHEDULE,
    job=maintenance_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="srdp dataset maintenance every night at 02:00 UTC.",
)

hourly_schedule = dg.ScheduleDefinition(
    name=MONITOR_SCHEDULE,
    job=monitor_job,
    cron_schedule="0 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="srdp catalog pressure check every hour at minute 0.",
)


def srdp_definitions(config_path: str | os.PathLike, publisher: PressurePublisher | None = None) -> dg.Definitions:
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
    config_path: str | os.PathLike,
    *,
    enabled: bool = True,
    publisher: PressurePublisher | None = None,
) -> dg.Definitions:
    """``defs`` plus srdp's maintenance and monitor when datasets are enabled; ``defs`` otherwise."""
    if not enabled:
        return defs
    return dg.Definitions.merge(defs, srdp_definitions(config_path, publisher=publisher))
