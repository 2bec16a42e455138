"""srdp's command line: ``python -m srdp <command> ...``, one argparse subcommand per command.

Commands:

* ``dbt-profile --config srdp.toml [--target dev] [--profile srdp] [--schema S]``: prints the
  dbt-duckdb profiles.yml that points dbt at srdp (:mod:`srdp.dbt.profile`).

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
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except CommandError as error:
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

    if not args.config.is_file():
        raise CommandError(f"no such file: {args.config}")
    try:
        text = render_profile(args.config, target=args.target, profile=args.profile, schema=args.schema)
    except (DbtProfileError, duckdb.Error) as error:
        raise CommandError(str(error)) from error
    sys.stdout.write(text)
    return 0
