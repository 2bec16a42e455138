"""The snapshot an input reads: the one its upstream materialization(s) committed.

srdp's IO manager records each write's DuckLake snapshot as materialization metadata
``srdp/snapshot_id``; an input reads the upstream table ``AT (VERSION => <snapshot>)`` of the
newest materialization of the partitions it depends on (or of the asset), so that rows written
later, by anything, are not in it. A partition never materialized through srdp (or a
materialization without the key) reads the latest version instead.

The lookup is a query of Dagster's event log. :class:`PinLookup` runs it, and then writes the
input's log line (an event in Dagster's storage), in a thread while DuckDB attaches, loads the
table's metadata and reads, which releases the GIL: the step waits for the slower of the two, not
for their sum.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

__all__ = ["SNAPSHOT_KEY", "PinLookup", "PinRequest", "pin_given", "pin_request", "pinned_snapshot"]

#: Materialization metadata key of the DuckLake snapshot a write committed.
SNAPSHOT_KEY = "srdp/snapshot_id"

#: Materializations read per wanted partition by the first query when several are wanted: a
#: partition materialized more often than this since another one's latest is looked up by its
#: own latest record instead. One wanted partition reads one record, its latest.
RECORDS_PER_PARTITION = 4


class PinLookup:
    """Finds an input's snapshot, then writes its log line, in a thread of its own.

    The step's thread meanwhile hands the line over (:meth:`log_as`: the table and slice; the
    lookup adds the snapshot), attaches and loads the table's metadata, then waits for the
    snapshot alone (:meth:`snapshot`); the line is written while DuckDB works. Every lookup
    is closed (:meth:`close`, in a ``finally``): it waits for the thread, which writes no line
    when none was handed over or the lookup failed.
    """

    def __init__(self, find: Callable[[], int | None], log: Callable[[str], None]) -> None:
        self._found = threading.Event()
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._snapshot: int | None = None
        self._error: BaseException | None = None
        self.log_error: BaseException | None = None

        def run() -> None:
            try:
                self._snapshot = find()
            except BaseException as error:  # raised by snapshot(), on the step's thread
                self._error = error
            finally:
                self._found.set()
            line = self._lines.get()
            if line is None or self._error is not None:
                return
            try:
                log(line + (f" at snapshot {self._snapshot}" if self._snapshot is not None else ""))
            except BaseException as error:  # raised by close()'s caller
                self.log_error = error

        self._thread = threading.Thread(target=run, name="srdp-input", daemon=True)
        self._thread.start()

    def log_as(self, line: str) -> None:
        """The log line (without the snapshot), written once the snapshot is known."""
        self._lines.put(line)

    def snapshot(self) -> int | None:
        """Waits for the lookup: its snapshot, or its exception."""
        self._found.wait()
        if self._error is not None:
            raise self._error
        return self._snapshot

    def close(self) -> None:
        """Waits for the thread (and the line, when one was handed over); see ``log_error``."""
        self._lines.put(None)  # ends a thread still waiting for its line; else never read
        self._thread.join()


@dataclass(frozen=True)
class PinRequest:
    """What the lookup needs, read from the input context on the step's own thread."""

    instance: Any  # dg.DagsterInstance
    asset_key: dg.AssetKey
    partitions: Sequence[str] | None  # None: the asset is not partitioned


def pin_request(context: dg.InputContext, pin_inputs: bool) -> int | PinRequest | None:
    """For an asset input: its ``snapshot_id`` metadata when given, None when nothing is pinned
    (``pin_inputs`` off, no instance), else what :func:`pinned_snapshot` looks up. None for an op
    input (no asset key)."""
    if not context.has_asset_key:
        return None
    given = (context.definition_metadata or {}).get("snapshot_id")
    if given is not None:
        return int(given)
    if not pin_inputs:
        return None
    try:
        instance = context.instance
    except dg.DagsterInvariantViolationError:
        instance = None  # build_input_context(...) without an instance, in unit tests
    if instance is None:
        context.log.info("no Dagster instance: reading the latest version (no snapshot to pin)")
        return None
    partitions = [str(k) for k in context.asset_partition_keys] if context.has_asset_partitions else None
    return PinRequest(instance, context.asset_key, partitions)


def pin_given(pin: int | PinRequest | None) -> int | None:
    """The snapshot of a pin that needs no lookup (given, or None)."""
    return None if isinstance(pin, PinRequest) else pin


def pinned_snapshot(request: PinRequest) -> int | None:
    """The newest ``srdp/snapshot_id`` of the latest materialization of each wanted partition (or
    of the asset), or None when one of them has none (read the latest version)."""
    instance, key, wanted = request.instance, request.asset_key, request.partitions
    if wanted is None:
        event = instance.get_latest_materialization_event(key)
        return _snapshot_of([event] if event else [])
    # One wanted partition: its newest record is its latest (each record read is deserialized
    # whole, metadata and all, so read no more than needed).
    limit = 1 if len(wanted) <= 1 else len(wanted) * RECORDS_PER_PARTITION
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=list(wanted)), limit=limit
    ).records
    latest: dict[str, Any] = {}
    for record in records:  # newest first
        if record.partition_key is not None and record.partition_key not in latest:
            latest[record.partition_key] = record.event_log_entry
    if set(latest) != set(wanted):
        # Some partition's latest materialization is older than the records read (others were
        # materialized many times since), or there is none: look each one's latest up exactly.
        latest = _latest_by_partition(instance, key, wanted)
        if set(latest) != set(wanted):
            return None  # some partition was never materialized: read the latest version
    return _snapshot_of(list(latest.values()))


def _latest_by_partition(instance: Any, key: dg.AssetKey, wanted: Sequence[str]) -> dict[str, Any]:
    """Each wanted partition's latest materialization event, by its storage id."""
    ids = instance.get_latest_storage_id_by_partition(key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(wanted))
    if set(ids) != set(wanted):
        return {}  # some partition was never materialized: nothing to fetch
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, storage_ids=list(ids.values())), limit=len(ids)
    ).records
    return {r.partition_key: r.event_log_entry for r in records if r.partition_key is not None}


def _snapshot_of(entries: list[Any]) -> int | None:
    snapshots = []
    for entry in entries:
        materialization = entry.asset_materialization if entry else None
        value = materialization.metadata.get(SNAPSHOT_KEY) if materialization else None
        if value is None:
            return None
        snapshots.append(int(getattr(value, "value", value)))
    return max(snapshots) if snapshots else None
