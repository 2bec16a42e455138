"""Promotion: each finished landing load of one table (with its child tables) appended to raw in
ONE DuckLake transaction through the IO manager's write path, exactly once.

Per load, oldest first:

* recorded in the ledger already: done (a rerun after a kill -9 finds it there or not at all);
* no ``_dlt_loads`` marker: **unfinished**, reported, never promoted (dlt crashed between the
  state file and the marker, or is still writing); later loads go on;
* listed in ``skip_loads``: recorded as skipped, never promoted;
* after a quarantined load: **waiting** behind it;
* otherwise read and validated (every data file is Parquet and readable, and a table's files agree
  on column types; the raw tables' column types, frozen while ``raw_validated`` is on; dlt's
  variant columns ``<col>__v_<type>``, which dlt adds when a value does not fit the column's
  type; the project's key columns: present, non-null, unique in the load and not in raw yet; the
  project's checks). A load that fails is **quarantined**: not promoted, reported with the
  reason; later loads wait behind it until the project fixes it or lists it in ``skip_loads``.
  A variant column with no value in the load is left out: dlt keeps a variant column in its
  schema once one value needed it, so every later load carries it, all NULL;
* else **promoted**: the tables' rows and the ledger row in one transaction, labelled with the
  IO manager's writer and the load id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from srdp.ingest.landing.ledger import AlreadyPromoted, Ledger
from srdp.ingest.landing.zone import LandingZone, Load, UnreadableFile
from srdp.lake.errors import LakeError
from srdp.lake.frames import Source
from srdp.lake.names import TableRef, quote
from srdp.lake.session import LakeSession, WritePlan, WriteResult, lossless
from srdp.lake.slices import Slice

__all__ = ["Check", "Outcome", "Promotion"]

#: A project's own check of one table's rows of a load: problems (empty or ``None``: fine).
Check = Callable[[str, pa.Table], "str | Sequence[str] | None"]

#: dlt's variant column: a value that did not fit ``<col>``'s type went to ``<col>__v_<type>``.
_VARIANT = re.compile(r"^(?P<column>.+)__v_(?P<kind>[a-z0-9_]+)$")

_PROBE = "__srdp_landing_probe"

#: What to do about a landed file the promotion cannot read.
_UNREADABLE_ADVICE = "replace or remove the file and rerun, or list the load in skip_loads"

#: What to do about a load whose values dlt put in a variant column.
_VARIANT_ADVICE = (
    "fix the values at the source and re-deliver the load (replace its files in the landing zone and "
    "rerun), or list the load in skip_loads"
)


@dataclass
class Outcome:
    """What happened to one load of one table."""

    load_id: str
    status: str
    """``promoted``, ``quarantined``, ``unfinished``, ``waiting`` or ``skipped``."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows promoted per physical table."""
    reasons: list[str] = field(default_factory=list)
    snapshot_id: int | None = None


