"""Each dataset's health on its own asset: observations, the two advisory checks, the run summary.

The hourly monitor and the nightly maintenance read every dataset of a catalog once
(:func:`read_health`) and record, on the dataset's physical-name asset key (``lake/raw/orders``,
the key srdp's dlt, dbt and IO manager assets use; a table no asset produces gets the same key),
one ``AssetObservation`` with numeric metadata that Dagster plots on the asset's page:

========================================  ==================================================
``srdp/inlined_rows``                     inlined insertion records (``srdp_inlined_row_count``)
``srdp/inline_deletion_markers``          inline deletion markers against Parquet files
``srdp/live_data_files``                  live data files
``srdp/small_files``                      live files under the merge target size
``srdp/live_bytes``                       bytes of the live data files
``srdp/files_with_deletes``               live data files that carry deletes (the delete backlog)
``srdp/deleted_rows``                     deleted rows those files still carry
``srdp/deleted_share``                    deleted rows over the rows of the live data files
``srdp/rows_flushed``, ``srdp/files_rewritten``, ``srdp/files_merged``, ``srdp/duration_ms``
                                          maintenance steps only
========================================  ==================================================

The monitor also evaluates two checks per dataset, both ``WARN`` and advisory (ADR 000: the
threshold is a warning, never a storage limit): ``inlined_rows_under_threshold`` (inlined rows
at most the catalog's ``pressure_warning_rows``, as ``srdp_catalog_pressure`` decides) and
``small_files_under_limit`` (small files at most the monitor's ``small_files_limit``).
:func:`health_checks` declares them on the application's table assets, so the badges show on the
asset and in the graph: one check definition per group of assets one op materializes together
(:func:`table_asset_groups`), so that in a run that materializes them, a check waits only for its
own assets, and one asset that fails skips only its own checks, never every asset's.

One read per catalog is a fixed number of metadata queries whatever the number of datasets:
``srdp_inlined_row_count``, the target-size options, the live files per table, the snapshots that
made inline deletion markers, one count of those markers per file, and the live delete files. A
marker or delete file counts only against a live data file, as srdp's planner counts them (a
marker left on a file a compaction retired is no backlog). The files under the merge target
are counted as srdp's maintenance planner counts them: below the largest target size anyone
configured (any option scope, the ``ducklake_target_file_size`` setting, DuckLake's 512 MiB).
"""

# No `from __future__ import annotations`: Dagster reads the check's context annotation as an object.

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dagster as dg
import duckdb

import srdp

__all__ = [
    "DEFAULT_SMALL_FILES_LIMIT",
    "INLINED_CHECK",
    "SMALL_FILES_CHECK",
    "DatasetHealth",
    "check_evaluations",
    "health_checks",
    "observation",
    "read_catalog_health",
    "read_health",
    "summary_table",
    "table_asset_groups",
]

INLINED_CHECK = "inlined_rows_under_threshold"
SMALL_FILES_CHECK = "small_files_under_limit"

#: The monitor's default most small files per dataset before ``small_files_under_limit`` warns.
DEFAULT_SMALL_FILES_LIMIT = 100

#: DuckLake 1.0's default ``target_file_size`` (512 MiB).
DEFAULT_TARGET_FILE_SIZE = 1 << 29

_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


@dataclasses.dataclass(frozen=True)
class DatasetHealth:
    """What one read says about one dataset."""

    catalog: str
    schema_name: str
    table_name: str
    inlined_rows: int
    inline_deletion_markers: int
    live_data_files: int
    small_files: int
    live_bytes: int
    #: Live data files that carry deletes, the deleted rows they carry, the rows they all hold.
    files_with_deletes: int = 0
    deleted_rows: int = 0
    live_rows: int = 0

    @property
    def deleted_share(self) -> float:
        """Deleted rows over the rows of the live data files (0 without files)."""
        return self.deleted_rows / self.live_rows if self.live_rows else 0.0

    @property
    def name(self) -> str:
        """The physical name, ``lake.raw.orders``."""
        return f"{self.catalog}.{self.schema_name}.{self.table_name}"

    @property
    def key(self) -> dg.AssetKey:
        """The physical-name asset key, ``lake/raw/orders``."""
        return dg.AssetKey([self.catalog, self.schema_name, self.table_name])

    def metadata(self) -> dict[str, int | float]:
        return {
            "srdp/inlined_rows": self.inlined_rows,
            "srdp/inline_deletion_markers": self.inline_deletion_markers,
            "srdp/live_data_files": self.live_data_files,
            "srdp/small_files": self.small_files,
            "srdp/live_bytes": self.live_bytes,
            "srdp/files_with_deletes": self.files_with_deletes,
            "srdp/deleted_rows": self.deleted_rows,
            "srdp/deleted_share": round(self.deleted_share, 6),
        }


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def parse_size(text: str) -> int | None:
    """A DuckDB size (``512MB``, ``1GiB``, ``2000000``) in bytes; None when it does not parse."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        return None
    return int(-(-float(match.group(1)) * _UNITS[match.group(2).lower()] // 1))


def merge_target(values: Iterable[str | None]) -> int:
    """The largest of DuckLake's default and every configured target size (a value that does not
    parse counts every file as small, as srdp's planner does)."""
    sizes = [parse_size(v) for v in values if v is not None]
    return max([DEFAULT_TARGET_FILE_SIZE, *[s if s is not None else 2**63 - 1 for s in sizes]])


