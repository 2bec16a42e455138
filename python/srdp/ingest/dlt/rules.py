"""srdp's rules applied to dlt's arguments: what ``pipeline.run`` may be called with, or a refusal.

srdp decides the rules (``srdp_dlt_destination`` returns the write disposition and schema
contract a dataset takes, ``None`` when unconstrained); this module only holds dlt's own
arguments and resources against that answer, before anything is loaded, and refuses the
arguments srdp.toml decides (``destination``, ``dataset_name``, ``staging``).

``raw_validated`` is enforced by dlt itself, during the load (its schema contract, data types
frozen): :func:`validation_failure` turns dlt's contract error into one that names the rule, the
column and both types, the pending load package and the line that relaxes the rule.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dlt.common.schema.exceptions import DataValidationError
from dlt.extract import DltResource, DltSource
from dlt.pipeline.exceptions import PipelineStepFailed
from dlt.pipeline.pipeline import Pipeline

from srdp.ingest.dlt.errors import SrdpDltError, SrdpDltValidationError

from srdp.ingest.dlt.target import DltTarget

__all__ = ["load_arguments", "refuse_overrides", "resources_of", "validation_failure"]

#: Arguments of dlt.pipeline and pipeline.run that srdp.toml decides.
_DDL_KWARGS = ("destination", "dataset_name", "staging")


def refuse_overrides(kwargs: Mapping[str, Any], where: str) -> None:
    """Refuses ``destination=``, ``dataset_name=`` and ``staging=`` (srdp.toml decides them)."""
    for key in _DDL_KWARGS:
        if kwargs.get(key) is not None:
            raise SrdpDltError(f"srdp.ingest.dlt: {where} takes no {key}=: srdp.toml decides it")


def load_arguments(
    target: DltTarget, resources: Iterable[DltResource], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of ``pipeline.run`` under the rules, or :class:`SrdpDltError`.

    ``resources`` are the dlt resources about to load: their own ``write_disposition`` must be
    the one srdp imposes (``append`` while ``raw_append_only`` is on), unless
    ``write_disposition`` is given in ``kwargs``.

    With ``raw_validated`` relaxed, a raw load runs with ``data_type`` ``evolve`` (unless
    ``kwargs`` sets it): dlt keeps the contract of earlier loads in the table's schema, so
    without it a table created while the rule was on would stay frozen.
    """
    refuse_overrides(kwargs, "run()")
    arguments = dict(kwargs)
    if target.write_disposition is not None:
        if "write_disposition" in arguments:
            value = arguments["write_disposition"]
            requested = {f"run() is given write_disposition={value!r}": value}
        else:
            requested = {
                f"resource '{r.name}' has write_disposition {_disposition(r.write_disposition)!r}": r.write_disposition
                for r in resources
            }
        for who, value in requested.items():
            if _disposition(value) != target.write_disposition:
                raise SrdpDltError(_refusal(
                    target,
                    "raw_append_only",
                    f"{who}, and {target.dataset_name} takes {target.write_disposition!r} only",
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
    elif target.layer == "raw":
        given = _contract(arguments.get("schema_contract"))
        arguments["schema_contract"] = {"data_type": "evolve", **given}
    return arguments


def validation_failure(
    target: DltTarget, pipeline: Pipeline, error: BaseException, *, retried_by_next_run: bool
) -> SrdpDltValidationError | None:
    """:class:`SrdpDltValidationError` when ``error`` is dlt refusing a type change under
    ``raw_validated`` (a ``data_type`` ``freeze`` violation while the rule is on), else ``None``.

    A value of another type fails dlt's normalize step: nothing is loaded, and the extracted
    package stays pending in the pipeline's working folder (a column hint that changes the type
    fails the extract step instead, which leaves nothing pending). ``retried_by_next_run`` says
    what happens to a pending package next: the next ``pipeline.run`` normalizes it again before
    anything else (and fails the same way, without extracting the data it is given), while
    dagster-dlt's ``DagsterDltResource.run`` drops pending packages before every run.
    """
    if not target.schema_contract or target.schema_contract.get("data_type") != "freeze":
        return None
    violation = next((e for e in _causes(error) if isinstance(e, DataValidationError)), None)
    if violation is None or (violation.schema_entity, violation.contract_mode) != ("data_type", "freeze"):
        return None
    step = next((e for e in _causes(error) if isinstance(e, PipelineStepFailed)), None)
    table = f"{target.attach_name}.{target.dataset_name}.{violation.table_name}"
    column, table_type, incoming, variant = _type_change(violation)
    package = f"load package {step.load_id}" if step is not None and step.load_id else "the load package"
    what = (
        f"rule raw_validated stopped {package} into {target.catalog}.{target.dataset_name}: column "
        f"{column} of {table} is {table_type}, and this load brings {incoming}"
        + (f" (dlt would add the variant column {variant})" if variant else "")
        + "; nothing was loaded"
    )
    relax = f"relax the rule with {target.relax_with['raw_validated']} (every load then logs a warning)"
    if step is not None and step.step == "extract":  # a column hint changed the type: nothing kept
        then = (
            "dlt refused it while extracting, so no package is left pending and the next run "
            f"extracts anew: either load {column} as {table_type}, or {relax}"
        )
    elif retried_by_next_run:
        then = (
            f"The package stays pending in {pipeline.working_dir}: every run of pipeline "
            f"{pipeline.pipeline_name!r} tries it again first and fails the same way, without "
            "extracting the data it is given, even once the rule is relaxed. Drop it with "
            f"pipeline.abort_packages(), then either load {column} as {table_type}, or {relax}"
        )
    else:
        then = (
            f"dagster-dlt drops the package pending in {pipeline.working_dir} before the next "
            f"materialization, which extracts anew: either load {column} as {table_type}, or {relax}"
        )
    return SrdpDltValidationError(f"srdp.ingest.dlt: {what}. {then}")


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


def _refusal(target: DltTarget, rule: str, what: str, instead: str) -> str:
    return (
        f"srdp.ingest.dlt: rule {rule} refuses this load into {target.catalog}.{target.dataset_name}: "
        f"{what}. Either {instead}, or relax the rule with {target.relax_with[rule]} (every load "
        "then logs a warning)"
    )


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what it wraps: dlt's step failure (``.exception``), causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "exception", None)
        current = wrapped if isinstance(wrapped, BaseException) else current.__cause__ or current.__context__


#: dlt names a variant column ``<column>__v_<type>`` (snake_case naming: ``amount__v_text``).
_VARIANT = re.compile(r"^(?P<column>.+)__v_(?P<type>[a-z]+)$")


def _type_change(violation: DataValidationError) -> tuple[str, str, str, str | None]:
    """(column, the table's type, the incoming type, the variant column dlt would add or None)."""
    columns: Mapping[str, Any] = (violation.table_schema or {}).get("columns", {})
    name = violation.column_name
    match = _VARIANT.match(name)
    if match and match["column"] in columns:  # a value of another type: dlt's variant column
        column = match["column"]
        return column, str(columns[column].get("data_type", "untyped")), match["type"], name
    # A column hint that changes the type: dlt's text ends with "Incoming column: {...}."
    incoming = "another type"
    found = re.search(r"Incoming column: (\{[^{}]*\})", str(violation))
    if found:
        try:
            incoming = str(ast.literal_eval(found[1]).get("data_type", incoming))
        except (ValueError, SyntaxError, AttributeError):
            pass
    return name, str(columns.get(name, {}).get("data_type", "untyped")), incoming, None
