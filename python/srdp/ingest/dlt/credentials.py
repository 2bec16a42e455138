"""dlt's DuckLake credentials for a destination srdp described: catalog, storage, DuckDB settings.

srdp.toml never holds a password: a PostgreSQL catalog's writer password and an object store's
credentials are given to :func:`srdp.ingest.dlt.destination` and only ever reach dlt's in-memory
credentials built here (:class:`Password` keeps the password out of every ``repr``).
"""

from __future__ import annotations

from dlt.common.configuration.specs.connection_string_credentials import ConnectionStringCredentials
from dlt.common.storages.configuration import FilesystemConfiguration
from dlt.destinations.impl.ducklake.configuration import DuckLakeCredentials

import srdp
from srdp.ingest.dlt.errors import SrdpDltError

from srdp.ingest.dlt.target import DltTarget, Password

__all__ = ["Password", "ducklake_credentials"]


def ducklake_credentials(target: DltTarget) -> DuckLakeCredentials:
    """dlt's DuckLake credentials: the lake srdp attaches, offline, with srdp's inlining limit.

    For a PostgreSQL catalog they carry the metadata schema from srdp.toml and the user and
    password given to :func:`srdp.ingest.dlt.destination`; without a password this raises
    :class:`SrdpDltError`.
    """
    creds = DuckLakeCredentials(
        ducklake_name=target.attach_name,
        metadata_schema=target.metadata_schema,
        catalog=_catalog(target),
        storage=_storage(target),
    )
    settings = srdp.duckdb_config()
    # Applied with SET GLOBAL on each connection dlt opens, before its ATTACH autoloads
    # ducklake: extensions come from srdp's directory and nothing is downloaded.
    creds.global_config = {
        "extension_directory": settings["extension_directory"],
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
        "ducklake_default_data_inlining_row_limit": target.data_inlining_row_limit,
    }
    return creds


def _catalog(target: DltTarget) -> str | ConnectionStringCredentials:
    """dlt's ``catalog``: srdp's URL, plus user and password for PostgreSQL."""
    if not target.is_postgres:
        return target.catalog_url
    catalog = ConnectionStringCredentials(target.catalog_url)
    where = (
        f"catalog {target.catalog!r} keeps its metadata in PostgreSQL ({target.catalog_url}, schema "
        f"{target.metadata_schema!r}) and dlt connects to it itself"
    )
    user = target.catalog_user or catalog.username
    if not user:
        raise SrdpDltError(
            f"srdp.ingest.dlt: {where}, as a user the libpq string in {target.config_path} does not "
            f"name: pass catalog_user=... (the writer role) to srdp.ingest.dlt.destination({target.catalog!r}, ...)"
        )
    if target.catalog_password is None:
        raise SrdpDltError(
            f"srdp.ingest.dlt: {where}, with a password: pass catalog_password=... (the writer role's "
            f"password) to srdp.ingest.dlt.destination({target.catalog!r}, ...); srdp.toml never holds it "
            f"(srdp reads it from the DuckDB secret named by writer_secret)"
        )
    if " " in user or " " in target.catalog_password.reveal():
        # dlt 1.31 writes the catalog URL with spaces unencoded, which libpq refuses.
        raise SrdpDltError(
            f"srdp.ingest.dlt: {where}, and dlt cannot pass a user or password containing a space "
            f"to PostgreSQL (libpq refuses the URL dlt writes); use a writer role without spaces"
        )
    catalog.username = user
    catalog.password = target.catalog_password.reveal()
    return catalog


def _storage(target: DltTarget) -> str | FilesystemConfiguration:
    """dlt's ``storage``: srdp's URL, plus the storage credentials when given."""
    if target.storage_credentials is None:
        return target.storage_url
    if target.storage_url.startswith("file:"):
        raise SrdpDltError(
            f"srdp.ingest.dlt: storage_credentials given, but catalog {target.catalog!r} keeps its data "
            f"in a local folder ({target.storage_url}); leave storage_credentials out"
        )
    _check_quotes(target)
    return FilesystemConfiguration(bucket_url=target.storage_url, credentials=target.storage_credentials)


def _check_quotes(target: DltTarget) -> None:
    """Refuses storage credentials with a single quote in a text field: dlt 1.31 writes them
    unescaped into DuckDB's ``CREATE SECRET`` on every connection, which then fails with a syntax
    error that quotes the rest of the value (part of a secret, in the error, the trace and the
    logs). The error names the field, never its value."""
    creds = target.storage_credentials
    fields = creds.get_resolvable_fields() if hasattr(creds, "get_resolvable_fields") else {}
    for name in fields:
        value = getattr(creds, name, None)
        if isinstance(value, str) and "'" in value:
            raise SrdpDltError(
                f"srdp.ingest.dlt: storage_credentials for catalog {target.catalog!r}: {name} contains "
                f"a single quote, which dlt cannot pass to DuckDB (it writes the value between quotes, "
                f"unescaped, into CREATE SECRET); check the value given (a quote pasted with it?)"
            )
