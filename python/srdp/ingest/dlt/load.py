"""A load srdp allowed, run once for every load path (:meth:`DltDestination.run` and the
Dagster assets of :mod:`srdp.dagster.dlt_assets`).

:func:`srdp.ingest.dlt.destination.prepare_load` applies everything srdp.toml says before dlt
runs (reading it at a pipeline's first load in the process); :class:`PreparedLoad` then runs dlt
and turns a failure whose text holds a secret into :class:`SrdpDltLoadError`, redacted, without
dlt's exception attached, and dlt's refusal of a type change under ``raw_validated`` into
:class:`SrdpDltValidationError`, which says what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from dlt.common.pipeline import LoadInfo
from dlt.pipeline.pipeline import Pipeline

from srdp.ingest.dlt import rules
from srdp.ingest.dlt.redact import secret_free_failure, secret_free_logs

from srdp.ingest.dlt.target import DltTarget

__all__ = ["LOGGER", "PreparedLoad"]

#: Where relaxed rules are logged outside Dagster (one warning per rule on every load).
LOGGER = logging.getLogger("srdp.ingest.dlt")

T = TypeVar("T")


@dataclass(frozen=True)
class PreparedLoad:
    """A load srdp allows now: ``destination`` as srdp describes it at this moment, the pipeline,
    and the keyword arguments of the dlt call under the rules."""

    destination: DltTarget
    pipeline: Pipeline
    arguments: dict[str, Any]

    def run(self, data: Any) -> LoadInfo:
        """``pipeline.run(data, **arguments)``, with failures explained as :meth:`stream` does
        (the next ``pipeline.run`` retries a package that failed)."""
        (info,) = self.stream(lambda: [self.pipeline.run(data, **self.arguments)], retried_by_next_run=True)
        return info

    def stream(self, events: Callable[[], Iterable[T]], *, retried_by_next_run: bool = False) -> Iterator[T]:
        """Yields what ``events()`` yields; a failure whose text holds a secret given to the
        helper is raised as :class:`SrdpDltLoadError` instead, with dlt's text redacted, and a
        type change refused under ``raw_validated`` as :class:`SrdpDltValidationError`.

        ``retried_by_next_run``: whether the next run of ``events`` tries a failed load package
        again (``pipeline.run`` does); the default, ``False``, is dagster-dlt's
        ``DagsterDltResource.run``, which drops pending packages before every run.
        """
        failure = None
        try:
            with secret_free_logs(self.destination):
                yield from events()
        except Exception as error:
            failure = secret_free_failure(self.destination, self.pipeline, error)
            if failure is None:
                violation = rules.validation_failure(
                    self.destination, self.pipeline, error, retried_by_next_run=retried_by_next_run
                )
                if violation is None:
                    raise
                raise violation from error
        # Raised outside the except block, so dlt's exception (and its secret) is not attached.
        if failure is not None:
            raise failure

