"""Dagster assets over dagster-dlt that load through :mod:`srdp.ingest.dlt`, with srdp's lineage.

:func:`srdp_dlt_assets` wraps dagster-dlt's ``@dlt_assets``: each materialization runs the
helper's one load sequence (:func:`srdp.ingest.dlt.load.prepare_load`), and reports
``dagster/table_name`` as the physical table; :class:`SrdpDltTranslator` also drops the
synthetic ``<source>_<resource>`` upstream dependency dagster-dlt adds.
"""

# No `from __future__ import annotations`: Dagster reads the asset function's annotations as
# objects and refuses them as strings.

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, AssetSpec, MaterializeResult
from dagster_dlt import DagsterDltResource, DagsterDltTranslator, dlt_assets
from dagster_dlt.translator import DltResourceTranslatorData
from dlt.extract import DltSource
from dlt.pipeline.pipeline import Pipeline

from srdp.ingest.dlt.destination import DltDestination
from srdp.ingest.dlt.load import prepare_load

__all__ = ["SrdpDltTranslator", "srdp_dlt_assets"]


@dataclass
class SrdpDltTranslator(DagsterDltTranslator):
    """dagster-dlt's translator with srdp's lineage: ``dagster/table_name`` is the physical table
    (``lake.raw.events``, from ``srdp_table_name``) and the synthetic ``<source>_<resource>``
    upstream dependency dagster-dlt adds is gone. Subclass it for keys, groups and the like."""

    table_names: Mapping[str, str] = field(default_factory=dict)
    """Physical table by dlt resource name."""

    def get_asset_spec(self, data: DltResourceTranslatorData) -> AssetSpec:
        spec = super().get_asset_spec(data)
        synthetic = set(self._default_deps_fn(data.resource))
        metadata = dict(spec.metadata)
        if data.resource.name in self.table_names:
            metadata["dagster/table_name"] = self.table_names[data.resource.name]
        return spec.replace_attributes(
            deps=[dep for dep in spec.deps if dep.asset_key not in synthetic],
            metadata=metadata,
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
    **dlt_assets_kwargs: Any,
) -> AssetsDefinition:
    """Dagster assets for ``dlt_source`` loading into ``destination``, over dagster-dlt's
    ``@dlt_assets`` (needs the resource ``dlt=DagsterDltResource()``).

    The pipeline is ``destination.pipeline(pipeline_name or "<source>_<dataset>")`` unless
    ``dlt_pipeline`` is given (it must load into ``destination``); the op is ``name`` or
    ``dlt_<source>_<dataset>``. Each materialization asks srdp again, checks the writer, applies
    the rules to the selected resources (refusing before any load), logs one
    ``context.log.warning`` per relaxed rule, and reports ``dagster/table_name`` as the physical
    table (dagster-dlt alone would report ``<destination>.<dlt schema>.<table>``).
    """
    default_name = f"{dlt_source.name}_{destination.dataset_name}"
    dlt_pipeline = dlt_pipeline or destination.pipeline(pipeline_name or default_name)
    destination.check_pipeline(dlt_pipeline)
    translator = dagster_dlt_translator or SrdpDltTranslator()
    translator.table_names = _table_names(destination, dlt_source)
    resources_by_key = {
        translator.get_asset_spec(DltResourceTranslatorData(resource=r, pipeline=dlt_pipeline)).key: r
        for r in dlt_source.selected_resources.values()
    }
    tables_by_key = {key: translator.table_names[r.name] for key, r in resources_by_key.items()}

    @dlt_assets(
        dlt_source=dlt_source,
        dlt_pipeline=dlt_pipeline,
        name=name or f"dlt_{default_name}",
        group_name=group_name,
        dagster_dlt_translator=translator,
        **dlt_assets_kwargs,
    )
    def _srdp_dlt_assets(context: AssetExecutionContext, dlt: DagsterDltResource) -> Iterator[MaterializeResult]:
        selected = [r for key, r in resources_by_key.items() if key in context.selected_asset_keys]
        load = prepare_load(destination, dlt_pipeline, selected, {}, log=context.log)
        # A fresh copy each run: re-running the very DltSource object in one process (in-process
        # executor, tests) fails in extract with `KeyError: 'name'` on dlt 1.31.0 once
        # dagster-dlt has dropped the pipeline's local state.
        events = load.stream(lambda: dlt.run(context=context, dlt_source=dlt_source.clone(), **load.arguments))
        for event in events:
            yield _with_table_name(event, tables_by_key)

    return _srdp_dlt_assets


def _table_names(target: DltDestination, source: DltSource) -> dict[str, str]:
    """Physical table by resource name, normalized the way dlt names the table."""
    naming = source.schema.naming
    tables = {
        resource.name: naming.normalize_table_identifier(
            resource.table_name if isinstance(resource.table_name, str) else resource.name
        )
        for resource in source.selected_resources.values()
    }
    physical = target.table_names(tables.values())
    return {resource: physical[table] for resource, table in tables.items()}


def _with_table_name(event: Any, tables_by_key: Mapping[AssetKey, str]) -> Any:
    """dagster-dlt's materialization with ``dagster/table_name`` set to the physical table."""
    key = event.asset_key if isinstance(event, MaterializeResult) else None
    if key is not None and key in tables_by_key:
        metadata = {**(event.metadata or {}), "dagster/table_name": tables_by_key[key]}
        return MaterializeResult(asset_key=key, metadata=metadata)
    return event
