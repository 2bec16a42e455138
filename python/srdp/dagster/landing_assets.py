"""Dagster assets that promote the landing zone into raw, and the landing zone's retention job.

:func:`srdp_landing_assets` builds one multi-asset per landing table: the raw table
(``lake/raw_landed/orders``, ``dagster/table_name`` ``lake.raw_landed.orders``) and its child
tables, depending on the dlt landing asset of the same table (``lake/landing/orders``, the name
:meth:`DltDestination.table_names` gives it), with one asset check, ``landing_loads``, that fails
when a load is quarantined (ERROR, the reason in its metadata) or unfinished (WARN). Each
materialization runs :func:`srdp.ingest.landing.promote_landing` with the IO manager resource's
catalog, writer and secrets: the IO manager's write path, one transaction per load.

:func:`landing_retention_schedule` runs :func:`srdp.ingest.landing.landing_retention` daily
(03:30 UTC by default, after the 02:00 maintenance), running by default like maintenance.
"""

# No `from __future__ import annotations`: Dagster reads the op functions' annotations as objects.

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import dagster as dg

from srdp.dagster.io_manager import SNAPSHOT_KEY, SrdpIOManager
from srdp.dagster.lineage import TABLE_NAME_KEY, table_asset_key
from srdp.ingest.dlt.destination import DltDestination
from srdp.ingest.landing import DEFAULT_RETENTION, Check, Outcome, landing_retention, promote_landing

__all__ = ["LANDING_CHECK", "landing_retention_schedule", "srdp_landing_assets"]

#: The asset check each promotion reports on its raw table.
LANDING_CHECK = "landing_loads"


def _io_manager(context: Any, key: str) -> SrdpIOManager:
    found = getattr(context.resources, key)
    if not isinstance(found, SrdpIOManager):
        raise dg.DagsterInvariantViolationError(
            f"resource {key!r} is {type(found).__name__}; the landing promotion writes through "
            "SrdpIOManager: pass io_manager_key= naming an SrdpIOManager resource"
        )
    return found


def srdp_landing_assets(
    destination: DltDestination,
    tables: Sequence[str] | Mapping[str, Sequence[str]],
    *,
    keys: Mapping[str, Sequence[str]] | None = None,
    checks: Sequence[Check] = (),
    skip_loads: Sequence[str] = (),
    io_manager_key: str = "io_manager",
    group_name: str | None = None,
) -> list[dg.AssetsDefinition]:
    """One promotion asset per landing table of ``destination`` (``layer="landing"``).

    ``tables``: the parent tables, or a mapping parent -> child tables (``{"orders":
    ["orders__items"]}``: promoted with the parent in one transaction). ``keys``: per table, the
    columns that must be non-null and unique (in the load and against raw). ``checks``: the
    project's own ``(table, pyarrow.Table) -> problems`` validations. ``skip_loads``: load ids
    recorded as skipped instead of promoted (the way past a quarantined load).
    """
    if not destination.is_landing or destination.promote_into is None:
        raise ValueError(
            f"srdp_landing_assets: destination {destination.catalog}.{destination.dataset_name} is not the "
            f"landing zone; pass srdp.ingest.dlt.destination({destination.catalog!r}, layer='landing')"
        )
    parents = dict(tables) if isinstance(tables, Mapping) else {t: [] for t in tables}
    landing_names = destination.table_names([t for p, kids in parents.items() for t in (p, *kids)])
    built = []
    for parent, children in parents.items():
        built.append(_promotion_asset(
            destination, parent, list(children), landing_names, dict(keys or {}), tuple(checks),
            tuple(skip_loads), io_manager_key, group_name,
        ))
    return built


