"""srdp's rules applied to dlt's arguments: what ``pipeline.run`` may be called with, or a refusal.

srdp decides the rules (``srdp_dlt_destination`` returns the write disposition and schema
contract a dataset takes, ``None`` when unconstrained); this module only holds dlt's own
arguments and resources against that answer, before anything is loaded, and refuses the
arguments srdp.toml decides (``destination``, ``dataset_name``, ``staging``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from dlt.extract import DltResource, DltSource

from srdp.ingest.dlt.errors import SrdpDltError

if TYPE_CHECKING:
    from srdp.ingest.dlt.destination import DltDestination

__all__ = ["load_arguments", "refuse_overrides", "resources_of"]

#: Arguments of dlt.pipeline and pipeline.run that srdp.toml decides.
_DDL_KWARGS = ("destination", "dataset_name", "staging")


def refuse_overrides(kwargs: Mapping[str, Any], where: str) -> None:
    """Refuses ``destination=``, ``dataset_name=`` and ``staging=`` (srdp.toml decides them)."""
    for key in _DDL_KWARGS:
        if kwargs.get(key) is not None:
            raise SrdpDltError(f"srdp.ingest.dlt: {where} takes no {key}=: srdp.toml decides it")


def load_arguments(
    target: DltDestination, resources: Iterable[DltResource], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of ``pipeline.run`` under the rules, or :class:`SrdpDltError`.

    ``resources`` are the dlt resources about to load: their own ``write_disposition`` must be
    the one srdp imposes (``append`` while ``raw_append_only`` is on), unless
    ``write_disposition`` is given in ``kwargs``.
    """
    refuse_overrides(kwargs, "run()")
    arguments = dict(kwargs)
    if target.write_disposition is not None:
        if "write_disposition" in arguments:
            requested = {"the write_disposition argument": arguments["write_disposition"]}
        else:
            requested = {f"resource '{r.name}'": r.write_disposition for r in resources}
        for who, value in requested.items():
            if _disposition(value) != target.write_disposition:
                raise SrdpDltError(_refusal(
                    target,
                    "raw_append_only",
                    f"{who} has write_disposition {_disposition(value)!r}, and "
                    f"{target.dataset_name} takes {target.write_disposition!r} only",
                    f"load with write_disposition={target.write_disposition!r}",
                ))
        arguments["write_disposition"] = target.write_disposition
    if target.schema_contract is not None:
        given = _contract(arguments.get("schema_contract"))
        for key, mode in target.schema_contract.items():
            if given.get(key, mode) != mode:
                raise SrdpDltError(_refusal(
                    target,
                    "raw_validated",
                    f"the schema_contract argument sets {key} to {given[key]!r}, and "
                    f"{target.dataset_name} needs {key} {mode!r}",
                    f"leave {key} out of schema_contract",
                ))
        arguments["schema_contract"] = {**given, **target.schema_contract}
    return arguments


def resources_of(data: Any) -> list[DltResource]:
    """The dlt resources in ``data`` (a source, a resource, or a list of them); plain data has none."""
    if isinstance(data, DltSource):
        return list(data.selected_resources.values())
    if isinstance(data, DltResource):
        return [data]
    if isinstance(data, (list, tuple)) and any(isinstance(d, (DltSource, DltResource)) for d in data):
        return [r for d in data for r in resources_of(d)]
    return []


def _disposition(value: Any) -> str:
    """``'replace'`` for ``'replace'`` and ``{'disposition': 'replace', ...}``."""
    if isinstance(value, Mapping):
        return str(value.get("disposition", "append"))
    return str(value) if isinstance(value, str) else f"<dynamic {value!r}>"


def _contract(value: Any) -> dict[str, str]:
    """A dlt schema contract as a dict (``'freeze'`` means freeze for tables, columns, data_type)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {"tables": value, "columns": value, "data_type": value}
    return dict(value)


def _refusal(target: DltDestination, rule: str, what: str, instead: str) -> str:
    return (
        f"srdp.ingest.dlt: rule {rule} refuses this load into {target.catalog}.{target.dataset_name}: "
        f"{what}. Either {instead}, or relax the rule with {target.relax_with[rule]} (every load "
        "then logs a warning)"
    )
