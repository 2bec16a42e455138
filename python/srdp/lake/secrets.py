"""Secret statements: what srdp runs before it attaches a catalog whose roles need DuckDB secrets.

Each entry of a resource's ``secrets`` must be exactly one temporary ``CREATE SECRET``
statement: ``CREATE [OR REPLACE] [TEMPORARY] SECRET [IF NOT EXISTS] [name] [IN memory] (...)``.
A persistent one (``PERSISTENT``, or ``IN`` a storage other than ``memory`` such as
``IN LOCAL_FILE``) is refused before it runs: DuckDB would write the password in plain text under
``~/.duckdb/stored_secrets/``, and every later DuckDB process of that OS user (a reader-only
application included) would load it. The statements hold credentials: no message here quotes a
statement or DuckDB's text about one.
"""

from __future__ import annotations

import re

import duckdb

__all__ = ["create_secret", "secret_problem"]

#: One word of a statement's head at a token's position: a quoted identifier or a bare word.
_WORD = re.compile(r'"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_$]*')

#: Why a persistent secret is refused, and what to write instead.
PERSISTENT = (
    "it would store the secret on disk (PERSISTENT, or IN a storage other than memory), in plain text "
    "under ~/.duckdb/stored_secrets where every later DuckDB process of this OS user loads it; srdp "
    "runs temporary secrets only: write CREATE SECRET or CREATE TEMPORARY SECRET, without PERSISTENT and IN"
)


def create_secret(con: duckdb.DuckDBPyConnection, statement: str) -> str | None:
    """Runs ``statement`` on ``con`` when it is one temporary CREATE SECRET statement; otherwise,
    or when DuckDB refuses it, why not (never quoting the statement or DuckDB's message, which
    hold credentials)."""
    problem = secret_problem(con, statement)
    if problem is None:
        try:
            con.execute(statement)
        except duckdb.Error as error:
            problem = f"DuckDB refused it ({type(error).__name__})"
    return problem


def secret_problem(con: duckdb.DuckDBPyConnection, statement: str) -> str | None:
    """Why ``statement`` is not one temporary CREATE SECRET statement, or None (never quotes it).

    ``con`` parses it (DuckDB's parser and tokenizer, so comments and quoting are read as DuckDB
    reads them); nothing runs."""
    try:
        parsed = con.extract_statements(statement)
    except duckdb.Error as error:
        return f"it does not parse ({type(error).__name__})"
    head = _head(statement) if len(parsed) == 1 else None
    shape = _shape(head) if head is not None else None
    if shape is None:
        return f"it must be exactly one CREATE SECRET statement (found {len(parsed)} statement(s))"
    if shape == "persistent":
        return PERSISTENT
    return None


def _head(statement: str) -> list[str] | None:
    """The words before the statement's first ``(``, as DuckDB's tokenizer splits it (comments
    dropped; bare words upper-cased, quoted identifiers kept quoted), or None without a ``(``."""
    words = []
    for position, kind in duckdb.tokenize(statement):
        if kind == duckdb.token_type.operator and statement.startswith("(", position):
            return words
        word = _WORD.match(statement, position)
        if word is None:
            return None  # a string, a number or an operator before the options: not a secret's head
        text = word.group(0)
        words.append(text if text.startswith('"') else text.upper())
    return None


def _shape(head: list[str]) -> str | None:
    """``"temporary"`` or ``"persistent"`` for ``CREATE [OR REPLACE] [PERSISTENT | TEMPORARY]
    SECRET [IF NOT EXISTS] [name] [IN storage]``, else None."""
    rest = list(head)

    def take(*words: str) -> bool:
        if rest[: len(words)] == list(words):
            del rest[: len(words)]
            return True
        return False

    if not take("CREATE"):
        return None
    take("OR", "REPLACE")
    persistent = take("PERSISTENT")
    if not persistent:
        take("TEMPORARY")
    if not take("SECRET"):
        return None
    take("IF", "NOT", "EXISTS")
    if rest and rest[0] != "IN":
        rest.pop(0)  # the secret's name
    if take("IN"):
        if len(rest) != 1:
            return None
        storage = rest.pop().strip('"').replace('""', '"')
        persistent = persistent or storage.lower() != "memory"
    if rest:
        return None
    return "persistent" if persistent else "temporary"
