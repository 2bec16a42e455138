"""The one error of :mod:`srdp.lake`: a write or read refused, with what to do about it."""

from __future__ import annotations

__all__ = ["LakeError"]


class LakeError(Exception):
    """A write or read srdp refuses, with what to do about it (nothing was written).

    The IO manager re-exports it as ``srdp.dagster.IOManagerError`` (the same class)."""
