"""The one spelling of the srdp.toml path in srdp's Python API: ``config=``.

``srdp.connect``, ``srdp.ingest.dlt.destination``, ``SrdpDbtTranslator`` and ``srdp_table`` take
``config=``; the Dagster resources and ``srdp_definitions`` / ``add_srdp_definitions`` took
``config_path=`` and now take ``config=`` too. ``config_path=`` is accepted for one release with a
DeprecationWarning (and, on the resources, still readable as an attribute), so existing code and
run config keep working while they move.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any

import dagster as dg
from pydantic import Field, model_validator

__all__ = [
    "SrdpConfigFile",
    "config_path_deprecated",
    "resolve_config_argument",
    "resolve_resource_config",
    "same_file",
]

#: Frames of these packages are skipped when the warning looks for the caller's line.
_INTERNAL = (
    os.sep + "dagster" + os.sep,
    os.sep + "pydantic" + os.sep,
    os.sep + "pydantic_core" + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)


def config_path_deprecated(where: str) -> str:
    """The DeprecationWarning's text for ``config_path=`` given to ``where``."""
    return (
        f"{where}: config_path= is deprecated and will be removed in the next release; write config= "
        "(the srdp.toml path is config= across srdp's Python API: srdp.connect, "
        "srdp.ingest.dlt.destination, SrdpDbtTranslator, srdp_table)"
    )


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two spellings of a path name one file: ``srdp.toml`` and ``/abs/srdp.toml`` from
    that folder, a symlink and its target (both existing), or the same absolute path."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b)):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist: different spellings of different files
        return False


def _warn(where: str) -> None:
    """Warns at the first frame outside Dagster, pydantic and this package (the user's line)."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is _warn's caller, frame 1
    while frame is not None and any(part in frame.f_code.co_filename for part in _INTERNAL):
        frame, level = frame.f_back, level + 1
    warnings.warn(config_path_deprecated(where), DeprecationWarning, stacklevel=level)


def resolve_resource_config(where: str, data: Any) -> Any:
    """A resource's fields before validation, with ``config`` set from ``config_path`` (warned)
    and both set to the same path, so ``.config_path`` still reads it this release and a copy of
    the resource (which passes both) warns no more."""
    if not isinstance(data, Mapping):
        return data
    config, old = data.get("config"), data.get("config_path")
    if old is not None and config is not None and not same_file(str(old), str(config)):
        raise ValueError(
            f"{where}: config= and config_path= name different files ({str(config)!r}, {str(old)!r}); "
            "give config= only"
        )
    if old is not None and config is None:
        _warn(where)
        config = old
    if config is None:
        raise ValueError(f"{where}: config= is required (the srdp.toml path)")
    return {**data, "config": config, "config_path": config}


def resolve_config_argument(
    where: str, config: str | os.PathLike[str] | None, config_path: str | os.PathLike[str] | None
) -> str | os.PathLike[str]:
    """A function's ``config`` from ``config=`` or the deprecated ``config_path=`` (warned)."""
    if config_path is not None:
        if config is not None and not same_file(config, config_path):
            raise TypeError(f"{where}() got config= and config_path= naming different files; give config= only")
        _warn(where)
        config = config_path
    if config is None:
        raise TypeError(f"{where}() needs config= (the srdp.toml path)")
    return config


class SrdpConfigFile(dg.Config):
    """The srdp.toml path of a Dagster resource (``SrdpIOManager``, ``SrdpResource``): ``config``,
    and ``config_path`` its deprecated spelling, resolved by :func:`resolve_resource_config`."""

    config: str | None = Field(default=None, description="The srdp.toml path (required).")
    """The srdp.toml path: required, always set once built (``config_path=`` is its deprecated
    spelling, accepted this release)."""
    config_path: str | None = Field(default=None, description="Deprecated spelling of config (this release only).")

    @model_validator(mode="before")
    @classmethod
    def _config_from_config_path(cls, data: Any) -> Any:
        return resolve_resource_config(cls.__name__, data)