@dataclass
class Promotion:
    """Promotes one landing table (and its children) of one zone into ``schema`` of ``catalog``."""

    session: LakeSession
    zone: LandingZone
    catalog: str
    schema: str
    table: str
    children: Sequence[str] = ()
    writer: str = "io_manager"
    keys: Mapping[str, Sequence[str]] = field(default_factory=dict)
    checks: Sequence[Check] = ()
    skip_loads: Sequence[str] = ()
    run_id: str = ""

    @property
    def tables(self) -> list[str]:
        return [self.table, *self.children]

    def ref(self, table: str) -> TableRef:
        return TableRef(self.catalog, self.schema, table)

    @property
    def ledger(self) -> Ledger:
        return self.ledger_of(self.tables)

    def ledger_of(self, tables: Sequence[str]) -> Ledger:
        """The ledger of a load's promotion of ``tables`` (the parent and the child tables no other
        promotion took)."""
        return Ledger(self.catalog, self.schema, self.zone.url, self.table, tuple(t for t in tables if t != self.table))

    def run(self) -> list[Outcome]:
        """Promotes every load it may, oldest first; returns one outcome per load considered."""
        owner = self.session.call("srdp_check_writer", self.catalog, self.schema, self.writer)[0]
        raw = owner["layer"] == "raw"
        rules = {r["rule"]: r for r in self.session.call("srdp_rules", self.catalog)}
        frozen = rules["raw_validated"]["relax_with"] if raw and rules["raw_validated"]["enabled"] else None
        self.session.attach("writer")
        recorded = self.ledger.tables_recorded(self.session)
        outcomes: list[Outcome] = []
        blocked_by: str | None = None
        for load in self.zone.loads():
            taken = recorded.get(load.load_id, {})
            if self.table in taken:
                continue
            # A child table another promotion took with this load (it promoted it on its own) is
            # in raw already: this promotion leaves it out, so raw holds its rows once.
            tables = [t for t in self.tables if t not in taken]
            elsewhere = [
                f"{self.ref(t).name} of load {load.load_id} is in raw already (another promotion took it); "
                "not promoted again"
                for t in self.tables if t in taken and t in load.files
            ]
            files = {t: load.files[t] for t in tables if t in load.files}
            if not load.finished:
                if files or load.state_files:
                    outcomes.append(Outcome(load.load_id, "unfinished", reasons=[_unfinished(load)]))
                continue
            if not files:
                continue  # the load has nothing for this table
            if load.load_id in self.skip_loads:
                self.ledger_of(tables).skip(self.session, load.load_id, self.writer, self.run_id, "listed in skip_loads")
                outcomes.append(Outcome(load.load_id, "skipped", reasons=["listed in skip_loads"]))
                continue
            if blocked_by is not None:
                outcomes.append(Outcome(
                    load.load_id, "waiting", reasons=[f"waits behind quarantined load {blocked_by}"]
                ))
                continue
            data, problems = self.read(load, files)
            problems = problems or self.validate(data, frozen)
            if problems:
                outcomes.append(Outcome(load.load_id, "quarantined", reasons=problems))
                blocked_by = load.load_id
                continue
            outcome = self.promote(load, data, frozen, tables)
            if outcome is not None:
                outcome.reasons += elsewhere
                outcomes.append(outcome)
        return outcomes

    # -- reading and validation -------------------------------------------------------------

    def read(self, load: Load, files: Mapping[str, Sequence[str]]) -> tuple[dict[str, pa.Table], list[str]]:
        """The load's rows per table, without dlt's variant columns that hold no value, and why a
        table's files could not be read (any: the load is quarantined)."""
        data: dict[str, pa.Table] = {}
        problems: list[str] = []
        for table, paths in files.items():
            try:
                data[table] = _without_empty_variants(self.zone.read(paths))
            except UnreadableFile as error:
                problems.append(f"{self.ref(table).name}: load {load.load_id} has file {error}; {_UNREADABLE_ADVICE}")
        return data, problems

    def validate(self, data: Mapping[str, pa.Table], frozen: str | None) -> list[str]:
        """Why the load may not go to raw (empty: it may)."""
        problems: list[str] = []
        for table, rows in data.items():
            ref = self.ref(table)
            problems += _variants(ref, rows)
            problems += self._types(ref, rows, frozen)
            problems += self._keys(ref, rows, list(self.keys.get(table, ())))
            for check in self.checks:
                found = check(table, rows)
                if found:
                    problems += [found] if isinstance(found, str) else list(found)
        return problems

    def _types(self, ref: TableRef, rows: pa.Table, frozen: str | None) -> list[str]:
        existing = self.session.columns(ref)
        if existing is None:
            return []
        incoming = self._duckdb_types(rows)
        have = dict(existing)
        problems = []
        for name, kind in incoming:
            old = have.get(name)
            if old is None or old == kind or rows.column(name).null_count == len(rows):
                continue
            if frozen is None and (lossless(old, kind) or lossless(kind, old)):
                continue
            why = f"rule raw_validated freezes column types in raw (relax it with {frozen})" if frozen else (
                "DuckLake changes a type only by a lossless promotion"
            )
            problems.append(f"{ref.name}: column {name!r} is {old} in raw and {kind} in this load; {why}")
        return problems

    def _keys(self, ref: TableRef, rows: pa.Table, keys: list[str]) -> list[str]:
        if not keys:
            return []
        missing = [k for k in keys if k not in rows.column_names]
        if missing:
            return [f"{ref.name}: key column(s) {', '.join(missing)} missing from the load"]
        with self.session.lock:
            con = self.session.con
            con.register(_PROBE, rows)
            try:
                columns = ", ".join(quote(k) for k in keys)
                nulls = " OR ".join(f"{quote(k)} IS NULL" for k in keys)
                found = con.execute(
                    f"SELECT (SELECT count(*) FROM {_PROBE} WHERE {nulls}), "
                    f"(SELECT count(*) FROM (SELECT {columns} FROM {_PROBE} GROUP BY ALL HAVING count(*) > 1))"
                ).fetchone()
                null_rows, duplicated = (int(found[0]), int(found[1])) if found else (0, 0)
                in_raw = 0
                if self.session.columns(ref) is not None:
                    joined = con.execute(
                        f"SELECT count(*) FROM (SELECT DISTINCT {columns} FROM {_PROBE}) p "
                        f"JOIN (SELECT DISTINCT {columns} FROM {ref.sql}) r USING ({columns})"
                    ).fetchone()
                    in_raw = int(joined[0]) if joined else 0
            finally:
                con.unregister(_PROBE)
        label = f"key ({', '.join(keys)})"
        problems = []
        if null_rows:
            problems.append(f"{ref.name}: {null_rows} row(s) with a NULL in {label}")
        if duplicated:
            problems.append(f"{ref.name}: {duplicated} value(s) of {label} appear more than once in the load")
        if in_raw:
            problems.append(f"{ref.name}: {in_raw} value(s) of {label} are in raw already")
        return problems

    def _duckdb_types(self, rows: pa.Table) -> list[tuple[str, str]]:
        with self.session.lock:
            con = self.session.con
            con.register(_PROBE, rows)
            try:
                return [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {_PROBE}").fetchall()]
            finally:
                con.unregister(_PROBE)

    # -- the write --------------------------------------------------------------------------

    def promote(
        self, load: Load, data: Mapping[str, pa.Table], frozen: str | None, tables: Sequence[str]
    ) -> Outcome | None:
        """Appends the load's ``tables`` and their ledger rows in one transaction (None: another
        run recorded the load, or one of ``tables`` with it, first)."""
        message = f"srdp landing: promote load {load.load_id} of {self.zone.url}{self.table}"
        extra = {"landing": self.zone.url, "load_id": load.load_id, "run_id": self.run_id, "table": self.table}
        # The parent first, so a child table is never in raw without it.
        ordered = [t for t in tables if t in data]
        plans = [
            (
                WritePlan(
                    table=self.ref(t), mode="append", slice=Slice(), writer=self.writer, message=message,
                    extra=extra, raw_validated=frozen, drop_missing_columns=False,
                ),
                _source(data[t]),
            )
            for t in ordered
        ]
        rows = sum(len(data[t]) for t in ordered)

        def record(con: duckdb.DuckDBPyConnection, _results: list[WriteResult]) -> None:
            self.ledger_of(tables).record(con, load.load_id, "promoted", rows, self.run_id, None)

        try:
            results = self.session.write_many(plans, before_commit=record)
        except AlreadyPromoted:
            return None
        except LakeError:
            raise
        return Outcome(
            load.load_id,
            "promoted",
            rows={self.ref(t).name: r.rows_written for t, r in zip(ordered, results)},
            snapshot_id=results[0].snapshot_id,
        )


def _source(table: pa.Table) -> Callable[[], Source]:
    return lambda: Source(table, True, "pyarrow.Table")


def _without_empty_variants(rows: pa.Table) -> pa.Table:
    """``rows`` without dlt's variant columns that hold no value. dlt keeps a variant column in its
    schema once one value needed it, so every later load carries it, all NULL; promoted, it would
    add a column to raw for good and split the table's files into two column sets that DuckLake
    never merges. A variant column with values quarantines the load (:func:`_variants`)."""
    empty = [n for n in rows.column_names if _VARIANT.match(n) and rows.column(n).null_count == len(rows)]
    return rows.drop_columns(empty) if empty else rows


def _variants(ref: TableRef, rows: pa.Table) -> list[str]:
    problems = []
    for name in rows.column_names:
        match = _VARIANT.match(name)
        if match and rows.column(name).null_count < len(rows):
            problems.append(
                f"{ref.name}: column {match['column']!r} has value(s) of type {match['kind']} that do not "
                f"fit its type (dlt put them in variant column {name!r}); {_VARIANT_ADVICE}"
            )
    return problems


def _unfinished(load: Load) -> str:
    what = ", ".join(sorted(load.files)) or "no data files"
    return (
        f"load {load.load_id} has no _dlt_loads marker ({what}; {len(load.state_files)} state file(s)): "
        "dlt stopped before finishing it or is still writing; it is not promoted until dlt finishes it "
        "(the pipeline's next run retries a pending package)"
    )
