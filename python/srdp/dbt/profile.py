"""The dbt-duckdb profile that points dbt at srdp, rendered from ``srdp.toml``.

>>> print(render_profile(Path("srdp.toml")))      # doctest: +SKIP

dbt's target database is the lake: ``database:`` is the catalog of the chosen schema, and
:mod:`srdp.dbt.plugin` attaches it through srdp (writer role) and ``USE``s it when dbt-duckdb
opens its connection, so ``target.database``, sources without ``database:``, stored test
failures and two-part names all mean the lake, and ``adapter.is_ducklake()`` is true (the
``attach:`` entry declares the alias to dbt-duckdb; the plugin has attached it before
dbt-duckdb's ``ATTACH IF NOT EXISTS`` runs, so that never attaches anything). The project needs
no ``database:``, no hooks and no pre-hooks: the srdp package's dispatched overrides check
ownership before the first write and label every node's DuckLake commit with author ``dbt``.

The profile leaves the srdp checkout alone: DuckDB's own database is in memory, srdp is
``LOAD``ed from its file by the plugin (never ``INSTALL``ed, which would copy it into the
extension directory), the extensions DuckLake needs are autoloaded from the extension directory
and nothing is ever downloaded (``autoinstall_known_extensions: false``). All paths are absolute,
so dbt may run from any folder.

The default schema (``schema:``, where models without a custom schema are built) is the one
schema ``srdp.toml`` gives to the writer ``dbt``, as srdp decides it (``srdp_check_writer``);
with several, ``schema`` must name one of them. A pattern (``[catalogs.lake.schemas."dbt_*"]``)
names no schema: ``schema`` may be any name a pattern gives to ``dbt`` (``dbt_alice``).

When that schema's catalog needs DuckDB secrets, the profile has dbt-duckdb's ``secrets:`` block
(:func:`secrets_block`): the PostgreSQL secret named by the catalog's ``writer_secret`` (user and
password; the metadata connection string gives host, port and database) and, for an ``s3://``
data path, an S3 secret scoped to it. Every value comes from an environment variable through
dbt's ``env_var()``; the password and the S3 secret key through ``DBT_ENV_SECRET_*`` variables,
which dbt scrubs from its logs. The profile holds no credential, and dbt-duckdb creates the
secrets as temporary ones (never persisted).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import duckdb

import srdp
from srdp import install
from srdp.doctor import srdp_message

__all__ = [
    "EXTENSION_LOOKUP",
    "DbtProfileError",
    "OwnedSchema",
    "dbt_schemas",
    "env_prefix",
    "extension_not_found",
    "render_profile",
    "secret_variables",
    "secrets_block",
]

#: Where srdp looks for its extension file (:func:`srdp.install.find_extension`), first match wins.
EXTENSION_LOOKUP = (
    "srdp looks at $SRDP_EXTENSION, then the file its wheel ships, then a checkout's "
    "build/release/srdp.duckdb_extension; `python -m srdp doctor` shows what it finds"
)


class DbtProfileError(Exception):
    """The profile cannot be rendered (no or several schemas for dbt, no extension)."""


def extension_not_found(path: Path) -> str:
    """The extension file ``path`` that srdp's lookup gave is missing: what to do, where srdp looks."""
    return f"{install.not_found_message(path)} ({EXTENSION_LOOKUP})"


@dataclass(frozen=True)
class OwnedSchema:
    """A schema of ``srdp.toml`` that the writer may write."""

    catalog: str
    schema: str


def dbt_schemas(config: Path, writer: str = "dbt") -> list[OwnedSchema]:
    """The schemas ``config`` gives to ``writer``, in file order (ownership as srdp checks it).

    srdp reads and validates the file first (``srdp_catalogs``), so a file that is missing, a
    folder, unreadable, not UTF-8, not TOML or not a valid definition is one
    :class:`DbtProfileError` in srdp's words (file, line, key), never a Python traceback."""
    con = srdp.connect(config=config)
    try:
        try:
            catalogs = srdp.call(con, "srdp_catalogs")
        except duckdb.Error as error:
            message = srdp_message(error).removeprefix("srdp_catalogs: ")
            raise DbtProfileError(message.replace("(from SET srdp_config)", "(from --config)")) from error
        if not catalogs:
            raise DbtProfileError(
                f"{config} defines no catalog; define [catalogs.<name>] with a schema whose writer is {writer!r}"
            )
        with config.open("rb") as f:
            declared = tomllib.load(f).get("catalogs", {})
        owned = []
        for catalog, definition in declared.items():
            for schema in definition.get("schemas", {}):
                if schema.endswith("*"):
                    continue  # a pattern ("dbt_*") names no schema; --schema picks one it matches
                try:
                    (row,) = srdp.call(con, "srdp_check_writer", catalog, schema, writer)
                except duckdb.Error:
                    continue  # owned by another writer or by nobody: not dbt's
                if row["owner"] == writer:
                    owned.append(OwnedSchema(catalog, schema))
        return owned
    finally:
        con.close()