def read_catalog_health(con: duckdb.DuckDBPyConnection, catalog: str) -> list[DatasetHealth]:
    """Every dataset of ``catalog`` (attached on ``con``, any role), in (schema, table) order."""
    (definition,) = [row for row in srdp.call(con, "srdp_catalogs") if row["catalog"] == catalog]
    meta = f"{_quote('__ducklake_metadata_' + catalog)}.{_quote(definition['metadata_schema'] or 'main')}"

    def table(name: str) -> str:
        return f"{meta}.{_quote(name)}"

    inlined = srdp.call(con, "srdp_inlined_row_count", catalog)
    targets = con.execute(
        f"SELECT value FROM {table('ducklake_metadata')} WHERE key = 'target_file_size' "
        "UNION ALL SELECT current_setting('ducklake_target_file_size')::VARCHAR"
    ).fetchall()
    target = merge_target(value for (value,) in targets)
    files = {
        (schema, name): (table_id, int(n), int(size), int(small), int(rows))
        for schema, name, table_id, n, size, small, rows in con.execute(
            f"SELECT s.schema_name, t.table_name, t.table_id, count(f.data_file_id), "
            f"coalesce(sum(f.file_size_bytes), 0), count(f.data_file_id) FILTER (WHERE f.file_size_bytes < {target}), "
            "coalesce(sum(f.record_count), 0) "
            f"FROM {table('ducklake_table')} t JOIN {table('ducklake_schema')} s ON s.schema_id = t.schema_id "
            f"LEFT JOIN {table('ducklake_data_file')} f ON f.table_id = t.table_id AND f.end_snapshot IS NULL "
            "WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL GROUP BY ALL"
        ).fetchall()
    }
    markers = _inline_deletion_markers(con, table, {v[0] for v in files.values()})
    backlog = _delete_backlog(con, table, markers)
    out = []
    for row in inlined:
        table_id, n, size, small, rows = files.get((row["schema_name"], row["table_name"]), (None, 0, 0, 0, 0))
        per_file = backlog.get(table_id, {})
        out.append(
            DatasetHealth(
                catalog=catalog,
                schema_name=row["schema_name"],
                table_name=row["table_name"],
                inlined_rows=int(row["inlined_rows"]),
                inline_deletion_markers=sum(markers.get(table_id, {}).get(f, 0) for f in per_file),
                live_data_files=n,
                small_files=small,
                live_bytes=size,
                files_with_deletes=len(per_file),
                deleted_rows=sum(per_file.values()),
                live_rows=rows,
            )
        )
    return out


def _delete_backlog(
    con: duckdb.DuckDBPyConnection, table: Any, markers: Mapping[int, Mapping[int, int]]
) -> dict[int, dict[int, int]]:
    """Deleted rows per live data file that carries deletes, per table id: its live delete file's
    count plus its inline deletion markers (``markers``: per table id, per file id)."""
    marked = sorted({f for files in markers.values() for f in files})
    also = f" OR d.data_file_id IN ({', '.join(map(str, marked))})" if marked else ""
    rows = con.execute(
        f"SELECT d.table_id, d.data_file_id, coalesce(max(x.delete_count), 0) FROM {table('ducklake_data_file')} d "
        f"LEFT JOIN {table('ducklake_delete_file')} x ON x.data_file_id = d.data_file_id AND x.end_snapshot IS NULL "
        f"WHERE d.end_snapshot IS NULL AND (x.data_file_id IS NOT NULL{also}) GROUP BY 1, 2"
    ).fetchall()
    out: dict[int, dict[int, int]] = {}
    for table_id, file_id, deleted in rows:
        total = int(deleted) + markers.get(table_id, {}).get(file_id, 0)
        if total > 0:
            out.setdefault(table_id, {})[file_id] = total
    return out


