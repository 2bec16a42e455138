"""Which rows of a table a partition is: a SQL condition with bound parameters (pure).

A partition slice is a SQL condition with bound parameters over the ``partition_expr``
metadata: a time window is ``expr >= ? AND expr < ?``, static keys ``expr IN (?, ...)``, and
multi-partitions one condition per dimension for each key, OR-ed. The expression is SQL text
spliced into those conditions (on writes and reads), so :func:`check_partition_expr` first makes
sure, with DuckDB's own parser, that each one is ONE expression: no statement, no subquery, no
parameter, no comment or parenthesis that reaches out of it into the condition around it.

Writes bind the parameters (``execute(sql, params)``). Reads build a relation, and DuckDB 1.5's
relation API runs a query with parameters at once into a materialized copy that it then scans
about 30 times slower than the table (a 900,000-row slice: 6 s against 0.2 s), and that a
streamed input would hold whole in memory; so a read filters by :attr:`Slice.literal_condition`,
the same condition with each value written as a SQL string literal (:func:`srdp.sql.literal`),
built by the same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import duckdb

from srdp.lake.errors import LakeError
from srdp.sql import literal

__all__ = [
    "Slice",
    "check_partition_expr",
    "partition_expr_problem",
    "slice_condition",
]

#: What every partition_expr refusal ends with: what is allowed.
PARTITION_EXPR_RULE = (
    "partition_expr must be one SQL expression over the table's columns, such as 'order_date' or "
    "'CAST(ts AS DATE)' (for multi-partitions one per dimension); the IO manager ran nothing"
)

#: The table the parsed expression selects from; its position in the text proves the parser read
#: the text after the expression as written (no comment or quote of the expression swallowed it).
_PARSE_PREFIX = "SELECT ("
_PARSE_SUFFIX = ") FROM __srdp_partition_expr"


def check_partition_expr(asset: str, partition_expr: Any, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Refuses a ``partition_expr`` (a string, or a mapping of dimension to string) that is not
    one SQL expression (see :func:`partition_expr_problem`, which parses on a cursor of ``con``
    when given); None passes (nothing to check)."""
    if partition_expr is None:
        return
    if isinstance(partition_expr, Mapping):
        entries = [(f"partition_expr[{d!r}]", partition_expr[d]) for d in sorted(partition_expr, key=str)]
    else:
        entries = [("partition_expr", partition_expr)]
    for label, expr in entries:
        if isinstance(expr, str):
            problem = partition_expr_problem(expr, con)
        else:
            problem = f"it is of type {type(expr).__name__}, not a string"
        if problem is not None:
            raise LakeError(f"asset {asset!r}: {label} {expr!r} is refused: {problem}. {PARTITION_EXPR_RULE}")


#: partition_expr_problem's answers in this process, per expression (at most _PROBLEMS_KEPT).
_PROBLEMS: dict[str, str | None] = {}
_PROBLEMS_KEPT = 256


def partition_expr_problem(expr: str, con: duckdb.DuckDBPyConnection | None = None) -> str | None:
    """Why ``expr`` is not one SQL expression over a table's columns, or None; kept per
    expression for the life of the process.

    DuckDB's parser reads ``SELECT (<expr>) FROM __srdp_partition_expr`` (the text is a string
    literal given to ``json_serialize_sql`` on a cursor of ``con``, or without one on a new
    in-memory database, which costs a process tens of milliseconds: nothing runs), and the tree
    must be exactly that query: one statement, one select-list entry, no clause and no FROM but
    the placeholder, at its place in the text. The expression's own parentheses must balance by
    DuckDB's tokenizer (they never close the ones around it: ``a) OR (b`` parses here but turns
    ``(expr) >= ? AND (expr) < ?`` into another condition), and it holds no subquery (it would
    read another table) and no parameter (it would shift the slice's bound values).
    """
    if expr not in _PROBLEMS:
        if len(_PROBLEMS) >= _PROBLEMS_KEPT:
            _PROBLEMS.clear()
        _PROBLEMS[expr] = _problem(expr, con)
    return _PROBLEMS[expr]


