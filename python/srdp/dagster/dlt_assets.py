"""Dagster assets over dagster-dlt that load through :mod:`srdp.ingest.dlt`, with srdp's lineage.

:func:`srdp_dlt_assets` builds dagster-dlt's assets (one per resource) plus one asset per child
table the resources declare (dlt ``nested_hints``: ``orders__items``): each materialization runs
the helper's one load sequence (:func:`srdp.ingest.dlt.destination.prepare_load`), and every asset
carries ``dagster/table_name`` = its physical table. :class:`SrdpDltTranslator` keys each asset
by that name's parts (``lake/raw/orders``, the key srdp's dbt translator gives the dbt source of
the same table) and drops the synthetic ``<source>_<resource>`` upstream dependency dagster-dlt
adds.
"""

# No `from __future__ import annotations`: Dagster reads the asset function's annotations as
# objects and refuses them as strings.

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, AssetSpec, MaterializeResult, multi_asset
from dagster_dlt import DagsterDltResource, DagsterDltTranslator, build_dlt_asset_specs
from dagster_dlt.translator import DltResourceTranslatorData
from dlt.common.schema.utils import get_nested_tables
from dlt.extract import DltResource, DltSource
from dlt.pipeline.pipeline import Pipeline

from srdp.dagster.lineage import TABLE_NAME_KEY, table_asset_key
from srdp.ingest.dlt.destination import DltDestination, prepare_load

__all__ = ["SrdpDltTranslator", "srdp_dlt_assets"]


@dataclass
class SrdpDltTranslator(DagsterDltTranslator):
    """dagster-dlt's translator with srdp's lineage: ``dagster/table_name`` is the physical table
    (``lake.raw.events``, from ``srdp_table_name``), the key is that name's parts
    (``lake/raw/events``) and the synthetic ``<source>_<resource>`` upstream dependency
    dagster-dlt adds is gone. With ``keys_from_table_names=False`` the keys stay dagster-dlt's
    (``dlt_<source>_<resource>``); a dbt source still joins them by table name. Subclass it for
    groups and the like."""

    table_names: Mapping[str, str] = field(default_factory=dict)
    """Physical table by dlt resource name."""
    keys_from_table_names: bool = True
    """Key each asset by its physical name's parts (else dagster-dlt's key)."""

    def get_asset_spec(self, data: DltResourceTranslatorData) -> AssetSpec:
        spec = super().get_asset_spec(data)
        synthetic = set(self._default_deps_fn(data.resource))
        metadata = dict(spec.metadata)
        name = self.table_names.get(data.resource.name)
        if name is not None:
            metadata[TABLE_NAME_KEY] = name
        key = table_asset_key(name) if name is not None and self.keys_from_table_names else spec.key
        return spec.replace_attributes(
            key=key,
            deps=[dep for dep in spec.deps if dep.asset_key not in synthetic],
            metadata=metadata,
        )

    def get_child_asset_spec(self, parent: AssetSpec, table_name: str, child_table: str) -> AssetSpec:
        """The asset of a child table (``orders__items``) that ``parent``'s resource loads."""
        key = (
            table_asset_key(table_name)
            if self.keys_from_table_names
            else AssetKey([*parent.key.path[:-1], f"{parent.key.path[-1]}__{child_table}"])
        )
        return AssetSpec(
            key=key,
            metadata={TABLE_NAME_KEY: table_name, "srdp/parent_table": parent.metadata[TABLE_NAME_KEY]},
            kinds=set(parent.kinds),
            group_name=parent.group_name,
            description=f"Child table {table_name}, loaded with {parent.metadata[TABLE_NAME_KEY]}.",
            skippable=True,
        )