def _inline_deletion_markers(
    con: duckdb.DuckDBPyConnection, table: Any, live: set[int]
) -> dict[int, dict[int, int]]:
    """Markers per table id, per file id: the ``ducklake_inlined_delete_<id>`` tables of the
    tables that snapshots name with ``inlined_delete:<id>`` (a missing marker table holds none)."""
    changes = con.execute(
        f"SELECT changes_made FROM {table('ducklake_snapshot_changes')} WHERE changes_made LIKE '%inlined_delete:%'"
    ).fetchall()
    ids = sorted({int(i) for (text,) in changes for i in re.findall(r"inlined_delete:(\d+)", text)} & live)
    if not ids:
        return {}

    def count(id_: int) -> str:
        return (
            f"SELECT {id_}::BIGINT, file_id::BIGINT, count(*)::BIGINT "
            f"FROM {table(f'ducklake_inlined_delete_{id_}')} GROUP BY file_id"
        )

    try:
        rows = con.execute(" UNION ALL ".join(count(i) for i in ids)).fetchall()
    except duckdb.Error:  # some marker table does not exist (deletes of inlined rows make none)
        rows = []
        for i in ids:
            try:
                rows += con.execute(count(i)).fetchall()
            except duckdb.CatalogException:
                pass
    out: dict[int, dict[int, int]] = {}
    for table_id, file_id, n in rows:
        out.setdefault(int(table_id), {})[int(file_id)] = int(n)
    return out


def read_health(con: duckdb.DuckDBPyConnection, catalogs: Sequence[str]) -> list[DatasetHealth]:
    """:func:`read_catalog_health` of each catalog, in order."""
    return [h for catalog in catalogs for h in read_catalog_health(con, catalog)]


def observation(
    health: DatasetHealth, step: Mapping[str, Any] | None = None, description: str | None = None
) -> dg.AssetObservation:
    """The observation of ``health`` on the dataset's key; ``step``: a maintenance result (a row
    of the maintenance job's outputs) whose rows flushed, files merged and duration it adds."""
    metadata: dict[str, Any] = health.metadata()
    if step is not None:
        metadata.update(
            {
                "srdp/rows_flushed": int(step["rows_flushed"] or 0),
                "srdp/files_rewritten": int(step.get("files_rewritten") or 0),
                "srdp/files_merged": int(step["files_processed"] or 0),
                "srdp/duration_ms": int(step["duration_ms"]),
                "srdp/status": str(step["status"]),
            }
        )
    return dg.AssetObservation(asset_key=health.key, metadata=metadata, description=description)


def check_evaluations(
    health: DatasetHealth, threshold: int, small_files_limit: int
) -> tuple[dg.AssetCheckEvaluation, dg.AssetCheckEvaluation]:
    """The two advisory checks of ``health`` (``WARN`` when they fail)."""
    return (
        dg.AssetCheckEvaluation(
            asset_key=health.key,
            check_name=INLINED_CHECK,
            passed=health.inlined_rows <= threshold,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"srdp/inlined_rows": health.inlined_rows, "srdp/threshold": threshold},
            description=f"{health.inlined_rows} inlined rows (threshold {threshold}); advisory",
        ),
        dg.AssetCheckEvaluation(
            asset_key=health.key,
            check_name=SMALL_FILES_CHECK,
            passed=health.small_files <= small_files_limit,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"srdp/small_files": health.small_files, "srdp/small_files_limit": small_files_limit},
            description=f"{health.small_files} small files (limit {small_files_limit}); advisory",
        ),
    )


def summary_table(datasets: Sequence[DatasetHealth], top: int = 10) -> str:
    """Markdown: the totals, then the ``top`` datasets by inlined rows, by small files and by files
    with deletes."""
    lines = [
        "| datasets | inlined rows | inline deletion markers | live data files | small files | live bytes "
        "| files with deletes | deleted rows |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(datasets)} | {sum(d.inlined_rows for d in datasets)} "
        f"| {sum(d.inline_deletion_markers for d in datasets)} | {sum(d.live_data_files for d in datasets)} "
        f"| {sum(d.small_files for d in datasets)} | {sum(d.live_bytes for d in datasets)} "
        f"| {sum(d.files_with_deletes for d in datasets)} | {sum(d.deleted_rows for d in datasets)} |",
    ]
    for title, field in (
        ("inlined rows", "inlined_rows"),
        ("small files", "small_files"),
        ("files with deletes", "files_with_deletes"),
    ):
        ranked = sorted(
            (d for d in datasets if getattr(d, field) > 0), key=lambda d: (-getattr(d, field), d.name)
        )[:top]
        lines += ["", f"Top datasets by {title}:", "", f"| dataset | {title} |", "|---|---:|"]
        lines += [f"| {d.name} | {getattr(d, field)} |" for d in ranked] or ["| (none) | 0 |"]
    return "\n".join(lines)


