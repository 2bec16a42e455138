"""Kept for imports written before the write core moved: :mod:`srdp.lake.session` owns it."""

from __future__ import annotations

from srdp.lake.session import LakeSession, WritePlan, WriteResult, lossless, secret_problem

__all__ = ["LakeSession", "WritePlan", "WriteResult", "lossless", "secret_problem"]
