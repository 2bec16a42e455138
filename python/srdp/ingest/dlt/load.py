"""The load sequence, written once for every load path (:meth:`DltDestination.run` and the
Dagster assets of :mod:`srdp.dagster.dlt_assets`).

:func:`prepare_load` asks srdp again and applies everything srdp.toml says before dlt runs;
:class:`PreparedLoad` then runs dlt and turns a failure whose text holds a secret into
:class:`SrdpDltLoadError`, redacted, without dlt's exception attached, and dlt's refusal of a type
change under ``raw_validated`` into :class:`SrdpDltValidationError`, which says what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from dlt.common.pipeline import LoadInfo
from dlt.extract import DltResource
from dlt.pipeline.pipeline import Pipeline

from srdp.ingest.dlt import rules
from srdp.ingest.dlt.redact import secret_free_logs

if TYPE_CHECKING:
    from srdp.ingest.dlt.destination import DltDestination

__all__ = ["LOGGER", "PreparedLoad", "prepare_load"]

#: Where relaxed rules are logged outside Dagster (one warning per rule on every load).
LOGGER = logging.getLogger("srdp.ingest.dlt")

T = TypeVar("T")


@dataclass(frozen=True)
class PreparedLoad:
    """A load srdp allows now: ``destination`` as srdp describes it at this moment, the pipeline,
    and the keyword arguments of the dlt call under the rules."""

    destination: DltDestination
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
            failure = self.destination.secret_free_failure(self.pipeline, error)
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


def prepare_load(
    target: DltDestination,
    pipeline: Pipeline,
    resources: Iterable[DltResource],
    arguments: Mapping[str, Any],
    log: logging.Logger | Any = LOGGER,
) -> PreparedLoad:
    """Everything before dlt runs, in order: read srdp.toml and check the writer again (srdp
    errors surface as ``duckdb.Error``), check the pipeline's destination, apply the rules to
    ``resources`` and ``arguments`` (refusals change nothing in the lake), log one warning per
    relaxed rule on ``log``, create the lake if missing."""
    current = target.refresh()
    current.check_pipeline(pipeline)
    allowed = current.load_arguments(resources, **arguments)
    current.log_warnings(log)
    current.prepare()
    return PreparedLoad(current, pipeline, allowed)