def srdp_dlt_assets(
    *,
    dlt_source: DltSource,
    destination: DltDestination,
    dlt_pipeline: Pipeline | None = None,
    pipeline_name: str | None = None,
    name: str | None = None,
    group_name: str | None = None,
    dagster_dlt_translator: SrdpDltTranslator | None = None,
    **multi_asset_kwargs: Any,
) -> AssetsDefinition:
    """Dagster assets for ``dlt_source`` loading into ``destination``, built like dagster-dlt's
    ``@dlt_assets`` (needs the resource ``dlt=DagsterDltResource()``), plus one asset per child
    table a resource declares with dlt's ``nested_hints`` (a child table is loaded with its
    parent: selecting it alone is an error that says so).

    The pipeline is ``destination.pipeline(pipeline_name or "<source>_<dataset>")`` unless
    ``dlt_pipeline`` is given (it must load into ``destination``); the op is ``name`` or
    ``dlt_<source>_<dataset>``. Each materialization asks srdp again, checks the writer, applies
    the rules to the selected resources (refusing before any load), logs one
    ``context.log.warning`` per relaxed rule, and reports ``dagster/table_name`` as the physical
    table (dagster-dlt alone would report ``<destination>.<dlt schema>.<table>``).
    Other keyword arguments (``partitions_def``, ``op_tags``, ``pool``, ...) go to ``multi_asset``.
    """
    default_name = f"{dlt_source.name}_{destination.dataset_name}"
    dlt_pipeline = dlt_pipeline or destination.pipeline(pipeline_name or default_name)
    destination.check_pipeline(dlt_pipeline)
    translator = dagster_dlt_translator or SrdpDltTranslator()
    tables, children = _tables(dlt_source)
    physical = destination.table_names([*tables.values(), *(c for cs in children.values() for c, _ in cs)])
    translator.table_names = {resource: physical[table] for resource, table in tables.items()}
    specs = list(build_dlt_asset_specs(dlt_source, dlt_pipeline, translator))
    resources_by_key = {
        translator.get_asset_spec(DltResourceTranslatorData(resource=r, pipeline=dlt_pipeline)).key: r
        for r in dlt_source.selected_resources.values()
    }
    spec_by_resource = {r.name: spec for spec, r in zip(specs, dlt_source.selected_resources.values(), strict=True)}
    tables_by_key = {spec.key: spec.metadata[TABLE_NAME_KEY] for spec in specs}
    children_by_key: dict[AssetKey, list[AssetKey]] = {}
    for resource, nested in children.items():
        parent = spec_by_resource[resource]
        for child_table, suffix in nested:
            child = translator.get_child_asset_spec(parent, physical[child_table], suffix)
            specs.append(child)
            tables_by_key[child.key] = physical[child_table]
            children_by_key.setdefault(parent.key, []).append(child.key)
    if group_name and any(spec.group_name for spec in specs):
        raise ValueError(
            f"group_name={group_name!r} given, but the translator already sets groups on the assets "
            f"of source {dlt_source.name!r}: set the group in one place"
        )

    @multi_asset(
        specs=specs,
        name=name or f"dlt_{default_name}",
        group_name=group_name,
        can_subset=True,
        **multi_asset_kwargs,
    )
    def _srdp_dlt_assets(context: AssetExecutionContext, dlt: DagsterDltResource) -> Iterator[MaterializeResult]:
        chosen = context.selected_asset_keys
        orphans = [
            (child, parent)
            for parent, kids in children_by_key.items()
            for child in kids
            if child in chosen and parent not in chosen
        ]
        if orphans:
            raise ValueError(
                "dlt loads a child table only with its parent: select "
                + ", ".join(f"{parent.to_user_string()} with {child.to_user_string()}" for child, parent in orphans)
            )
        selected = [r for key, r in resources_by_key.items() if key in chosen]
        load = prepare_load(destination, dlt_pipeline, selected, {}, log=context.log)
        # A fresh copy each run: re-running the very DltSource object in one process (in-process
        # executor, tests) fails in extract with `KeyError: 'name'` on dlt 1.31.0 once
        # dagster-dlt has dropped the pipeline's local state.
        events = load.stream(
            lambda: dlt.run(
                context=context,
                dlt_source=dlt_source.clone(),
                dlt_pipeline=dlt_pipeline,
                dagster_dlt_translator=translator,
                **load.arguments,
            )
        )
        for event in events:
            yield _with_table_name(event, tables_by_key)
            key = getattr(event, "asset_key", None)
            for child in children_by_key.get(key, []) if key is not None else []:
                if child in chosen:
                    yield MaterializeResult(asset_key=child, metadata=_child_metadata(dlt_pipeline, tables_by_key[child]))
        for resource in selected:
            undeclared = _undeclared_children(dlt_pipeline, tables[resource.name], children.get(resource.name, []))
            if undeclared:
                context.log.warning(
                    f"dlt loaded child table(s) {', '.join(undeclared)} of resource {resource.name!r} "
                    "that are not assets: declare them on the resource with "
                    "nested_hints={'<field>': dlt.mark.make_nested_hints(columns=[])} to put them in the graph"
                )

    return _srdp_dlt_assets


def _tables(source: DltSource) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]]]:
    """Table by resource name, and each resource's declared child tables as (table, suffix),
    normalized the way dlt names them."""
    naming = source.schema.naming
    tables: dict[str, str] = {}
    children: dict[str, list[tuple[str, str]]] = {}
    for resource in source.selected_resources.values():
        table = naming.normalize_table_identifier(
            resource.table_name if isinstance(resource.table_name, str) else resource.name
        )
        tables[resource.name] = table
        nested = _nested_tables(resource, table, naming)
        if nested:
            children[resource.name] = [(child, child[len(table) + 2 :]) for child in nested]
    return tables, children


def _nested_tables(resource: DltResource, table: str, naming: Any) -> list[str]:
    """Child tables declared by ``nested_hints`` (dlt computes their names from the parent's)."""
    if not getattr(resource, "nested_hints", None):
        return []
    return [str(schema["name"]) for schema in resource.compute_nested_table_schemas(table, naming)]


def _undeclared_children(pipeline: Pipeline, table: str, declared: list[tuple[str, str]]) -> list[str]:
    """Child tables of ``table`` in the pipeline's schema that no asset stands for."""
    known = {child for child, _ in declared}
    if pipeline.default_schema_name is None:
        return []  # nothing loaded yet
    tables = pipeline.default_schema.tables
    nested = get_nested_tables(tables, table, include_self=False) if table in tables else []
    return sorted(str(t["name"]) for t in nested if t["name"] not in known)


def _child_metadata(pipeline: Pipeline, table_name: str) -> dict[str, Any]:
    """A child table's materialization: its physical name and the rows dlt normalized into it."""
    metadata: dict[str, Any] = {TABLE_NAME_KEY: table_name}
    trace = pipeline.last_trace
    info = trace.last_normalize_info if trace is not None else None
    counts = info.row_counts if info is not None else {}
    table = table_name.rsplit(".", 1)[-1]
    if table in counts:
        metadata["rows_loaded"] = int(counts[table])
    return metadata


def _with_table_name(event: Any, tables_by_key: Mapping[AssetKey, str]) -> Any:
    """dagster-dlt's materialization with ``dagster/table_name`` set to the physical table."""
    key = event.asset_key if isinstance(event, MaterializeResult) else None
    if key is not None and key in tables_by_key:
        metadata = {**(event.metadata or {}), TABLE_NAME_KEY: tables_by_key[key]}
        return MaterializeResult(asset_key=key, metadata=metadata)
    return event