def _problem(expr: str, con: duckdb.DuckDBPyConnection | None) -> str | None:
    """:func:`partition_expr_problem`, not kept."""
    if not expr.strip():
        return "it is empty"
    depth = 0
    encoded = expr.encode()  # DuckDB's positions count UTF-8 bytes
    for position, kind in duckdb.tokenize(expr):
        char = encoded[position : position + 1]
        if kind == duckdb.token_type.operator and char in (b"(", b")"):
            depth += 1 if char == b"(" else -1
            if depth < 0:
                break
    if depth != 0:
        return "its parentheses do not balance"
    text = f"{_PARSE_PREFIX}{expr}{_PARSE_SUFFIX}"
    parser = con.cursor() if con is not None else duckdb.connect(":memory:")
    try:
        serialized = parser.execute(f"SELECT json_serialize_sql({literal(text)})").fetchone()
    finally:
        parser.close()
    tree = json.loads(serialized[0]) if serialized else {"error": True, "error_message": "no result"}
    if tree.get("error"):
        return f"it is not one SQL expression (DuckDB's parser: {tree.get('error_message')})"
    if not _is_the_wrapper(tree, len(f"{_PARSE_PREFIX}{expr}) FROM ".encode())):
        return "it is not one SQL expression (it reaches into the statement around it)"
    found = _kinds(tree["statements"][0]["node"]["select_list"])
    if "SUBQUERY" in found:
        return "it holds a subquery; it may use only the table's own columns"
    if "PARAMETER" in found:
        return "it holds a parameter placeholder"
    return None


def _is_the_wrapper(tree: Mapping[str, Any], table_at: int) -> bool:
    """Whether the parsed tree is ``SELECT (<one expression>) FROM __srdp_partition_expr``."""
    statements = tree.get("statements") or []
    if len(statements) != 1:
        return False
    node = statements[0].get("node") or {}
    source = node.get("from_table") or {}
    return (
        node.get("type") == "SELECT_NODE"
        and len(node.get("select_list") or []) == 1
        and not node["select_list"][0].get("alias")
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and node.get("where_clause") is None
        and not node.get("group_expressions")
        and not node.get("group_sets")
        and node.get("having") is None
        and node.get("qualify") is None
        and node.get("sample") is None
        and source.get("type") == "BASE_TABLE"
        and source.get("table_name") == _PARSE_SUFFIX.split()[-1]
        and not source.get("schema_name")
        and not source.get("catalog_name")
        and not source.get("alias")
        and source.get("at_clause") is None
        and source.get("query_location") == table_at
    )


