"""dagster-dbt with srdp's lineage: dbt models and sources keyed and named by their physical table.

:class:`SrdpDbtTranslator` gives every dbt model, seed, snapshot and source that lives in an srdp
catalog ``dagster/table_name = <catalog>.<schema>.<table>`` (from ``srdp_table_name``; a source's
table is its ``identifier``) and the asset key of that name's parts, so a source of
``lake.raw.orders`` is the dlt asset that loads it (:mod:`srdp.dagster.dlt_assets`) and a model's
key is what an IO manager asset names as its input (:func:`srdp.dagster.lineage.srdp_table`).
A key set in dbt (``meta: {dagster: {asset_key: [...]}}``) wins; a node outside srdp's catalogs
keeps dagster-dbt's key and name. Source dependencies carry their table name as dependency
metadata, so a source still joins an upstream asset whose key was set by hand.

>>> @dbt_assets(manifest=manifest, dagster_dbt_translator=SrdpDbtTranslator(config="srdp.toml"))
... def shop_dbt(context, dbt: DbtCliResource):
...     yield from dbt.cli(["build"], context=context).stream()
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings
from dagster_dbt.dbt_project import DbtProject

from srdp.dagster.lineage import TABLE_NAME_KEY, Triple, defined_catalogs, explicit_key, physical_table_names, table_asset_key

__all__ = ["SrdpDbtTranslator"]

#: dbt resource types that are tables (or views) in the database.
_RELATIONS = ("model", "seed", "snapshot", "source")


class SrdpDbtTranslator(DagsterDbtTranslator):
    """dagster-dbt's translator keyed by srdp's physical names (see the module doc).

    ``config`` is the ``srdp.toml`` whose catalogs count as the lake (default: ``$SRDP_CONFIG``
    or ``./srdp.toml``, as srdp resolves it). Subclass it for groups, descriptions and the like.
    """

    def __init__(
        self,
        config: str | os.PathLike[str] | None = None,
        settings: DagsterDbtTranslatorSettings | None = None,
    ) -> None:
        super().__init__(settings or DagsterDbtTranslatorSettings(enable_source_metadata=True))
        self._config = config
        self._catalogs: frozenset[str] | None = None
        self._names: dict[Triple, str] = {}
        self._manifests: set[int] = set()

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None) -> dg.AssetSpec:
        if id(manifest) not in self._manifests:
            self._learn(manifest)
        return super().get_asset_spec(manifest, unique_id, project)

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        configured = explicit_key(_meta(dbt_resource_props))
        if configured is not None:
            return configured
        name = self.table_name(dbt_resource_props)
        return table_asset_key(name) if name is not None else super().get_asset_key(dbt_resource_props)

    def get_metadata(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = dict(super().get_metadata(dbt_resource_props))
        name = self.table_name(dbt_resource_props)
        if name is not None:
            metadata[TABLE_NAME_KEY] = name
        return metadata

    def table_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        """The node's physical name, or None when it is not a relation in an srdp catalog."""
        triple = _triple(dbt_resource_props)
        return self._names.get(triple) if triple is not None else None

    def _learn(self, manifest: Mapping[str, Any]) -> None:
        """Asks srdp once for the physical name of every relation of ``manifest`` in its catalogs."""
        if self._catalogs is None:
            self._catalogs = defined_catalogs(self._config)
        nodes = [*manifest.get("nodes", {}).values(), *manifest.get("sources", {}).values()]
        triples = [t for t in map(_triple, nodes) if t is not None and t[0] in self._catalogs]
        self._names.update(physical_table_names(self._config, [t for t in triples if t not in self._names]))
        self._manifests.add(id(manifest))


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return (props.get("config") or {}).get("meta") or props.get("meta") or {}


def _triple(props: Mapping[str, Any]) -> Triple | None:
    """(database, schema, table) of a relation node; a source's table is its identifier."""
    if props.get("resource_type") not in _RELATIONS:
        return None
    table = props.get("identifier") if props["resource_type"] == "source" else props.get("alias")
    table = table or props.get("name")
    database, schema = props.get("database"), props.get("schema")
    if not (database and schema and table):
        return None
    return (str(database), str(schema), str(table))
