"""``SrdpIOManager``: every Dagster asset that is not a dlt load or a dbt model writes and reads
DuckLake through srdp.

    dg.Definitions(assets=[...], resources={"io_manager": SrdpIOManager(config="srdp.toml")})

* **Attach through srdp**: writes attach ``srdp_attach_catalog(catalog, role := 'writer')``,
  reads the reader role (a DuckDB-file catalog: the writer role from the first read, so that an
  input can stream into an output); one connection per process, reused.
* **Which table**: ``dagster/table_name`` metadata, else metadata ``schema``, else the asset
  key's prefix, else the ``schema`` setting (see :mod:`srdp.dagster.tables`); an ``@op`` output is
  ``<schema>.<output name>`` (or its ``table`` metadata), as in dagster-duckdb, and never
  replaces a table another op output or an asset wrote last (:mod:`srdp.dagster.op_outputs`).
* **Who may write**: ``srdp_check_writer(catalog, schema, writer)`` before any data moves.
* **Write modes**, each one DuckLake transaction: ``replace`` (default outside raw; the table
  keeps its identity and history), ``append`` (the default and only mode in a ``raw`` schema
  while ``raw_append_only`` is on), and for partitioned assets the replacement of exactly the
  materialized partitions (``partition_expr`` metadata: one SQL expression over the table's
  columns, checked with DuckDB's parser before anything is written or read). Set per asset with
  metadata ``write_mode``; an empty output replaces with zero rows. In raw, while
  ``raw_append_only`` is on, ``drop_missing_columns`` is refused before writing.
* **Audit**: each write's snapshot carries author (the writer), a message with the run id,
  asset key and partitions, and JSON extra info; the materialization carries
  ``dagster/table_name``, ``dagster/row_count`` (or ``dagster/partition_row_count``),
  ``dagster/column_schema`` and ``srdp/snapshot_id``. Inputs read the upstream table
  ``AT (VERSION => <snapshot_id>)`` of the upstream materialization they depend on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import dagster as dg
from pydantic import Field

from srdp.dagster.config_parameter import SrdpConfigFile
from srdp.dagster.op_outputs import OpOutput, refuse_other_writer
from srdp.dagster.pins import SNAPSHOT_KEY, PinLookup, PinRequest, pin_given, pin_request, pinned_snapshot
from srdp.dagster.secret_hint import with_secrets_hint
from srdp.dagster.launch_config import refuse_launch_changes, secret_variables
from srdp.dagster.resource import check_secret_statements
from srdp.dagster.tables import PARTITION_EXPR_KEY, IOManagerError, resolve_table
from srdp.lake import frames as handlers
from srdp.lake.names import TableRef
from srdp.lake.session import LakeSession, WritePlan, WriteResult
from srdp.lake.slices import Slice, check_partition_expr, slice_condition

__all__ = ["SNAPSHOT_KEY", "IOManagerError", "SrdpIOManager"]

WRITE_MODES = ("replace", "append")


class SrdpIOManager(dg.ConfigurableIOManager, SrdpConfigFile):
    """Stores asset outputs in DuckLake tables through srdp (see the module doc)."""

    catalog: str = "lake"
    writer: str = "io_manager"
    schema_: str | None = Field(default=None, alias="schema")
    pin_inputs: bool = True
    #: CREATE SECRET statements run on the session's connection before it attaches (PostgreSQL
    #: role secrets, S3 credentials). Pass each with ``dg.EnvVar`` so that the run config shows
    #: the variable's name only; srdp never logs them or puts them in an error.
    secrets: list[str] = Field(default_factory=list)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Before anything attaches: refuses a run config that changes a field the code location
        gave (the srdp.toml path, catalog, writer, secrets: :mod:`srdp.dagster.launch_config`),
        and a ``secrets`` entry that is not one temporary CREATE SECRET (named by its variable)."""
        refuse_launch_changes(self, context)
        check_secret_statements(type(self).__name__, self.secrets, secret_variables(context))

    # --- writes -------------------------------------------------------------------------
    @with_secrets_hint
    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None and context.dagster_type.is_nothing:
            return
        key, kind, label = _output_key(context)
        op_output = None if context.has_asset_key else _op_output(context)
        table = self._table(key, context.definition_metadata or {}, op_output)
        session = LakeSession.get(self.config, self.catalog, self.secrets)
        owner = session.call("srdp_check_writer", self.catalog, table.schema, self.writer)[0]
        if owner.get("warning"):
            context.log.warning(owner["warning"])
        rules = {r["rule"]: r for r in session.call("srdp_rules", self.catalog)}
        raw = owner["layer"] == "raw"
        mode = self._mode(context.definition_metadata or {}, raw, rules, table)
        self._check_column_drop(context.definition_metadata or {}, raw, rules, table)
        part = self._slice(context, session=session) if context.has_asset_partitions else Slice()
        source = handlers.source_of(obj)  # refuses unsupported types before anything is written
        first = [source]

        def data() -> handlers.Source:
            return first.pop() if first else handlers.source_of(obj)

        plan = WritePlan(
            table=table,
            mode=mode,
            slice=part,
            writer=self.writer,
            message=f"dagster run {context.run_id} {kind} {label} ({part.description})",
            extra={
                "run_id": context.run_id,
                "asset_key" if context.has_asset_key else "op_output": label,
                "table_name": table.name,
                "partitions": list(context.asset_partition_keys) if context.has_asset_partitions else None,
                "mode": mode,
            },
            raw_validated=rules["raw_validated"]["relax_with"] if raw and rules["raw_validated"]["enabled"] else None,
            drop_missing_columns=bool((context.definition_metadata or {}).get("drop_missing_columns", False)),
            partition_slices=self._partition_slices(context),
        )
        if op_output is None:
            result = session.write(plan, data)
        else:  # one table per op output: refused in the write's transaction (nothing written)
            guard = lambda con, _results: refuse_other_writer(con, table, self.writer, op_output)  # noqa: E731
            result = session.write_many([(plan, data)], before_commit=guard)[0]
        metadata = self._metadata(table, plan, result, context.has_asset_partitions)
        if result.rows_by_partition:
            # Several partitions (a range): each partition's materialization gets its own count,
            # through the step (a context from build_output_context has none: no materializations).
            step = _step_context(context)
            for key, rows in result.rows_by_partition.items() if step is not None else ():
                step.add_asset_metadata(
                    {"dagster/partition_row_count": rows}, asset_key=context.asset_key, partition_key=key
                )
            metadata["srdp/rows_in_slice"] = metadata.pop("dagster/partition_row_count")
        context.add_output_metadata(metadata)
        context.log.info(
            f"{table.name}: {mode} of {part.description}, {result.rows_written} rows written in "
            f"snapshot {result.snapshot_id} ({result.attempts} attempt(s))"
        )

    def _table(self, key: Sequence[str], metadata: Mapping[str, Any], op_output: OpOutput | None = None) -> TableRef:
        return resolve_table(self.catalog, key, metadata, self.schema_, op_output.described if op_output else None)

    def _mode(self, metadata: Mapping[str, Any], raw: bool, rules: Mapping[str, Any], table: TableRef) -> str:
        append_only = raw and bool(rules["raw_append_only"]["enabled"])
        mode = str(metadata.get("write_mode") or ("append" if append_only else "replace"))
        if mode not in WRITE_MODES:
            raise IOManagerError(f"write_mode {mode!r} of {table.name} is not one of {', '.join(WRITE_MODES)}")
        if mode == "replace" and append_only:
            raise IOManagerError(
                f"writing {table.name} with write_mode 'replace' is refused: schema "
                f"{table.schema!r} is a raw layer and rule raw_append_only is on "
                f"({rules['raw_append_only']['why']}). Write with write_mode 'append', or relax "
                f"the rule with {rules['raw_append_only']['relax_with']}; nothing was written"
            )
        return mode

    @staticmethod
    def _check_column_drop(metadata: Mapping[str, Any], raw: bool, rules: Mapping[str, Any], table: TableRef) -> None:
        """Refuses ``drop_missing_columns`` in a raw schema while raw_append_only is on, before
        anything is written, whether or not a column is missing this time: raw never loses a
        column while its rules are on."""
        rule = rules["raw_append_only"]
        if raw and rule["enabled"] and metadata.get("drop_missing_columns"):
            raise IOManagerError(
                f"writing {table.name} with drop_missing_columns is refused: schema {table.schema!r} is a "
                f"raw layer and rule raw_append_only is on ({rule['why']}), so raw never loses a column. "
                "Leave drop_missing_columns out (a missing column is kept as NULLs), or relax the rule "
                f"with {rule['relax_with']}; nothing was written"
            )

    @staticmethod
    def _slice(
        context: dg.OutputContext | dg.InputContext, only: str | None = None, session: LakeSession | None = None
    ) -> Slice:
        """The rows of the context's partitions (or of partition ``only`` among them);
        ``partition_expr`` is parsed on the ``session``'s connection when given."""
        metadata = (
            context.definition_metadata
            if isinstance(context, dg.OutputContext)
            else (context.upstream_output.definition_metadata if context.upstream_output else {})
        ) or {}
        expr = metadata.get(PARTITION_EXPR_KEY)
        # Spliced into the slice's SQL on writes and reads: one expression, or nothing runs.
        check_partition_expr(context.asset_key.to_user_string(), expr, session.con if session else None)
        definition = context.asset_partitions_def
        keys: list[Any] = [only] if only is not None else list(context.asset_partition_keys)
        if isinstance(definition, dg.MultiPartitionsDefinition):
            windows: dict[str, dict[str, Any]] = {}
            for dimension in definition.partitions_defs:
                if isinstance(dimension.partitions_def, dg.TimeWindowPartitionsDefinition):
                    windows[dimension.name] = {}
            multi = []
            for key in keys:
                by_dimension = dict(dg.MultiPartitionKey.from_str(str(key)).keys_by_dimension) if not isinstance(key, dg.MultiPartitionKey) else dict(key.keys_by_dimension)
                for dimension, value in by_dimension.items():
                    if dimension in windows:
                        td = definition.get_partitions_def_for_dimension(dimension)
                        assert isinstance(td, dg.TimeWindowPartitionsDefinition)
                        window = td.time_window_for_partition_key(value)
                        windows[dimension][value] = (window.start, window.end)
                multi.append(by_dimension)
            return slice_condition(expr, None, multi, windows)
        if isinstance(definition, dg.TimeWindowPartitionsDefinition):
            window = (
                definition.time_window_for_partition_key(only)
                if only is not None
                else context.asset_partitions_time_window
            )
            return slice_condition(expr, (window.start, window.end), keys)
        return slice_condition(expr, None, keys)

    @classmethod
    def _partition_slices(cls, context: dg.OutputContext) -> dict[str, Slice]:
        """Each partition's own slice when the output covers several, else nothing."""
        if not context.has_asset_partitions or len(context.asset_partition_keys) < 2:
            return {}
        return {str(key): cls._slice(context, only=key) for key in context.asset_partition_keys}

    @staticmethod
    def _metadata(table: TableRef, plan: WritePlan, result: WriteResult, partitioned: bool) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "dagster/table_name": table.name,
            "dagster/column_schema": dg.TableSchema(
                columns=[dg.TableColumn(name=n, type=kind) for n, kind in result.columns]
            ),
            "dagster/storage_kind": "ducklake",
            SNAPSHOT_KEY: result.snapshot_id,
            "srdp/write_mode": plan.mode,
            "srdp/rows_written": result.rows_written,
            "srdp/slice": plan.slice.description,
            "srdp/attempts": result.attempts,
        }
        metadata["dagster/partition_row_count" if partitioned else "dagster/row_count"] = result.rows_in_slice
        if result.added_columns:
            metadata["srdp/added_columns"] = ", ".join(result.added_columns)
        if plan.mode == "replace" and result.rows_written == 0:
            metadata["srdp/note"] = f"replaced {plan.slice.description} with 0 rows (the output was empty)"
        return metadata

    # --- reads --------------------------------------------------------------------------
    @with_secrets_hint
    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        metadata = (upstream.definition_metadata if upstream else None) or {}
        op_output = None
        if context.has_asset_key:
            key: Sequence[str] = context.asset_key.path
        elif upstream is not None:
            key = [str(metadata.get("table") or upstream.name)]  # an op output: <schema>.<table or output name>
            op_output = _op_output(upstream)
        else:
            raise IOManagerError(f"input {context.name!r} has no asset key and no upstream output to read")
        table = self._table(key, metadata, op_output)
        columns = (context.definition_metadata or {}).get("columns")
        if isinstance(columns, str):
            raise IOManagerError(
                f"input {context.name!r}: metadata 'columns' must be a list of column names, not a "
                f"string ({columns!r}); write [{columns!r}]"
            )
        session = LakeSession.get(self.config, self.catalog, self.secrets)
        if context.has_asset_partitions and not list(context.asset_partition_keys):
            # No upstream partition is mapped (the first partition of a self-dependent or lagged
            # asset): an empty frame of the table's columns, as dagster-duckdb gives.
            context.log.info(f"{table.name}: no upstream partition is mapped to this one; the input is empty")
            return handlers.load_empty(context.dagster_type.typing_type, session, table, list(columns) if columns else None)
        pin = pin_request(context, self.pin_inputs)
        pinned = isinstance(pin, PinRequest)
        find = partial(pinned_snapshot, pin) if isinstance(pin, PinRequest) else partial(pin_given, pin)
        # The slice (its partition_expr parsed) before the lookup's thread starts: beside it the
        # two would only take turns at the GIL (measured 2-4 ms slower on one day's read).
        part = self._slice(context, session=session) if context.has_asset_partitions else Slice()
        lookup = PinLookup(find, context.log.info)
        try:
            lookup.log_as(f"{table.name}: reading {part.description}")
            session.attach("reader")
            if pinned:
                # While Dagster's event log is asked, DuckDB loads the table's metadata, which the
                # read at the pinned snapshot then finds loaded (a missing table is reported by it).
                session.columns(table)
            relation = session.relation(table, list(columns) if columns else None, part, lookup.snapshot())
            value = handlers.load_as(context.dagster_type.typing_type, relation)
        finally:
            lookup.close()
        if lookup.log_error is not None:
            raise lookup.log_error
        return value


def _step_context(context: dg.OutputContext) -> Any:
    """The step the output belongs to, or ``None`` for a context built by ``build_output_context``
    without one (unit tests of an IO manager), whose ``step_context`` raises."""
    try:
        return context.step_context
    except dg.DagsterInvariantViolationError:
        return None


def _op_output(context: dg.OutputContext) -> OpOutput:
    """The op output a context writes (or an input reads): its step and output name."""
    try:
        step = context.step_key
    except dg.DagsterInvariantViolationError:  # build_output_context(name=...) without a step
        step = None
    return OpOutput.of_step(step, str(context.name))


def _output_key(context: dg.OutputContext) -> tuple[list[str], str, str]:
    """The key an output's table is resolved from (the asset key, or for an op output its name:
    ``<schema>.<output name>``, as dagster-duckdb), what it is (``asset`` / ``op output``) and its
    name in the snapshot's message and extra info."""
    if context.has_asset_key:
        return list(context.asset_key.path), "asset", context.asset_key.to_user_string()
    table = str((context.definition_metadata or {}).get("table") or context.name)  # DbIOManager's op-output key
    return [table], "op output", _op_output(context).label
