"""The misdirected-destination guard: dlt must load a dataset through the catalog, never around it.

* :func:`check_not_filesystem`: dlt's ``filesystem`` destination must never write into a
  DuckLake data path (files there bypass the catalog).
* :func:`check_pipeline`: a pipeline handed to the helper must load into the destination srdp
  described (the ``ducklake`` destination under the catalog's name, srdp's dataset).
"""

from __future__ import annotations

import os
from typing import Any

import dlt
from dlt.common.destination import Destination
from dlt.pipeline.pipeline import Pipeline

import srdp
from srdp.ingest.dlt.audited import SrdpDuckLake
from srdp.ingest.dlt.errors import SrdpDltError
from srdp.locations import canonical

from srdp.ingest.dlt.target import DltTarget

__all__ = ["check_not_filesystem", "check_pipeline"]


def check_not_filesystem(
    target: Destination | Pipeline,
    config: str | os.PathLike[str] | None = None,
    dataset_name: str | None = None,
) -> None:
    """Refuses dlt's ``filesystem`` destination when it would write into a DuckLake data path.

    ``target`` is a destination or a pipeline (whose ``dataset_name`` is used). dlt writes
    ``<bucket_url>/<dataset_name>/...``; when that overlaps the data path of any catalog in
    srdp.toml, the files would bypass the catalog, so this raises :class:`SrdpDltError` naming the
    catalog, its data path and what to do. Other destinations pass.
    """
    if isinstance(target, Pipeline):
        dataset_name = dataset_name or target.dataset_name
        target = target.destination
    if target is None or target.destination_type != "dlt.destinations.filesystem":
        return
    bucket_url = _bucket_url(target)
    if bucket_url is None:
        return
    written = _location(bucket_url.rstrip("/") + (f"/{dataset_name}" if dataset_name else ""))
    with srdp.connect(config=config) as con:
        catalogs = srdp.call(con, "srdp_catalogs")
        config_path = srdp.call(con, "srdp_version")[0]["config_path"]
    for row in catalogs:
        catalog, data_path = row["catalog"], row["data_path"]
        lake = _location(data_path)
        if written.startswith(lake) or lake.startswith(written):
            raise SrdpDltError(
                f"srdp.ingest.dlt: dlt's filesystem destination would write {_shown(written)} "
                f"(bucket_url {bucket_url!r}), which overlaps the DuckLake data path {data_path} of catalog "
                f"{catalog!r} in {config_path}; files written there bypass the catalog. Load with the "
                f"ducklake destination from the helper instead: "
                f"srdp.ingest.dlt.destination({catalog!r}, ...).pipeline(...)"
            )


def check_pipeline(target: DltTarget, pipeline: Pipeline) -> None:
    """Refuses a pipeline that does not load into ``target``'s dataset (say, a ``filesystem``
    pipeline pointed at the data path), or loads it with another destination than the helper's
    (dlt's plain ``ducklake`` would leave its writes without a commit author)."""
    dlt_target = pipeline.destination
    if dlt_target is not None and dlt_target.destination_type == "dlt.destinations.filesystem":
        check_not_filesystem(pipeline, config=target.config_path)
        if target.is_landing and _location(_bucket_url(dlt_target) or "") == _location(target.storage_url) \
                and pipeline.dataset_name == target.dataset_name:
            return
    if target.is_landing:
        where = f"{dlt_target.destination_type if dlt_target else 'no destination'}, dataset {pipeline.dataset_name!r}"
        raise SrdpDltError(
            f"srdp.ingest.dlt: pipeline {pipeline.pipeline_name!r} ({where}) does not load into the "
            f"landing zone {target.landing_url} of catalog {target.catalog!r}; build it with "
            f"srdp.ingest.dlt.destination({target.catalog!r}, layer='landing').pipeline(...)"
        )
    alias = getattr((dlt_target.config_params if dlt_target else {}).get("credentials"), "ducklake_name", None)
    if (
        not isinstance(dlt_target, SrdpDuckLake)
        or dlt_target.srdp_writer != target.writer
        or alias != target.attach_name
        or pipeline.dataset_name != target.dataset_name
    ):
        where = f"{dlt_target.destination_type if dlt_target else 'no destination'}, dataset {pipeline.dataset_name!r}"
        raise SrdpDltError(
            f"srdp.ingest.dlt: pipeline {pipeline.pipeline_name!r} ({where}) does not load into "
            f"{target.catalog}.{target.dataset_name}; build it with "
            f"srdp.ingest.dlt.destination({target.catalog!r}, ...).pipeline(...)"
        )


def _bucket_url(target: Destination) -> str | None:
    """The filesystem destination's ``bucket_url``: given to the factory, or from dlt's config."""
    if target.config_params.get("bucket_url"):
        return str(target.config_params["bucket_url"])
    try:
        return str(target.configuration(target.spec(), accept_partial=True).bucket_url)
    except Exception:  # credentials that do not resolve: the bucket_url alone is enough
        value: Any = dlt.config.get(f"destination.{target.destination_name}.bucket_url")
        return str(value) if value else None


def _location(url_or_path: str) -> str:
    """A comparable location with a trailing slash: :func:`srdp.locations.canonical` for local
    folders and S3; another scheme's URL (``gs://``, ``az://``) as written."""
    try:
        return canonical(url_or_path)
    except ValueError:
        return url_or_path.rstrip("/") + "/"


def _shown(location: str) -> str:
    """A location for a message: a local folder as its path."""
    return location.removeprefix("file://").rstrip("/") or "/"