def _promotion_asset(
    destination: DltDestination,
    parent: str,
    children: list[str],
    landing_names: Mapping[str, str],
    keys: Mapping[str, Sequence[str]],
    checks: Sequence[Check],
    skip_loads: Sequence[str],
    io_manager_key: str,
    group_name: str | None,
) -> dg.AssetsDefinition:
    schema = destination.promote_into
    raw_names = {t: f"{destination.catalog}.{schema}.{t}" for t in (parent, *children)}
    specs = [
        dg.AssetSpec(
            key=table_asset_key(raw_names[t]),
            deps=[table_asset_key(landing_names[t])],
            metadata={TABLE_NAME_KEY: raw_names[t], "srdp/landing": destination.landing_url + t},
            kinds={"ducklake"},
            group_name=group_name,
            description=(
                f"Loads of landing table {t} ({destination.landing_url}{t}/) validated and promoted into "
                f"{raw_names[t]}" + (f" with {raw_names[parent]}" if t != parent else "")
            ),
            skippable=t != parent,
        )
        for t in (parent, *children)
    ]
    parent_key = specs[0].key
    # Blocking: a quarantined load (ERROR) fails the step, so the run fails and the assets
    # downstream of raw do not run on stale input; a load still waiting for its marker (WARN) does not.
    check = dg.AssetCheckSpec(LANDING_CHECK, asset=parent_key, blocking=True, description=(
        "Every finished landing load is promoted: fails the step with the reason when a load is "
        "quarantined (ERROR; re-run after skip_loads or a re-delivery), warns when one has no "
        "_dlt_loads marker (WARN)"
    ))

    @dg.multi_asset(
        name=f"promote_{destination.catalog}_{destination.dataset_name}_{parent}",
        specs=specs,
        check_specs=[check],
        required_resource_keys={io_manager_key},
    )
    def _promote(context: dg.AssetExecutionContext) -> Iterator[Any]:
        io = _io_manager(context, io_manager_key)
        outcomes = promote_landing(
            destination.refresh(), parent, children, io_manager=io, keys=keys, checks=checks,
            skip_loads=skip_loads, run_id=context.run.run_id,
        )
        for outcome in outcomes:
            _log(context, parent, outcome)
        promoted = [o for o in outcomes if o.status == "promoted"]
        snapshot = max((o.snapshot_id for o in promoted if o.snapshot_id is not None), default=None)
        for t, spec in zip((parent, *children), specs):
            rows = sum(o.rows.get(raw_names[t], 0) for o in promoted)
            metadata: dict[str, Any] = {
                TABLE_NAME_KEY: raw_names[t],
                "dagster/storage_kind": "ducklake",
                "srdp/loads_promoted": len([o for o in promoted if raw_names[t] in o.rows]),
                "srdp/rows_promoted": rows,
                "srdp/load_ids": ", ".join(o.load_id for o in promoted if raw_names[t] in o.rows),
            }
            if snapshot is not None:
                metadata[SNAPSHOT_KEY] = snapshot
            yield dg.MaterializeResult(asset_key=spec.key, metadata=metadata)
        yield _check_result(parent_key, outcomes)

    return _promote


def _log(context: dg.AssetExecutionContext, table: str, outcome: Outcome) -> None:
    text = f"landing {table}: load {outcome.load_id} {outcome.status}"
    if outcome.status == "promoted":
        context.log.info(f"{text}: {outcome.rows} in snapshot {outcome.snapshot_id}")
    elif outcome.status == "quarantined":
        context.log.error(f"{text}: " + "; ".join(outcome.reasons))
    else:
        context.log.warning(f"{text}: " + "; ".join(outcome.reasons))


def _check_result(key: dg.AssetKey, outcomes: list[Outcome]) -> dg.AssetCheckResult:
    bad = {s: [o for o in outcomes if o.status == s] for s in ("quarantined", "waiting", "unfinished")}
    severity = dg.AssetCheckSeverity.ERROR if bad["quarantined"] else dg.AssetCheckSeverity.WARN
    metadata: dict[str, Any] = {
        status: "\n".join(f"{o.load_id}: {'; '.join(o.reasons)}" for o in found)
        for status, found in bad.items()
        if found
    }
    metadata["promoted"] = len([o for o in outcomes if o.status == "promoted"])
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=LANDING_CHECK,
        passed=not any(bad.values()),
        severity=severity,
        metadata=metadata,
    )


def landing_retention_schedule(
    destination: DltDestination,
    *,
    older_than: dt.timedelta = DEFAULT_RETENTION,
    io_manager_key: str = "io_manager",
    cron_schedule: str = "30 3 * * *",
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.RUNNING,
) -> dg.ScheduleDefinition:
    """A daily job (``srdp_landing_retention_<catalog>_<dataset>``) that runs
    :func:`srdp.ingest.landing.landing_retention`, at ``cron_schedule`` UTC, running by default."""
    name = f"srdp_landing_retention_{destination.catalog}_{destination.dataset_name}"

    @dg.op(name=f"{name}_op", required_resource_keys={io_manager_key})
    def _retention(context: dg.OpExecutionContext) -> None:
        report = landing_retention(
            destination.refresh(), io_manager=_io_manager(context, io_manager_key), older_than=older_than
        )
        context.log.info(
            f"landing retention of {destination.landing_url}: {len(report.deleted)} file(s) deleted, "
            f"watermark {report.watermark or '(every load is in raw)'}"
        )
        context.add_output_metadata({"deleted": len(report.deleted), "watermark": report.watermark or ""})

    @dg.job(name=name, tags={"srdp/job": "landing_retention"})
    def _job() -> None:
        _retention()

    return dg.ScheduleDefinition(
        job=_job, cron_schedule=cron_schedule, execution_timezone="UTC", default_status=default_status
    )