def _kinds(node: Any) -> set[str]:
    """Every expression class (``SUBQUERY``, ``PARAMETER``, ...) in a parsed tree."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if isinstance(item.get("class"), str):
                found.add(item["class"])
            if "subquery" in item:
                found.add("SUBQUERY")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@dataclass(frozen=True)
class Slice:
    """A SQL condition with its parameters; ``condition`` None means the whole table.

    ``condition`` has a ``?`` for each of ``params``; ``literal_condition`` is the same condition
    with each parameter written as a SQL literal (what a read filters by, see the module doc).
    """

    condition: str | None = None
    params: list[Any] = field(default_factory=list)
    description: str = "whole table"
    literal_condition: str | None = None

    @property
    def read_condition(self) -> str | None:
        """The condition with no parameter left: ``literal_condition``, or ``condition`` when it
        has no parameters. ``ValueError`` for a slice with parameters but no literal form."""
        if not self.params:
            return self.condition
        if self.literal_condition is None:
            raise ValueError(f"the slice {self.description!r} has parameters but no literal condition")
        return self.literal_condition


#: How a builder writes a value into a condition: a ``?`` (bound) or a literal.
Mark = Callable[[str], str]


def _placeholder(value: str) -> str:
    return "?"


def _timestamp(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%d %H:%M:%S")


def _wall_time(moment: datetime) -> str:
    """The moment as wall-clock time in its own zone (a naive moment as it is)."""
    return moment.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S")


#: A window bound, chosen by the expression's type when DuckDB binds it (``typeof`` folds to a
#: constant, so the filter stays a constant comparison the scan can push down): a TIMESTAMPTZ
#: column is compared as an instant (the UTC text, under the session's UTC zone), anything else
#: (a naive TIMESTAMP holding local wall time, a DATE) with the partition's own wall time.
_BOUND = "CAST(CASE WHEN typeof({expr}) = 'TIMESTAMP WITH TIME ZONE' THEN {utc} ELSE {wall} END AS TIMESTAMP)"


def time_window_condition(
    expr: str, start: datetime, end: datetime, mark: Mark = _placeholder
) -> tuple[str, list[Any]]:
    """``expr >= start AND expr < end``: a ``TIMESTAMPTZ`` expression against the window's UTC
    instants, a naive one (``TIMESTAMP``, ``DATE``) against its wall time in the partition's zone.
    ``mark`` writes each value into the text (default ``?``); returns the text and the values."""
    values = [_timestamp(start), _wall_time(start), _timestamp(end), _wall_time(end)]
    low = _BOUND.format(expr=f"({expr})", utc=mark(values[0]), wall=mark(values[1]))
    high = _BOUND.format(expr=f"({expr})", utc=mark(values[2]), wall=mark(values[3]))
    return f"({expr}) >= {low} AND ({expr}) < {high}", values


def static_condition(expr: str, keys: Sequence[str], mark: Mark = _placeholder) -> tuple[str, list[Any]]:
    """``expr IN (?, ...)`` over the partition keys (``mark`` as in :func:`time_window_condition`)."""
    marks = ", ".join(mark(k) for k in keys)
    return f"CAST(({expr}) AS VARCHAR) IN ({marks})", list(keys)


def slice_condition(
    partition_expr: str | Mapping[str, str] | None,
    time_window: tuple[datetime, datetime] | None,
    keys: Sequence[str | Mapping[str, str]],
    dimension_windows: Mapping[str, Mapping[str, tuple[datetime, datetime]]] | None = None,
) -> Slice:
    """The rows a materialization of ``keys`` owns.

    ``time_window``: the window of a time-partitioned asset (ranges included). ``keys``: the
    partition keys (strings), or for multi-partitions their ``{dimension: key}`` mappings;
    ``dimension_windows[dimension][key]`` is the time window of a key of a time dimension.
    The slice carries both forms of its condition: with ``?`` and with literals.
    """
    bound = _build(partition_expr, time_window, keys, dimension_windows, _placeholder)
    written = _build(partition_expr, time_window, keys, dimension_windows, literal)
    return replace(bound, literal_condition=written.condition)


def _build(
    partition_expr: str | Mapping[str, str] | None,
    time_window: tuple[datetime, datetime] | None,
    keys: Sequence[str | Mapping[str, str]],
    dimension_windows: Mapping[str, Mapping[str, tuple[datetime, datetime]]] | None,
    mark: Mark,
) -> Slice:
    """:func:`slice_condition`'s slice, each value written into the condition by ``mark``."""
    if partition_expr is None:
        raise LakeError(
            "a partitioned asset needs 'partition_expr' metadata: the column (or SQL expression) "
            "that holds the partition, e.g. metadata={'partition_expr': 'order_date'}; for "
            "multi-partitions one per dimension: {'partition_expr': {'date': 'day', 'region': 'region'}}"
        )
    if isinstance(partition_expr, Mapping):
        ors: list[str] = []
        params: list[Any] = []
        for key in keys:
            if not isinstance(key, Mapping):
                raise LakeError("partition_expr is a mapping, but the asset is not multi-partitioned")
            ands: list[str] = []
            for dimension, value in sorted(key.items()):
                expr = partition_expr.get(dimension)
                if expr is None:
                    raise LakeError(
                        f"partition_expr has no entry for dimension {dimension!r} (has: "
                        f"{', '.join(sorted(partition_expr))})"
                    )
                window = (dimension_windows or {}).get(dimension, {}).get(value)
                if window is not None:
                    condition, values = time_window_condition(expr, *window, mark=mark)
                else:
                    condition, values = static_condition(expr, [value], mark=mark)
                ands.append(condition)
                params.extend(values)
            ors.append("(" + " AND ".join(ands) + ")")
        described = ", ".join("|".join(str(v) for _, v in sorted(k.items())) for k in keys if isinstance(k, Mapping))
        return Slice("(" + " OR ".join(ors) + ")", params, f"partitions {described}")
    if time_window is not None:
        condition, params = time_window_condition(partition_expr, *time_window, mark=mark)
        start, end = time_window
        return Slice(condition, params, f"time window [{_timestamp(start)}, {_timestamp(end)})")
    flat = [str(k) for k in keys]
    condition, params = static_condition(partition_expr, flat, mark=mark)
    return Slice(condition, params, f"partitions {', '.join(flat)}")