def render_profile(
    config: Path,
    *,
    target: str = "dev",
    profile: str = "srdp",
    schema: str | None = None,
    writer: str = "dbt",
) -> str:
    """profiles.yml text for ``config`` (made absolute), with one output named ``target``.

    Every value is a double-quoted YAML string (``profile`` and ``target`` too, whatever their
    characters), and the header's comment lines escape line breaks, so the text always loads back
    as YAML with exactly the names given; an empty name is a :class:`DbtProfileError`."""
    for option, name in (("--profile", profile), ("--target", target)):
        if not name.strip():
            raise DbtProfileError(f"{option} is empty; give the name dbt should use")
    config = Path(os.path.abspath(config))
    extension = srdp.extension_path().resolve()
    if not extension.is_file():
        raise DbtProfileError(extension_not_found(extension))
    owned = dbt_schemas(config, writer)
    chosen = _choose(owned, schema, config, writer)
    options = "\n".join(f"        {key}: {_scalar(value)}" for key, value in srdp.duckdb_config().items())
    secrets = secrets_block(config, chosen.catalog)
    return f"""\
# dbt-duckdb profile for srdp, from `python -m srdp dbt-profile --config {_comment(str(config))}`.
# dbt's target database is the lake {_comment(chosen.catalog)}: the srdp.dbt.plugin plugin LOADs srdp from its
# file and attaches {_comment(chosen.catalog)} through srdp (writer) and USEs it on every connection; the
# `attach:` entry only declares it to dbt-duckdb (already attached: it never runs). Nothing is
# written into the srdp checkout and nothing is downloaded (DuckLake's extensions are autoloaded
# from the extension directory, autoinstall is off). srdp's Python package must be importable by dbt.
#
# dbt_project.yml of a project that uses it (its packages.yml: `- local: {_comment(str(install.dbt_package_path()))}`,
# the dbt package `python -m srdp dbt-package-path` prints); no database:, no hooks:
#   profile: {_string(profile)}
#   dispatch:                     # srdp's overrides: ownership check, commit author, DuckLake replaces
#     - macro_namespace: dbt
#       search_order: [<project>, srdp, dbt]
{_string(profile)}:
  target: {_string(target)}
  outputs:
    {_string(target)}:
      type: duckdb
      path: ":memory:"
      database: {_scalar(chosen.catalog)}
      schema: {_scalar(chosen.schema)}
      threads: 1
      attach:
        - path: {_scalar("ducklake:srdp:" + chosen.catalog)}
          alias: {_scalar(chosen.catalog)}
          is_ducklake: true
      config_options:
{options}
{secrets}      plugins:
        - module: srdp.dbt.plugin
          alias: srdp
          config:
            extension: {_scalar(str(extension))}
            catalog: {_scalar(chosen.catalog)}
      settings:
        srdp_config: {_scalar(str(config))}
"""


def env_prefix(name: str) -> str:
    """The environment variable prefix of a secret name: upper case, runs of other characters as
    ``_`` (``lake_writer`` -> ``LAKE_WRITER``)."""
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") or "SRDP"


def secret_variables(config: Path, catalog: str) -> dict[str, list[str]]:
    """The environment variables without a default that the profile's ``secrets:`` block reads
    for ``catalog`` of ``config``, per DuckDB secret it creates (empty when it needs none)."""
    with config.open("rb") as f:
        definition = tomllib.load(f).get("catalogs", {}).get(catalog, {})
    writer_secret = definition.get("writer_secret")
    prefix = env_prefix(writer_secret) if writer_secret else f"{env_prefix(catalog)}_WRITER"
    found: dict[str, list[str]] = {}
    if writer_secret:
        found[str(writer_secret)] = [f"{prefix}_USER", f"DBT_ENV_SECRET_{prefix}_PASSWORD"]
    if _data_path(config, catalog).startswith("s3://"):
        found[f"{prefix.lower()}_s3"] = [f"{prefix}_S3_KEY_ID", f"DBT_ENV_SECRET_{prefix}_S3_SECRET"]
    return found


