"""The nightly dataset maintenance: job ``srdp_dataset_maintenance`` and its schedule.

One ``srdp_compact`` call per catalog (:func:`maintain_catalog`): srdp reads the catalog once,
then flushes, rewrites (files that carry deletes) and merges the selected datasets one at a time, in (schema, table) order, calling
DuckLake only for the steps that may do something. Every step commits on its own and srdp
retries transaction conflicts itself, so the job has no Dagster retry policy.

What the run reports scales with the datasets that had a step, not with the catalog (at 10,000
datasets one event per dataset made the run 151 s of event writing after 8.6 s of maintenance):

* one log line per dataset whose step did something or was skipped, saying what
  (``compacted``: files were merged; ``flushed``: inlined rows were written out and nothing was
  merged; ``skipped: auto_compact is false``; in a dry run what is planned), and per catalog the
  datasets with ``nothing to do``: their count and names, :data:`IDLE_NAMES_PER_LINE` a line, so
  no dataset is missing from the log;
* after each catalog's call, one health read of the catalog (:mod:`srdp.dagster.health`) and an
  ``AssetObservation`` on the physical-name asset key of each dataset that had a step (its state
  after the step plus rows flushed, files merged and the step's duration; none for a dry run).
  A dataset with nothing to do had no step and gets none here: the hourly pressure monitor
  observes every dataset;
* one output, ``summary`` (to srdp's own IO manager, ``NO_STORAGE_IO_MANAGER_KEY``, which stores
  nothing, never the application's ``io_manager``): its value has the totals, the datasets per
  status and every dataset's result (``results``); its metadata the totals, ``srdp/by_status``,
  the results of the datasets that had a step (``srdp/steps``) and a Markdown table of the
  catalog's health (``srdp/summary``).

A health read that fails is logged as an error and never fails the run (advisory). A failing
dataset fails the run with a ``dg.Failure`` naming it and every dataset committed before it; the
datasets before it stay committed, and a rerun revisits every dataset harmlessly (maintenance
re-plans from the current snapshot).
"""

# No `from __future__ import annotations`: Dagster reads the ops' config annotations as
# objects and cannot resolve them from strings.

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
import duckdb

import srdp
from srdp.dagster.health import DatasetHealth, observation, read_catalog_health, summary_table
from srdp.dagster.resource import NO_STORAGE_IO_MANAGER_KEY, RESOURCE_KEY, SrdpResource

__all__ = [
    "MAINTENANCE_JOB",
    "MAINTENANCE_SCHEDULE",
    "IDLE_NAMES_PER_LINE",
    "MaintenanceConfig",
    "build_nightly_schedule",
    "had_step",
    "idle_lines",
    "maintain_catalog",
    "maintain_dataset",
    "maintain_datasets",
    "maintenance_job",
    "nightly_schedule",
    "run_totals",
]

MAINTENANCE_JOB = "srdp_dataset_maintenance"
MAINTENANCE_SCHEDULE = "srdp_dataset_maintenance_nightly"


class MaintenanceConfig(dg.Config):
    """Run config of ``srdp_dataset_maintenance``; empty = every dataset of every catalog."""

    catalogs: list[str] = []
    namespace: str | None = None  # schema
    name: str | None = None  # table
    dry_run: bool = False


def maintain_catalog(
    con: duckdb.DuckDBPyConnection,
    catalog: str,
    namespace: str | None = None,
    name: str | None = None,
    dry_run: bool = False,
) -> list[dict[str, Any]]:
    """One ``srdp_compact`` call over the selected datasets of ``catalog`` (one planning read);
    one result per dataset, in (schema, table) order, with the milliseconds srdp reports as
    ``duration_ms``. srdp's errors surface as ``duckdb.Error``."""
    rows = srdp.call(con, "srdp_compact", catalog, schema_name=namespace, table_name=name, dry_run=dry_run)
    return [_result(catalog, row, dry_run) for row in rows]


def maintain_dataset(
    con: duckdb.DuckDBPyConnection, catalog: str, dataset: Mapping[str, Any], dry_run: bool = False
) -> dict[str, Any]:
    """:func:`maintain_catalog` of one dataset (a mapping with ``schema_name`` and ``table_name``,
    such as a row of ``srdp_inlined_row_count``)."""
    (result,) = maintain_catalog(con, catalog, dataset["schema_name"], dataset["table_name"], dry_run)
    return result


