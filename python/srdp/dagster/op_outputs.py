"""Op outputs the IO manager stores: what each is called, which table it is, one table each.

dagster-duckdb names an op output's table ``<schema>.<output name>``, and srdp keeps that name,
so two ops whose default outputs (``result``) share a schema would share one table: the second
would silently replace the first's rows. srdp promises one table per data object instead:

* **when the code location loads** (``add_srdp_definitions(..., io_manager=True)``): two op
  outputs of the application's jobs, or an op output and an asset, that the IO manager would
  store in one table are refused (:func:`check_op_outputs`), so ``dagster definitions validate``
  fails, not the first run;
* **at write time**: an op output never writes a table whose last write by the IO manager came
  from another op output or from an asset (:func:`refuse_other_writer`; each IO-manager write's
  snapshot records its table and its ``op_output`` or ``asset_key`` in its extra info), and
  nothing is written.

Name each op output's table: ``dg.Out(metadata={"schema": "ops_out", "table": "orders_clean"})``,
or give the outputs distinct names (``out={"orders_clean": dg.Out(...)}``). The same op in two
jobs is one data object (one step name, one output name) and writes its one table from both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import duckdb

from srdp.dagster.tables import IOManagerError, resolve_table
from srdp.lake.names import TableRef

__all__ = ["OpOutput", "check_op_outputs", "job_op_outputs", "op_output_table", "refuse_other_writer"]

#: The ``[mapping key]`` a dynamic output adds to a step key: its steps are one op output.
_MAPPING_KEY = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True)
class OpOutput:
    """One output of one op node: the step (its node handle, ``graph.op``; None for a context
    built without one) and the output's name."""

    step: str | None
    name: str

    @property
    def label(self) -> str:
        """``step.output``: the op output's name in snapshots (extra info ``op_output``) and errors."""
        return f"{self.step}.{self.name}" if self.step else self.name

    @property
    def described(self) -> str:
        """``op output 'result' of step 'load'``, as refusals name it."""
        return f"op output {self.name!r}" + (f" of step {self.step!r}" if self.step else "")

    @classmethod
    def of_step(cls, step_key: str | None, name: str) -> OpOutput:
        """The op output of a step key (a dynamic step's ``[mapping key]`` left out)."""
        return cls(_MAPPING_KEY.sub("", step_key) if step_key else None, name)


def op_output_table(
    catalog: str, output: OpOutput, metadata: Mapping[str, Any], default_schema: str | None
) -> TableRef:
    """The table of an op output: ``<schema>.<table metadata or output name>`` (see
    :mod:`srdp.dagster.tables` for the schema)."""
    key = [str(metadata.get("table") or output.name)]
    return resolve_table(catalog, key, metadata, default_schema, op_output=output.described)


def job_op_outputs(jobs: Iterable[Any], io_manager_key: str) -> Iterator[tuple[OpOutput, dict[str, Any]]]:
    """Each op output of ``jobs`` (op jobs; asset jobs and asset nodes are left out) that the IO
    manager under ``io_manager_key`` stores, with its metadata, once each. A job that brings its
    own IO manager under that key is left out (the application's one does not store it)."""
    default = dg.GraphDefinition(name="srdp_default_io_manager_probe").to_job().resource_defs[io_manager_key] \
        if io_manager_key == "io_manager" else None
    seen: set[OpOutput] = set()
    for job in jobs:
        if not isinstance(job, dg.JobDefinition):
            continue  # an unresolved asset job: its nodes are assets, checked as assets
        own = job.resource_defs.get(io_manager_key)
        if own is not None and own is not default:
            continue
        for handle in job.graph.iterate_node_handles():
            node = job.graph.get_node(handle)
            if not isinstance(node.definition, dg.OpDefinition) or job.asset_layer.get_assets_def_for_node(handle):
                continue
            for out in node.definition.output_defs:
                output = OpOutput(str(handle), out.name)
                if out.io_manager_key != io_manager_key or out.dagster_type.is_nothing or output in seen:
                    continue
                seen.add(output)
                yield output, dict(out.metadata or {})


def check_op_outputs(
    where: str,
    catalog: str,
    outputs: Sequence[tuple[OpOutput, Mapping[str, Any]]],
    asset_tables: Mapping[TableRef, str],
    default_schema: str | None = None,
) -> dict[TableRef, OpOutput]:
    """The table of each op output; raises ValueError naming ``where`` when one does not resolve,
    or when two op outputs, or an op output and an asset (``asset_tables``: table -> asset key),
    resolve to one table."""
    tables: dict[TableRef, OpOutput] = {}
    for output, metadata in outputs:
        try:
            table = op_output_table(catalog, output, metadata, default_schema)
        except IOManagerError as error:
            raise ValueError(f"{where}(io_manager=True): {error}") from None
        other = tables.get(table)
        taken = f"{other.described}" if other is not None else (
            f"asset {asset_tables[table]!r}" if table in asset_tables else None
        )
        if taken is not None:
            raise ValueError(
                f"{where}(io_manager=True): {output.described} and {taken} would both be stored in "
                f"{table.name}; srdp keeps one table per data object. Name this output's table "
                f"(dg.Out(metadata={{'table': '{(output.step or 'op').split('.')[-1]}_{output.name}'}})) "
                "or give the outputs distinct names"
            )
        tables[table] = output
    return tables


def refuse_other_writer(con: duckdb.DuckDBPyConnection, table: TableRef, writer: str, output: OpOutput) -> None:
    """Refuses (IOManagerError) a write of ``output`` into ``table`` when the table's last write
    by ``writer`` (the IO manager) came from another op output or an asset. Runs inside the
    write's transaction, before it commits (an error rolls the write back)."""
    needle = json.dumps({"table_name": table.name})[1:-1]
    found = con.execute(
        "SELECT snapshot_id, commit_extra_info FROM ducklake_snapshots(?) "
        "WHERE author = ? AND contains(commit_extra_info, ?) ORDER BY snapshot_id DESC",
        [table.catalog, writer, needle],
    ).fetchall()
    for snapshot, extra in found:
        try:
            info = json.loads(extra)
        except (TypeError, ValueError):
            continue
        if info.get("table_name") != table.name:
            continue
        if info.get("op_output") == output.label:
            return
        other = f"op output {info['op_output']!r}" if info.get("op_output") else f"asset {info.get('asset_key')!r}"
        raise IOManagerError(
            f"{output.described} would replace {table.name}, last written by {other} (snapshot "
            f"{snapshot}); srdp keeps one table per data object, so nothing was written. Name this "
            "output's table (dg.Out(metadata={'table': ...})) or give the outputs distinct names"
        )
