"""SQL text of values: what srdp writes into the statements it runs.

srdp's function calls (:func:`srdp.call`), its ``partition_expr`` check and its reads write
values as SQL literals rather than binding them as parameters: DuckDB's Python client imports
pandas (0.3-0.5 s) at a process's first statement with bound parameters, which every step
process reading through srdp would pay, pandas user or not. (Writes still bind their slice's
values: the frame they register has mostly imported pandas already, and the two forms cost the
same in DuckLake.)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["call_sql", "literal"]


def literal(value: str | bool | int | float | None) -> str:
    """``value`` as a DuckDB constant: a string single-quoted with each embedded quote doubled
    (DuckDB reads no other escape inside a standard string; a NUL character, which would end the
    query text, is written as ``chr(0)`` between quoted parts: ``('a' || chr(0) || 'b')``), a
    bool as ``true``/``false``, an int or a finite float as its digits, None as ``NULL``.
    ``TypeError`` for anything else, ``ValueError`` for a float that is not finite."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))  # an IntEnum's digits, not its name
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"literal() takes a finite float, not {value!r}")
        return repr(float(value))
    if isinstance(value, str):
        parts = ["'" + part.replace("'", "''") + "'" for part in value.split("\x00")]
        return parts[0] if len(parts) == 1 else "(" + " || chr(0) || ".join(parts) + ")"
    raise TypeError(f"literal() takes a string, bool, int, float or None, not {type(value).__name__}")


def call_sql(function: str, *args: Any, **named: Any) -> str:
    """``SELECT * FROM function(args..., name := value...)`` with every argument a
    :func:`literal`; ``None`` named arguments are left out (the function's default applies).
    ``function`` and the names are srdp's own (never user input): they must be identifiers."""
    for name in (function, *named):
        if not name.isidentifier():
            raise ValueError(f"call_sql(): {name!r} is not an identifier")
    given = [literal(a) for a in args] + [f"{k} := {literal(v)}" for k, v in named.items() if v is not None]
    return f"SELECT * FROM {function}({', '.join(given)})"
