"""The hourly catalog-pressure monitor: job ``srdp_catalog_pressure_monitor``, its schedule, and
where its events go.

On every check: one Dagster warning and one published ``DatasetCatalogPressure`` event per
dataset over the threshold (``srdp_catalog_pressure`` decides which). Then one health read per
catalog (:mod:`srdp.dagster.health`): per dataset, one ``AssetObservation`` on its physical-name
asset key; for each dataset whose asset the code location declares srdp's checks on, the two
advisory checks ``inlined_rows_under_threshold`` and ``small_files_under_limit``
(``AssetCheckEvaluation`` events, ``WARN``; a table no asset produces has no check to show, and
each evaluation costs about as much event-log space as an observation); and a Markdown summary in
the op's output metadata (``srdp/summary``). A health read that fails is logged as an error
and never fails the run (advisory, like publishing). Publishing is fail-open
(:func:`publish_events`): a publisher that raises is logged and never fails the run. The op's
output (the number of events) goes to srdp's own IO manager (``NO_STORAGE_IO_MANAGER_KEY``),
which stores nothing, never to the application's ``io_manager``.
"""

# No `from __future__ import annotations`: Dagster reads the ops' config annotations as
# objects and cannot resolve them from strings.

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import dagster as dg
import duckdb

import srdp
from srdp.dagster.health import (
    DEFAULT_SMALL_FILES_LIMIT,
    INLINED_CHECK,
    SMALL_FILES_CHECK,
    DatasetHealth,
    check_evaluations,
    observation,
    read_catalog_health,
    summary_table,
)
from srdp.dagster.maintenance import MAINTENANCE_JOB
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, SrdpResource

__all__ = [
    "monitor_summary",
    "MONITOR_JOB",
    "MONITOR_SCHEDULE",
    "PRESSURE_EVENT",
    "HEALTH_CHECKS_KEY",
    "PUBLISHER_KEY",
    "LogPublisher",
    "PressureEvent",
    "PressureMonitorConfig",
    "PressurePublisher",
    "build_hourly_schedule",
    "check_catalog_pressure",
    "hourly_schedule",
    "monitor_job",
    "pressure_events",
    "publish_events",
]

MONITOR_JOB = "srdp_catalog_pressure_monitor"
MONITOR_SCHEDULE = "srdp_catalog_pressure_hourly"
PRESSURE_EVENT = "DatasetCatalogPressure"

#: The resource key of the publisher the monitor requires.
PUBLISHER_KEY = "srdp_pressure_publisher"

#: The resource key of the health checks the code location declares (``AssetCheckKey`` s), whose
#: evaluations the monitor logs.
HEALTH_CHECKS_KEY = "srdp_health_checks"


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

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "PressureEvent":
        """The event of one ``srdp_catalog_pressure`` row."""
        return cls(
            event=row["event"],
            catalog=row["catalog"],
            schema_name=row["schema_name"],
            table_name=row["table_name"],
            inlined_rows=int(row["inlined_rows"]),
            threshold=int(row["threshold"]),
            checked_at=row["checked_at"].isoformat(),
        )

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
    #: ``small_files_under_limit`` warns above this many live files under the merge target.
    small_files_limit: int = DEFAULT_SMALL_FILES_LIMIT


def pressure_events(
    con: duckdb.DuckDBPyConnection, catalogs: Sequence[str], threshold: int | None = None
) -> list[PressureEvent]:
    """The events ``srdp_catalog_pressure`` reports for ``catalogs``, in order."""
    return [
        PressureEvent.from_row(row)
        for catalog in catalogs
        for row in srdp.call(con, "srdp_catalog_pressure", catalog, threshold=threshold)
    ]


def publish_events(events: Sequence[PressureEvent], publisher: PressurePublisher, log: logging.Logger | Any) -> int:
    """Warns on ``log`` and publishes each event; returns how many publications failed (each is
    logged as an error and otherwise ignored: publishing is advisory)."""
    failures = 0
    for event in events:
        dataset = f"{event.catalog}.{event.schema_name}.{event.table_name}"
        log.warning(
            f"{event.event}: {dataset} has {event.inlined_rows} inlined rows (threshold {event.threshold}); "
            f"run srdp_flush or the {MAINTENANCE_JOB} job"
        )
        try:
            publisher.publish(event)
        except Exception as e:  # fail-open: publishing is advisory
            failures += 1
            log.error(f"publishing {event.event} for {dataset} failed (ignored): {e!r}")
    return failures


