"""The nightly dataset maintenance: job ``srdp_dataset_maintenance`` and its schedule.

Datasets one at a time, in (catalog, schema, table) order; for each: check pressure
(``srdp_inlined_row_count``), ``srdp_flush``, ``srdp_compact`` (:func:`maintain_dataset`). Every
step commits on its own and srdp retries transaction conflicts itself, so the job has no Dagster
retry policy. Each dataset's result is one dynamic output with its metadata and one log line
saying what the dataset's whole step did (``compacted``: files were merged; ``flushed``: inlined
rows were written out and nothing was merged; ``nothing to do``). The outputs go to srdp's own IO
manager (``NO_STORAGE_IO_MANAGER_KEY``), which stores nothing, never to the application's
``io_manager``. A failing dataset fails the run; the datasets before it stay committed, and a
rerun revisits every dataset harmlessly (maintenance re-plans from the current snapshot).
"""

# No `from __future__ import annotations`: Dagster reads the ops' config annotations as
# objects and cannot resolve them from strings.

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
import duckdb

import srdp
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, SrdpResource

__all__ = [
    "MAINTENANCE_JOB",
    "MAINTENANCE_SCHEDULE",
    "MaintenanceConfig",
    "build_nightly_schedule",
    "maintain_dataset",
    "maintain_datasets",
    "maintenance_job",
    "nightly_schedule",
]

MAINTENANCE_JOB = "srdp_dataset_maintenance"
MAINTENANCE_SCHEDULE = "srdp_dataset_maintenance_nightly"


class MaintenanceConfig(dg.Config):
    """Run config of ``srdp_dataset_maintenance``; empty = every dataset of every catalog."""

    catalogs: list[str] = []
    namespace: str | None = None  # schema
    name: str | None = None  # table
    dry_run: bool = False


def maintain_dataset(
    con: duckdb.DuckDBPyConnection, catalog: str, dataset: Mapping[str, Any], dry_run: bool = False
) -> dict[str, Any]:
    """``srdp_flush`` then ``srdp_compact`` of one dataset (a row of ``srdp_inlined_row_count``);
    the op's output for it. srdp's errors surface as ``duckdb.Error``."""
    return _maintain(con, catalog, dataset, dry_run)[0]


def _maintain(
    con: duckdb.DuckDBPyConnection, catalog: str, dataset: Mapping[str, Any], dry_run: bool
) -> tuple[dict[str, Any], int]:
    """:func:`maintain_dataset`'s result and the milliseconds srdp reports for both steps."""
    schema, table = dataset["schema_name"], dataset["table_name"]
    (flush,) = srdp.call(con, "srdp_flush", catalog, schema_name=schema, table_name=table, dry_run=dry_run)
    (compact,) = srdp.call(con, "srdp_compact", catalog, schema_name=schema, table_name=table, dry_run=dry_run)
    # For a dry run both report the same planned rows; only one flush would happen.
    rows_flushed = int(compact["rows_flushed"] or 0) + (0 if dry_run else int(flush["rows_flushed"]))
    result = {
        "catalog": catalog,
        "schema_name": schema,
        "table_name": table,
        "inlined_rows_before": int(dataset["inlined_rows"]),
        "rows_flushed": rows_flushed,
        "files_before": compact["files_before"],
        "files_after": compact["files_after"],
        "files_processed": compact["files_processed"],
        "files_created": compact["files_created"],
        "flush_attempts": int(flush["attempts"]),
        "attempts": int(compact["attempts"]),
        "status": _step_status(compact["status"], rows_flushed, compact["files_processed"], dry_run),
    }
    return result, int(flush["duration_ms"]) + int(compact["duration_ms"])


def _step_status(compact_status: str, rows_flushed: int, files_processed: int | None, dry_run: bool) -> str:
    """What the dataset's whole step did. ``srdp_compact`` alone says ``nothing to do`` when the
    ``srdp_flush`` before it already wrote the inlined rows out and there was nothing to merge,
    and ``compacted`` when its own flush wrote rows but nothing was merged."""
    if dry_run or files_processed:
        return compact_status  # planned / skipped; or compacted (with srdp's notes, if any)
    if rows_flushed > 0:
        return "flushed"
    return compact_status  # nothing to do / skipped: auto_compact is false


