"""What a Dagster user does about a DuckDB secret srdp's attach lacks: add it to ``secrets=[...]``.

srdp's own message (``catalog 'lake' needs the DuckDB secret 'lake_writer' for the writer role,
and this session has none by that name. Create it first (CREATE SECRET lake_writer (...))``)
speaks DuckDB; in Dagster the session's secrets are the CREATE SECRET statements of
``secrets=[...]`` (``add_srdp_definitions``, ``srdp_definitions``, ``SrdpIOManager``,
``SrdpResource``), so :func:`with_secrets_hint` appends where it goes, with the environment
variable the docs name for it (``LAKE_WRITER_SECRET_SQL`` for ``lake_writer``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import duckdb

__all__ = ["secrets_hint", "with_secrets_hint"]

#: srdp's message of a role whose DuckDB secret the session lacks (src/error.rs: MissingSecret).
_MISSING_SECRET = re.compile(r"needs the DuckDB secret '(?P<secret>[^']+)' for the (?P<role>\w+) role")

F = TypeVar("F", bound=Callable[..., Any])


def secrets_hint(message: str) -> str | None:
    """The sentence a Dagster user needs after srdp's missing-secret ``message``, or None when
    the message is about something else."""
    found = _MISSING_SECRET.search(message)
    if found is None:
        return None
    variable = re.sub(r"[^A-Z0-9]+", "_", found["secret"].upper()).strip("_") + "_SECRET_SQL"
    return (
        f"In Dagster, put that CREATE SECRET {found['secret']} statement in an environment variable and add it to "
        f"secrets=[...]: add_srdp_definitions(..., secrets=[dg.EnvVar({variable!r})]) (or secrets= of "
        "SrdpIOManager / SrdpResource when built by hand)"
    )


def with_secrets_hint(function: F) -> F:
    """``function``, whose srdp error about a missing DuckDB secret also says how to give it in
    Dagster (same error class, srdp's message first, no chained traceback)."""

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except duckdb.Error as error:
            hint = secrets_hint(str(error))
            if hint is None:
                raise
            raise type(error)(f"{str(error).rstrip('.')}. {hint}") from None

    return wrapped  # type: ignore[return-value]