def _result(catalog: str, row: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
    """The op's output for one row of ``srdp_compact``."""
    rows_flushed = int(row["rows_flushed"] or 0)
    return {
        "catalog": catalog,
        "schema_name": row["schema_name"],
        "table_name": row["table_name"],
        "rows_flushed": rows_flushed,
        "files_before": row["files_before"],
        "files_after": row["files_after"],
        "files_processed": row["files_processed"],
        "files_created": row["files_created"],
        "files_rewritten": int(row["files_rewritten"] or 0),
        "deletes_applied": int(row["deletes_applied"] or 0),
        "attempts": int(row["attempts"]),
        "duration_ms": int(row["duration_ms"]),
        "status": _step_status(row["status"], (row["files_processed"] or 0) + (row["files_rewritten"] or 0), dry_run),
    }


def _step_status(compact_status: str, files_compacted: int, dry_run: bool) -> str:
    """What the dataset's step did: ``srdp_compact`` says ``compacted`` when its flush wrote rows
    or deletion markers and nothing was rewritten or merged; the job says ``flushed`` then."""
    if dry_run or files_compacted:
        return compact_status  # planned / skipped; or compacted (with srdp's notes, if any)
    if compact_status.startswith("compacted"):  # rows or deletion markers flushed, nothing compacted
        return "flushed" + compact_status[len("compacted") :]
    return compact_status  # nothing to do / skipped: auto_compact is false


@dg.op(
    name="srdp_maintain_datasets",
    out={"summary": dg.Out(dict, io_manager_key=NO_STORAGE_IO_MANAGER_KEY)},
    required_resource_keys={RESOURCE_KEY},
    description="One srdp_compact per catalog: flush, rewrite and merge each selected dataset, one at a time.",
    tags={"kind": "srdp"},
)
def maintain_datasets(context: dg.OpExecutionContext, config: MaintenanceConfig) -> Iterator[Any]:
    resource: SrdpResource = getattr(context.resources, RESOURCE_KEY)
    con = resource.connect(config.catalogs or None, role="writer")
    done: list[str] = []
    results: list[dict[str, Any]] = []
    health: list[DatasetHealth] = []
    try:
        for catalog in config.catalogs or resource.catalogs(con):
            try:
                found = maintain_catalog(con, catalog, config.namespace, config.name, config.dry_run)
            except duckdb.Error as e:
                raise _failure(catalog, e, done) from e
            states = _health_after(context, con, catalog, found)
            idle: list[str] = []
            for result in found:
                qualified = f"{catalog}.{result['schema_name']}.{result['table_name']}"
                done.append(qualified)
                results.append(result)
                state = states.get((result["schema_name"], result["table_name"]))
                if state is not None:
                    health.append(state)
                if not had_step(result):
                    idle.append(f"{result['schema_name']}.{result['table_name']}")
                    continue
                context.log.info(_summary(qualified, result, config.dry_run))
                if state is not None and not config.dry_run:
                    yield observation(state, result, description=f"srdp maintenance: {result['status']}")
            for line in idle_lines(catalog, idle, config.dry_run):
                context.log.info(line)
    finally:
        con.close()
    totals = run_totals(results, config.dry_run)
    stepped = [r for r in results if had_step(r)]
    yield dg.Output(
        {**totals, "results": results},
        output_name="summary",
        metadata={
            "datasets": totals["datasets"],
            "dry_run": config.dry_run,
            "srdp/rows_flushed": totals["rows_flushed"],
            "srdp/files_rewritten": totals["files_rewritten"],
            "srdp/files_merged": totals["files_merged"],
            "srdp/by_status": dg.MetadataValue.json(totals["by_status"]),
            "srdp/steps": dg.MetadataValue.json(stepped[:STEPS_IN_METADATA]),
            "srdp/summary": dg.MetadataValue.md(summary_table(health)),
        },
    )


#: Names of datasets with nothing to do in one log line (a catalog of 10,000 gets 50 lines).
IDLE_NAMES_PER_LINE = 200
#: Datasets whose step did something listed in the summary's ``srdp/steps`` metadata (all of
#: them are in the output's value and each has its own log line and observation).
STEPS_IN_METADATA = 1000


def had_step(result: Mapping[str, Any]) -> bool:
    """Whether the dataset's step did (or, in a dry run, would do) something or was skipped:
    anything but ``nothing to do``."""
    return result["status"] != "nothing to do"


def idle_lines(catalog: str, names: Sequence[str], dry_run: bool = False) -> list[str]:
    """The log lines of ``catalog``'s datasets with nothing to do: their count, then their names,
    :data:`IDLE_NAMES_PER_LINE` a line, e.g. ``srdp: lake: 2 datasets had nothing to do (1/1):
    main.a, main.b``; none when there are none."""
    if not names:
        return []
    one = len(names) == 1
    verb = ("has" if one else "have") if dry_run else "had"
    chunks = [names[i : i + IDLE_NAMES_PER_LINE] for i in range(0, len(names), IDLE_NAMES_PER_LINE)]
    word = "dataset" if one else "datasets"
    return [
        f"srdp: {catalog}: {len(names)} {word} {verb} nothing to do ({n}/{len(chunks)}): {', '.join(chunk)}"
        for n, chunk in enumerate(chunks, 1)
    ]


def run_totals(results: Sequence[Mapping[str, Any]], dry_run: bool = False) -> dict[str, Any]:
    """The run's totals: datasets, rows flushed and files rewritten (0 in a dry run), files merged
    and datasets per status (the status's first clause: ``flushed; 3 inline deletion markers ...``
    counts as ``flushed``)."""
    by_status: dict[str, int] = {}
    for r in results:
        head = str(r["status"]).split(";")[0].split(" (")[0]
        by_status[head] = by_status.get(head, 0) + 1
    return {
        "datasets": len(results),
        "rows_flushed": 0 if dry_run else sum(int(r["rows_flushed"]) for r in results),
        "files_rewritten": 0 if dry_run else sum(int(r.get("files_rewritten") or 0) for r in results),
        "files_merged": sum(int(r["files_processed"] or 0) for r in results),
        "by_status": dict(sorted(by_status.items())),
    }


def _health_after(
    context: dg.OpExecutionContext, con: duckdb.DuckDBPyConnection, catalog: str, results: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str], DatasetHealth]:
    """The health of ``catalog``'s maintained datasets after their steps, from one read; empty
    (logged as an error) when the read fails: the observations are advisory."""
    if not results:
        return {}
    try:
        states = read_catalog_health(con, catalog)
    except duckdb.Error as e:
        context.log.error(f"srdp: reading the health of catalog {catalog} failed (ignored): {e!r}")
        return {}
    return {(h.schema_name, h.table_name): h for h in states}


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