@dg.op(
    name="srdp_maintain_datasets",
    out=dg.DynamicOut(dict, io_manager_key=NO_STORAGE_IO_MANAGER_KEY),
    required_resource_keys={RESOURCE_KEY},
    description="Per dataset, one at a time: pressure check, srdp_flush, srdp_compact.",
    tags={"kind": "srdp"},
)
def maintain_datasets(context: dg.OpExecutionContext, config: MaintenanceConfig) -> Iterator[dg.DynamicOutput]:
    resource: SrdpResource = getattr(context.resources, RESOURCE_KEY)
    con = resource.connect(config.catalogs or None, role="writer")
    done: list[str] = []
    try:
        for catalog in config.catalogs or resource.catalogs(con):
            datasets = srdp.call(
                con, "srdp_inlined_row_count", catalog, schema_name=config.namespace, table_name=config.name
            )
            for dataset in datasets:
                qualified = f"{catalog}.{dataset['schema_name']}.{dataset['table_name']}"
                try:
                    result, duration_ms = _maintain(con, catalog, dataset, config.dry_run)
                except duckdb.Error as e:
                    raise _failure(qualified, e, done) from e
                context.log.info(_summary(qualified, result, duration_ms, config.dry_run))
                done.append(qualified)
                metadata = {k: v for k, v in result.items() if v is not None}
                yield dg.DynamicOutput(
                    result,
                    mapping_key=_mapping_key(catalog, dataset["schema_name"], dataset["table_name"]),
                    metadata={**metadata, "duration_ms": duration_ms, "dry_run": config.dry_run},
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


def build_nightly_schedule(
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
) -> dg.ScheduleDefinition:
    """``srdp_dataset_maintenance_nightly``: the maintenance job at 02:00 UTC, ``default_status``
    when the Dagster instance has no state for it yet."""
    return dg.ScheduleDefinition(
        name=MAINTENANCE_SCHEDULE,
        job=maintenance_job,
        cron_schedule="0 2 * * *",
        execution_timezone="UTC",
        default_status=default_status,
        description="srdp dataset maintenance every night at 02:00 UTC.",
    )


nightly_schedule = build_nightly_schedule()


# srdp's own error ends with the datasets that ITS call committed; the op calls srdp once per
# dataset, so the run's list (below) replaces it.
_SRDP_COMMITTED = re.compile(r"\.?\s*Datasets committed before it: [^\n]*$")


def _failure(qualified: str, error: duckdb.Error, done: Sequence[str]) -> dg.Failure:
    cause = _SRDP_COMMITTED.sub("", str(error).rstrip())
    return dg.Failure(
        description=(
            f"srdp maintenance failed at dataset {qualified}: {cause}. "
            f"Datasets committed before it: {', '.join(done) or 'none'}. "
            "A rerun revisits the committed datasets harmlessly."
        ),
        metadata={"dataset": qualified, "datasets_done": len(done)},
    )


def _summary(qualified: str, result: Mapping[str, Any], duration_ms: int, dry_run: bool) -> str:
    """The log line of one dataset's step, e.g. ``srdp: lake.main.a: compacted; 15 inlined rows,
    15 flushed, files 4 -> 1 (4 merged into 1), attempts flush 1 / compact 1, 37 ms`` (files:
    live data files after the flush, then after the merge)."""
    head = f"srdp: {qualified}: {result['status']}"
    if dry_run:
        return (
            f"{head} (dry run, nothing changed); {result['inlined_rows_before']} inlined rows, "
            f"{result['rows_flushed']} to flush, files {result['files_before']}, {duration_ms} ms"
        )
    processed = result["files_processed"]
    merged = f"{processed} merged into {result['files_created']}" if processed else "none merged"
    return (
        f"{head}; {result['inlined_rows_before']} inlined rows, {result['rows_flushed']} flushed, "
        f"files {result['files_before']} -> {result['files_after']} ({merged}), "
        f"attempts flush {result['flush_attempts']} / compact {result['attempts']}, {duration_ms} ms"
    )


def _mapping_key(*parts: str) -> str:
    key = "__".join(re.sub(r"[^A-Za-z0-9_]", "_", p) for p in parts)
    return key or "_"
