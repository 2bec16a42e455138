"""srdp's command line: ``python -m srdp <command> ...``, one argparse subcommand per command.

Commands:

* ``dbt-profile --config srdp.toml [--target dev] [--profile srdp] [--schema S]``: prints the
  dbt-duckdb profiles.yml that points dbt at srdp (:mod:`srdp.dbt.profile`).
* ``extension-path``: prints the srdp extension file this environment loads, once it has
  loaded it (:mod:`srdp.install`).
* ``extension-directory``: prints DuckDB's extension directory srdp uses (filled from the
  extension wheels first, outside a checkout), for a DuckDB CLI's ``SET extension_directory``.
* ``dbt-package-path``: prints the folder of srdp's dbt package, for a dbt project's
  ``packages.yml`` (``- local: <path>``).
* ``doctor [--config srdp.toml] [--role writer|reader] [--create] [--secret-env NAME ...]``:
  checks versions, extension, extension directory, definition, the CREATE SECRET statements of
  the named environment variables, each catalog's attach (with those secrets) and the importable
  extras (:mod:`srdp.doctor`); read-only unless ``--create``.

A command is a function ``(args) -> int`` registered by an ``_add_<command>`` function in
:func:`parser`; errors a command expects are printed as ``srdp <command>: <message>`` with exit
status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "parser"]


class CommandError(Exception):
    """An error a command reports as one line, without a traceback."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m srdp", description="srdp command line")
    commands = top.add_subparsers(dest="command", required=True, metavar="command")
    _add_dbt_profile(commands)
    _add_extension_path(commands)
    _add_extension_directory(commands)
    _add_dbt_package_path(commands)
    _add_doctor(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except CommandError as error:
        print(f"srdp {args.command}: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # a file a command reads or writes: the OS's words name it
        print(f"srdp {args.command}: {error}", file=sys.stderr)
        return 1


def _add_dbt_profile(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "dbt-profile",
        help="print a dbt-duckdb profiles.yml that points dbt at srdp",
        description="Prints a dbt-duckdb profiles.yml for srdp.toml to stdout; it writes nothing "
        "into the srdp checkout and downloads nothing.",
    )
    command.add_argument("--config", required=True, type=Path, help="srdp.toml (made absolute)")
    command.add_argument("--target", default="dev", help="name of the profile's output (default: dev)")
    command.add_argument("--profile", default="srdp", help="profile name, the `profile:` of dbt_project.yml (default: srdp)")
    command.add_argument("--schema", help="default schema of the models; needed when srdp.toml gives dbt several")
    command.set_defaults(run=_dbt_profile)


def _dbt_profile(args: argparse.Namespace) -> int:
    import duckdb

    from srdp.dbt.profile import DbtProfileError, render_profile

    try:
        text = render_profile(args.config, target=args.target, profile=args.profile, schema=args.schema)
    except (DbtProfileError, duckdb.Error, OSError) as error:  # OSError: srdp.connect's missing extension
        raise CommandError(str(error)) from error
    sys.stdout.write(text)
    return 0


def _add_extension_path(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "extension-path",
        help="print the srdp extension file this environment loads",
        description="Prints the absolute path of the srdp extension file srdp.connect() loads: "
        "$SRDP_EXTENSION, else the file shipped in srdp's wheel, else a checkout's release build. "
        "Fails when that file does not exist or does not load.",
    )
    command.set_defaults(run=_extension_path)


def _extension_path(args: argparse.Namespace) -> int:
    import duckdb

    from srdp.doctor import srdp_message
    from srdp.install import find_extension, not_found_message

    location = find_extension()
    if not location.path.is_file():
        raise CommandError(not_found_message(location.path))
    # The file must load (a truncated copy, a wrong file or an unreadable one is named here,
    # not when a later tool loads it).
    con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                                             "autoload_known_extensions": "false"})
    try:
        con.execute(f"LOAD '{str(location.path).replace(chr(39), chr(39) * 2)}'")
    except duckdb.Error as error:
        raise CommandError(f"{location.path} ({location.source}) does not load: {srdp_message(error)}") from error
    finally:
        con.close()
    print(location.path.resolve())
    return 0


def _add_extension_directory(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "extension-directory",
        help="print DuckDB's extension directory srdp uses (ducklake, sqlite, postgres, httpfs)",
        description="Prints the absolute path of the extension directory srdp.connect() sets: "
        "$SRDP_EXTENSION_DIR, a checkout's .duckdb/extensions, or this environment's cache folder, "
        "which is filled from the duckdb-extension-* wheels first (offline).",
    )
    command.set_defaults(run=_extension_directory)


def _extension_directory(args: argparse.Namespace) -> int:
    from srdp.extension_wheels import ExtensionWheelError, missing
    from srdp.install import extension_directory

    try:
        directory = extension_directory()
    except (ExtensionWheelError, OSError) as error:
        raise CommandError(str(error)) from error
    absent = missing(directory)
    if absent:
        raise CommandError(f"{directory} lacks {', '.join(absent)}")
    print(directory.resolve())
    return 0


def _add_dbt_package_path(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "dbt-package-path",
        help="print the folder of srdp's dbt package (packages.yml: `- local: <path>`)",
        description="Prints the absolute path of srdp's dbt package (dbt_project.yml, macros/): "
        "the copy in srdp's wheel, or a checkout's dbt/ folder.",
    )
    command.set_defaults(run=_dbt_package_path)


def _dbt_package_path(args: argparse.Namespace) -> int:
    from srdp.install import dbt_package_path

    path = dbt_package_path()
    if not (path / "dbt_project.yml").is_file():
        raise CommandError(f"srdp's dbt package not found at {path}")
    print(path.resolve())
    return 0


def _add_doctor(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "doctor",
        help="check that this environment can use srdp with a definition file",
        description="Prints the versions, then one line per check: the extension directory, the "
        "extension file (found, loads), the definition file and its catalogs, each catalog's "
        "attach as writer and as reader, and which extras (dagster, dbt, dlt, ingest, pandas, "
        "polars) are importable. Read-only: a lake that does not exist yet is reported as not "
        "created, and only --create lets the writer's attach create it. Exit status 0 when every "
        "check passes, 1 otherwise.",
    )
    command.add_argument("--config", type=Path, help="srdp.toml (default: $SRDP_CONFIG or ./srdp.toml)")
    command.add_argument(
        "--role", choices=["writer", "reader"], action="append",
        help="check only this role's attach (repeatable; default: writer, then reader)",
    )
    command.add_argument(
        "--create", action="store_true",
        help="let the writer's attach create each lake that does not exist yet (default: report it, create nothing)",
    )
    command.add_argument(
        "--secret-env", action="append", metavar="NAME", default=[],
        help="an environment variable holding one CREATE SECRET statement (as Dagster's secrets=[dg.EnvVar(NAME)] "
        "reads it), run before each attach; repeatable. The statement is never shown",
    )
    command.set_defaults(run=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from srdp.doctor import ROLES, report

    failed, total = report(
        args.config, tuple(args.role or ROLES), lambda line: print(line, flush=True), args.create, args.secret_env
    )
    if failed:
        raise CommandError(f"{failed} of {total} checks failed")
    print(f"all {total} checks passed")
    return 0