@dg.op(
    name="srdp_check_catalog_pressure",
    out=dg.Out(int, io_manager_key=NO_STORAGE_IO_MANAGER_KEY),
    required_resource_keys={RESOURCE_KEY, PUBLISHER_KEY, HEALTH_CHECKS_KEY},
    description=(
        "Warns and publishes one DatasetCatalogPressure event per dataset over the threshold; "
        "observes each dataset's health on its asset and evaluates srdp's checks."
    ),
    tags={"kind": "srdp"},
)
def check_catalog_pressure(context: dg.OpExecutionContext, config: PressureMonitorConfig) -> int:
    resource: SrdpResource = getattr(context.resources, RESOURCE_KEY)
    publisher: PressurePublisher = getattr(context.resources, PUBLISHER_KEY)
    con = resource.connect(config.catalogs or None, role="reader")
    try:
        catalogs = config.catalogs or resource.catalogs(con)
        events = pressure_events(con, catalogs, config.threshold)
        failures = publish_events(events, publisher, context.log)
        thresholds = _thresholds(con, catalogs, config)
        health = _record_health(context, con, catalogs, config, thresholds)
    finally:
        con.close()
    context.log.info(monitor_summary(catalogs, health, thresholds, len(events)))
    context.add_output_metadata(
        {
            "events": len(events),
            "publish_failures": failures,
            "srdp/summary": dg.MetadataValue.md(summary_table(health)),
        }
    )
    return len(events)


def _thresholds(
    con: duckdb.DuckDBPyConnection, catalogs: Sequence[str], config: PressureMonitorConfig
) -> dict[str, int]:
    """Each catalog's inlined-row threshold: the run config's, else its ``pressure_warning_rows``."""
    defined = {r["catalog"]: int(r["pressure_warning_rows"]) for r in srdp.call(con, "srdp_catalogs")}
    return {c: config.threshold if config.threshold is not None else defined[c] for c in catalogs}


def monitor_summary(
    catalogs: Sequence[str], health: Sequence[DatasetHealth], thresholds: Mapping[str, int], over: int
) -> str:
    """The monitor's one INFO line per run (logged when all is well too): catalogs and datasets
    checked, the threshold (per catalog when they differ), the largest inlined-row count and how
    many datasets are over."""

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    values = [thresholds[c] for c in catalogs]
    if len(set(values)) <= 1:
        threshold = f"threshold {values[0] if values else '-'} inlined rows"
    else:
        first, *rest = catalogs
        threshold = f"threshold {thresholds[first]} inlined rows ({first}), " + ", ".join(
            f"{thresholds[c]} ({c})" for c in rest
        )
    top = max(health, key=lambda h: h.inlined_rows, default=None)
    largest = f"largest {top.name} with {top.inlined_rows} inlined rows" if top else "largest none (no dataset)"
    return (
        f"srdp pressure monitor: {plural(len(catalogs), 'catalog')} ({', '.join(catalogs)}), "
        f"{plural(len(health), 'dataset')} checked; {threshold}; {largest}; "
        f"{'none' if over == 0 else over} over the threshold"
    )


def _record_health(
    context: dg.OpExecutionContext,
    con: duckdb.DuckDBPyConnection,
    catalogs: Sequence[str],
    config: PressureMonitorConfig,
    thresholds: Mapping[str, int],
) -> list[DatasetHealth]:
    """One health read per catalog; per dataset one observation, and the evaluations of the
    checks the code location declares on its key. A catalog whose read fails is logged as an
    error and skipped (advisory, fail-open)."""
    declared = _declared_checks(context)
    out: list[DatasetHealth] = []
    for catalog in catalogs:
        threshold = thresholds[catalog]
        try:
            datasets = read_catalog_health(con, catalog)
        except duckdb.Error as e:
            context.log.error(f"srdp: reading the health of catalog {catalog} failed (ignored): {e!r}")
            continue
        for h in datasets:
            context.log_event(observation(h, description="srdp hourly monitor"))
            for evaluation in check_evaluations(h, threshold, config.small_files_limit):
                if dg.AssetCheckKey(evaluation.asset_key, evaluation.check_name) in declared:
                    context.log_event(evaluation)
        out += datasets
    return out


def _declared_checks(context: dg.OpExecutionContext) -> frozenset[dg.AssetCheckKey]:
    """srdp's health checks the code location declares (resource ``HEALTH_CHECKS_KEY``: a run
    executed in process has no code location to ask)."""
    keys = getattr(context.resources, HEALTH_CHECKS_KEY)
    return frozenset(k for k in keys if k.name in (INLINED_CHECK, SMALL_FILES_CHECK))


@dg.job(
    name=MONITOR_JOB,
    description="srdp catalog pressure: warn about datasets with too many inlined rows.",
    tags={"srdp": "monitor"},
)
def monitor_job() -> None:
    check_catalog_pressure()


def build_hourly_schedule(
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
) -> dg.ScheduleDefinition:
    """``srdp_catalog_pressure_hourly``: the monitor at minute 0 of every hour (UTC),
    ``default_status`` when the Dagster instance has no state for it yet."""
    return dg.ScheduleDefinition(
        name=MONITOR_SCHEDULE,
        job=monitor_job,
        cron_schedule="0 * * * *",
        execution_timezone="UTC",
        default_status=default_status,
        description="srdp catalog pressure check every hour at minute 0.",
    )


hourly_schedule = build_hourly_schedule()