def secrets_block(config: Path, catalog: str) -> str:
    """dbt-duckdb's ``secrets:`` lines for ``catalog`` of ``config`` (empty when it needs none):
    the PostgreSQL secret its ``writer_secret`` names, and an S3 secret for an ``s3://`` data
    path, every value through ``env_var()`` (see the module doc)."""
    with config.open("rb") as f:
        definition = tomllib.load(f).get("catalogs", {}).get(catalog, {})
    writer_secret = definition.get("writer_secret")
    data_path = _data_path(config, catalog)
    prefix = env_prefix(writer_secret) if writer_secret else f"{env_prefix(catalog)}_WRITER"
    entries: list[list[tuple[str, str]]] = []
    if writer_secret:
        entries.append([
            ("type", "postgres"),
            ("name", _scalar(writer_secret)),
            ("user", _env(f"{prefix}_USER")),
            ("password", _env(f"DBT_ENV_SECRET_{prefix}_PASSWORD")),
        ])
    if data_path.startswith("s3://"):
        entries.append([
            ("type", "s3"),
            ("name", _scalar(f"{prefix.lower()}_s3")),
            ("scope", _scalar(data_path)),
            ("key_id", _env(f"{prefix}_S3_KEY_ID")),
            ("secret", _env(f"DBT_ENV_SECRET_{prefix}_S3_SECRET")),
            ("region", _env(f"{prefix}_S3_REGION", "us-east-1")),
            ("endpoint", _env(f"{prefix}_S3_ENDPOINT", "s3.amazonaws.com")),
            ("url_style", _env(f"{prefix}_S3_URL_STYLE", "vhost")),
            ("use_ssl", _env(f"{prefix}_S3_USE_SSL", "true")),
        ])
    if not entries:
        return ""
    lines = [
        "      # The DuckDB secrets srdp's writer attach needs, created by dbt-duckdb on its connection",
        "      # (temporary, never persisted); every value comes from the environment.",
        "      secrets:",
    ]
    for entry in entries:
        lines += [f"        {'- ' if i == 0 else '  '}{key}: {value}" for i, (key, value) in enumerate(entry)]
    return "\n".join(lines) + "\n"


def _data_path(config: Path, catalog: str) -> str:
    """The catalog's data path as srdp resolves it (``srdp_catalogs``)."""
    con = srdp.connect(config=config)
    try:
        rows = srdp.call(con, "srdp_catalogs")
    finally:
        con.close()
    return next(str(r["data_path"]) for r in rows if r["catalog"] == catalog)


def _env(variable: str, default: str | None = None) -> str:
    """``"{{ env_var('VARIABLE') }}"`` (with a default when given), as a YAML string."""
    arguments = repr(variable) if default is None else f"{variable!r}, {default!r}"
    return _scalar(f"{{{{ env_var({arguments}) }}}}")


def _choose(owned: list[OwnedSchema], schema: str | None, config: Path, writer: str) -> OwnedSchema:
    names = ", ".join(f"{o.catalog}.{o.schema}" for o in owned) or "none"
    if schema is not None:
        for candidate in owned:
            if candidate.schema == schema:
                return candidate
        by_pattern = _owned_by_pattern(config, schema, writer)
        if by_pattern is not None:
            return by_pattern
        raise DbtProfileError(f"schema {schema!r} is not given to writer {writer!r} in {config} (it owns: {names})")
    if len(owned) != 1:
        detail = "no schema" if not owned else f"several schemas ({names}); pass --schema with one of them"
        raise DbtProfileError(f"{config} gives {writer!r} {detail}")
    return owned[0]


def _string(value: str) -> str:
    """A double-quoted YAML string of any text (JSON's escapes, all of which YAML reads; every
    non-ASCII character escaped, so no YAML line break such as U+2028 is folded)."""
    return json.dumps(value)


def _comment(text: str) -> str:
    """``text`` for a ``#`` comment line: line breaks and other control characters escaped."""
    return _BREAKS.sub(lambda m: json.dumps(m.group())[1:-1], text)


_BREAKS = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def _owned_by_pattern(config: Path, schema: str, writer: str) -> OwnedSchema | None:
    """``schema`` of the one catalog whose pattern (``[catalogs.<c>.schemas."dbt_*"]``) gives it
    to ``writer``, as ``srdp_check_writer`` decides it; ``None`` when no catalog or several do."""
    with config.open("rb") as f:
        declared = tomllib.load(f).get("catalogs", {})
    con = srdp.connect(config=config)
    try:
        found = []
        for catalog, definition in declared.items():
            if not any(key.endswith("*") for key in definition.get("schemas", {})):
                continue
            try:
                (row,) = srdp.call(con, "srdp_check_writer", catalog, schema, writer)
            except duckdb.Error:
                continue
            if row["owner"] == writer:
                found.append(OwnedSchema(catalog, schema))
        return found[0] if len(found) == 1 else None
    finally:
        con.close()


def _scalar(value: str) -> str:
    """A YAML scalar: true/false as booleans, anything else as a double-quoted (JSON) string."""
    return value if value in ("true", "false") else json.dumps(value)
