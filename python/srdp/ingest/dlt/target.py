"""What srdp says about one dlt dataset, as a value: :class:`DltTarget` and the options it was asked with.

This module is the bottom of ``srdp.ingest.dlt``: it imports none of the steps (credentials,
rules, guard, redact, load), and every step takes a :class:`DltTarget`. The entry points in
:mod:`.destination` build one from ``srdp_dlt_destination`` and add the verbs
(:class:`~srdp.ingest.dlt.destination.DltDestination`), so no step imports them back.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from srdp.ingest.dlt.errors import SrdpDltError

__all__ = ["OPTION_NAMES", "DestinationOptions", "DltTarget", "Password"]


class Password:
    """A password that never shows itself: ``repr`` and ``str`` are ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise SrdpDltError("srdp.ingest.dlt: catalog_password must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__


@dataclass(frozen=True)
class DestinationOptions:
    """The keyword arguments of :func:`destination` (and of :func:`pipeline`), typed once."""

    config: str | os.PathLike[str] | None = None
    """The srdp.toml path; ``None``: srdp finds the file itself (``SRDP_CONFIG``, ``./srdp.toml``)."""
    layer: str | None = None
    """The layer loaded (default ``raw``, unless ``schema_name`` names the schema)."""
    schema_name: str | None = None
    project: str | None = None
    """A tenant project, whose datasets are ``<project>_<layer>``."""
    writer: str = "dlt"
    catalog_user: str | None = None
    """PostgreSQL catalogs: the user dlt connects as (default: the ``user`` of the libpq string)."""
    catalog_password: Password | None = None
    """PostgreSQL catalogs: the writer role's password, shown as ``'***'``."""
    storage_credentials: Any = field(default=None, repr=False)
    """Object-store data paths: dlt's credentials for the storage; ``None``: dlt resolves its own."""

    def srdp_arguments(self) -> dict[str, str | None]:
        """The named arguments of ``srdp_dlt_destination`` (``None`` = srdp's default)."""
        return {"layer": self.layer, "schema_name": self.schema_name, "project": self.project, "writer": self.writer}



#: The keyword arguments :func:`srdp.ingest.dlt.pipeline` hands to :func:`srdp.ingest.dlt.destination`.
OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(DestinationOptions))


@dataclass(frozen=True)
class DltTarget:
    """Where and how dlt loads one dataset of one catalog: one row of ``srdp_dlt_destination``,
    data only (:class:`~srdp.ingest.dlt.destination.DltDestination` adds the verbs).

    Build one with :func:`srdp.ingest.dlt.destination`. ``write_disposition`` and ``schema_contract`` are what the
    rules impose (``None`` = not constrained, because the rule is relaxed or the layer is not raw);
    ``warnings`` has one text per relaxed rule, logged on every load.
    """

    catalog: str
    attach_name: str
    catalog_url: str | None
    metadata_schema: str | None
    storage_url: str
    dataset_name: str
    layer: str
    writer: str
    owner: str | None
    write_disposition: str | None
    schema_contract: Mapping[str, str] | None
    data_inlining_row_limit: int
    warnings: tuple[str, ...]
    config_path: str
    """The srdp.toml every decision came from (absolute)."""
    destination_type: str = "ducklake"
    """``ducklake`` (the strict way, into DuckLake) or ``filesystem`` (the landing zone)."""
    file_format: str | None = None
    """The landing zone's file format (``parquet``); ``None`` for DuckLake."""
    layout: str | None = None
    """dlt's filesystem layout in the landing zone; ``None`` for DuckLake."""
    promote_into: str | None = None
    """The landing zone: the DuckLake schema its loads are promoted into (by the IO manager)."""
    options: DestinationOptions = field(default_factory=DestinationOptions, compare=False)
    """What :func:`destination` was asked, so :meth:`refresh` can ask again; credentials included."""
    relax_with: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Per rule, srdp's text for the line that relaxes it (``srdp_rules``' ``relax_with``)."""

    @property
    def catalog_user(self) -> str | None:
        """PostgreSQL catalogs: the user dlt connects as (default: the ``user`` of the libpq string in
        srdp.toml, which usually names none because the DuckDB secrets hold it)."""
        return self.options.catalog_user

    @property
    def catalog_password(self) -> Password | None:
        """PostgreSQL catalogs: the writer role's password (shown as ``'***'``), only ever handed to
        dlt's in-memory credentials."""
        return self.options.catalog_password

    @property
    def storage_credentials(self) -> Any:
        """Object-store data paths: dlt's credentials for the storage (``AwsCredentials(...)``);
        ``None`` lets dlt resolve them from its own configuration."""
        return self.options.storage_credentials

    @property
    def is_postgres(self) -> bool:
        """The catalog keeps its metadata in PostgreSQL (dlt then needs a user and a password)."""
        return (self.catalog_url or "").startswith(("postgres:", "postgresql:"))

    @property
    def is_landing(self) -> bool:
        """The landing zone: dlt's filesystem destination, outside DuckLake (the quarantine way)."""
        return self.destination_type == "filesystem"

    @property
    def landing_url(self) -> str:
        """The landing zone's dataset folder, ``<landing_path>/<dataset>/`` (a URL)."""
        return self.storage_url.rstrip("/") + "/" + self.dataset_name + "/"

    def log_warnings(self, log: logging.Logger | Any) -> None:
        """Logs one warning per relaxed rule (``log.warning``); called on every load."""
        for warning in self.warnings:
            log.warning(warning)
