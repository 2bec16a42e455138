"""Which extra of the srdp wheel installs an optional package, and the error that says so."""

from __future__ import annotations

__all__ = ["EXTRAS", "missing_extra"]

#: Top-level package -> the extra of ``pip install 'srdp[<extra>]'`` that installs it.
EXTRAS: dict[str, str] = {
    "dagster": "dagster",
    "pyarrow": "dagster",
    "dlt": "dlt",
    "dagster_dlt": "ingest",
    "dagster_dbt": "dbt",
    "dbt": "dbt",
    "pandas": "pandas",
    "polars": "polars",
}


def missing_extra(package: str, error: ImportError) -> ImportError:
    """An ImportError naming the extra that installs ``package`` (raise it ``from error``)."""
    missing = (error.name or package).split(".")[0]
    extra = EXTRAS.get(missing, EXTRAS.get(package.split(".")[0], ""))
    hint = f"pip install 'srdp[{extra}]'" if extra else f"pip install {missing}"
    return ImportError(
        f"srdp needs the Python package {missing!r} for this, and it is not installed: {hint}", name=missing
    )