# srdp's error names the dataset that failed and the datasets ITS call committed before it.
_SRDP_DATASET = re.compile(r"dataset '((?:[^']|'')*)' failed to ")
_SRDP_COMMITTED = re.compile(r"\.?\s*Datasets committed before it: ([^\n]*)$")


def _failure(catalog: str, error: duckdb.Error, done: Sequence[str]) -> dg.Failure:
    """The run's failure: where srdp stopped, why, and every dataset committed before it (the
    earlier catalogs' and the ones srdp names for this catalog)."""
    message = str(error).rstrip()
    committed = list(done)
    listed = _SRDP_COMMITTED.search(message)
    if listed:
        message = message[: listed.start()]
        if listed.group(1) != "none":
            committed += [f"{catalog}.{name}" for name in listed.group(1).split(", ")]
    failed = _SRDP_DATASET.search(message)
    dataset = f"{catalog}.{failed.group(1)}" if failed else None
    where = f"at dataset {dataset}" if dataset else f"in catalog {catalog}"
    return dg.Failure(
        description=(
            f"srdp maintenance failed {where}: {message}. "
            f"Datasets committed before it: {', '.join(committed) or 'none'}. "
            "A rerun revisits the committed datasets harmlessly."
        ),
        metadata={"dataset": dataset or catalog, "datasets_done": len(committed)},
    )


def _summary(qualified: str, result: Mapping[str, Any], dry_run: bool) -> str:
    """The log line of one dataset's step, e.g. ``srdp: lake.main.a: compacted; 15 inlined rows
    flushed, files 3 -> 1 (4 merged into 1), attempts 1, 37 ms`` (files: live data files before
    the step and after it; the merge also counts the files the flush wrote)."""
    head = f"srdp: {qualified}: {result['status']}"
    if dry_run:
        return (
            f"{head} (dry run, nothing changed); {result['rows_flushed']} inlined rows to flush, "
            f"{result['files_rewritten']} files with deletes to rewrite, "
            f"files {result['files_before']}, {result['duration_ms']} ms"
        )
    processed = result["files_processed"]
    merged = f"{processed} merged into {result['files_created']}" if processed else "none merged"
    return (
        f"{head}; {result['rows_flushed']} inlined rows flushed, "
        f"files {result['files_before']} -> {result['files_after']} ({merged}), "
        f"attempts {result['attempts']}, {result['duration_ms']} ms"
    )

