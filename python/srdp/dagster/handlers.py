"""Kept for imports written before the frame handlers moved: :mod:`srdp.lake.frames` owns them."""

from __future__ import annotations

from srdp.lake.frames import BATCH_ROWS, Source, load_as, source_of

__all__ = ["BATCH_ROWS", "Source", "load_as", "source_of"]
