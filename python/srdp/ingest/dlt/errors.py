"""The errors of the dlt helper: a load it refuses, a load a rule stopped inside dlt, and a failed
load whose text it redacted."""

from __future__ import annotations

__all__ = ["SrdpDltError", "SrdpDltLoadError", "SrdpDltValidationError"]


class SrdpDltError(ValueError):
    """A load this helper refuses before it starts: a rule of srdp.toml or a misdirected destination.

    Refusals that srdp's SQL functions make (unknown catalog, layer, writer or project; a writer
    that does not own the schema) surface unchanged as ``duckdb.Error`` with srdp's message.
    """


class SrdpDltLoadError(SrdpDltError):
    """dlt's load failed and dlt's error text held a secret the helper gave it (the catalog
    password, the storage secret): the same text with the secret replaced by ``***``.

    It is raised without dlt's exception attached (no ``__cause__`` or ``__context__``), since
    those carry the secret; failures that hold no secret surface as dlt raised them.
    """


class SrdpDltValidationError(SrdpDltError):
    """dlt stopped a load because it broke ``raw_validated`` (data types frozen): a column of a raw
    table would change type. The message names the table, the column, its type and the incoming
    one, the load package left pending and what to do with it, and the line that relaxes the rule.

    dlt's own error (``PipelineStepFailed`` around ``DataValidationError``) is its ``__cause__``.
    """