def table_asset_groups(assets: Iterable[Any]) -> list[list[dg.AssetKey]]:
    """The keys of the assets (``AssetsDefinition`` or ``AssetSpec``) that name a physical table
    (definition metadata ``dagster/table_name`` of three parts), grouped by the definition that
    materializes them (a dlt source's tables, a dbt project's models: one group each; a spec
    alone), in order, each key once."""
    seen: set[dg.AssetKey] = set()
    groups: list[list[dg.AssetKey]] = []
    for asset in assets:
        specs = [asset] if isinstance(asset, dg.AssetSpec) else list(getattr(asset, "specs", []) or [])
        group = []
        for spec in specs:
            name = (spec.metadata or {}).get("dagster/table_name")
            name = getattr(name, "value", name)
            if isinstance(name, str) and len(name.split(".")) == 3 and dg.AssetKey(name.split(".")) == spec.key:
                if spec.key not in seen:
                    seen.add(spec.key)
                    group.append(spec.key)
        if group:
            groups.append(group)
    return groups


def table_asset_keys(assets: Iterable[Any]) -> list[dg.AssetKey]:
    """The keys of :func:`table_asset_groups`, flat."""
    return [key for group in table_asset_groups(assets) for key in group]


#: The name of the health checks' definitions, ``srdp_table_health_checks__<first key>``.
CHECKS_NAME = "srdp_table_health_checks"


def health_checks(
    groups: Sequence[dg.AssetKey | Sequence[dg.AssetKey]], resource_key: str = "srdp"
) -> list[dg.AssetChecksDefinition]:
    """``inlined_rows_under_threshold`` and ``small_files_under_limit`` declared on each key of
    ``groups`` (physical-name keys), so their badges show on the assets: one check definition
    (one step) per group, a group being the keys one op materializes together (a key alone is a
    group of its own). A step of checks depends on its group's assets only, so in a run where one
    asset fails, the checks of the others still run. The hourly monitor evaluates them too; run
    on their own (from the UI), they read the catalogs once per step and pass with a note when the
    health cannot be read (advisory, fail-open)."""
    definitions = []
    names: set[str] = set()
    for group in groups:
        keys = [group] if isinstance(group, dg.AssetKey) else list(group)
        if not keys:
            continue
        name = f"{CHECKS_NAME}__" + re.sub(r"[^A-Za-z0-9_]", "_", "__".join(keys[0].path))
        unique, n = name, 1
        while unique in names:
            n += 1
            unique = f"{name}_{n}"
        names.add(unique)
        definitions.append(_health_checks(unique, keys, resource_key))
    return definitions


def _health_checks(name: str, keys: Sequence[dg.AssetKey], resource_key: str) -> dg.AssetChecksDefinition:
    """One check definition ``name`` with both checks on each of ``keys``."""
    specs = [
        dg.AssetCheckSpec(
            name=name,
            asset=key,
            blocking=False,
            description=f"srdp (advisory, evaluated by the hourly monitor): {text}",
        )
        for key in keys
        for name, text in (
            (INLINED_CHECK, "inlined rows at most the catalog's pressure_warning_rows"),
            (SMALL_FILES_CHECK, f"live files under the merge target at most {DEFAULT_SMALL_FILES_LIMIT}"),
        )
    ]

    @dg.multi_asset_check(
        name=name,
        specs=specs,
        can_subset=True,
        required_resource_keys={resource_key},
        description="srdp's advisory health checks of the lake's tables.",
    )
    def _checks(context: dg.AssetCheckExecutionContext) -> Iterable[dg.AssetCheckResult]:
        selected = context.selected_asset_check_keys
        catalogs = sorted({k.asset_key.path[0] for k in selected})
        found: dict[tuple[dg.AssetKey, str], dg.AssetCheckEvaluation] = {}
        problem = None
        try:
            resource = getattr(context.resources, resource_key)
            con = resource.connect(catalogs, role="reader")
            try:
                thresholds = {r["catalog"]: int(r["pressure_warning_rows"]) for r in srdp.call(con, "srdp_catalogs")}
                for h in read_health(con, catalogs):
                    for e in check_evaluations(h, thresholds[h.catalog], DEFAULT_SMALL_FILES_LIMIT):
                        found[(e.asset_key, e.check_name)] = e
            finally:
                con.close()
        except Exception as e:  # advisory: a read that fails passes with the reason
            problem = f"health not read (advisory, ignored): {e!r}"
            context.log.error(problem)
        for check_key in sorted(selected, key=lambda k: (k.asset_key.to_user_string(), k.name)):
            e = found.get((check_key.asset_key, check_key.name))
            if e is None:
                yield dg.AssetCheckResult(
                    asset_key=check_key.asset_key,
                    check_name=check_key.name,
                    passed=True,
                    severity=dg.AssetCheckSeverity.WARN,
                    description=problem or "the table does not exist in the lake yet",
                )
            else:
                yield dg.AssetCheckResult(
                    asset_key=e.asset_key,
                    check_name=e.check_name,
                    passed=e.passed,
                    severity=e.severity,
                    metadata=e.metadata,
                    description=e.description,
                )

    return _checks
