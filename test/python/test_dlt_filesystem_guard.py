"""``check_not_filesystem`` when dlt's ``filesystem`` destination would write a PARENT folder of a
catalog's data path: dlt writes ``<bucket_url>/<dataset_name>/<table>/...``, so a dataset folder
above the data path puts a table named like the rest of the path into it. Such a destination is
refused with the full message, whatever the spelling of the same folder (trailing slash,
``file://``); a sibling folder (even one whose name starts with the data path's) passes.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

from pathlib import Path  # noqa: E402

import dlt  # noqa: E402
import pytest  # noqa: E402

import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import write_config  # noqa: E402


def lake_config(tmp_path: Path) -> tuple[Path, Path]:
    """A lake whose data path is ``<tmp>/x/lake/data``: (srdp.toml, data path)."""
    root = Path(os.path.realpath(tmp_path))
    data_path = root / "x" / "lake" / "data"
    cfg = write_config(root, f"""
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "{data_path}"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
""")
    return cfg, data_path


def refusal(written: Path, bucket_url: str, data_path: Path, cfg: Path) -> str:
    return (
        f"srdp.ingest.dlt: dlt's filesystem destination would write {written} (bucket_url {bucket_url!r}), "
        f"which overlaps the DuckLake data path {data_path}/ of catalog 'lake' in {cfg}; files written there "
        "bypass the catalog. Load with the ducklake destination from the helper instead: "
        "srdp.ingest.dlt.destination('lake', ...).pipeline(...)"
    )


def test_a_bucket_url_above_the_data_path_is_refused_in_every_spelling(tmp_path):
    cfg, data_path = lake_config(tmp_path)
    lake_dir, x_dir = data_path.parent, data_path.parent.parent
    cases = [
        # (bucket_url, dataset_name, the folder dlt would write)
        (str(lake_dir), "data", data_path),  # the dataset folder IS the data path
        (str(x_dir), "lake", lake_dir),  # the dataset folder holds the data path
        (str(x_dir), None, x_dir),  # no dataset: the bucket itself holds it
        (f"{x_dir}/", "lake", lake_dir),
        (f"file://{x_dir}", "lake", lake_dir),
        (f"file://{x_dir}/", "lake", lake_dir),
        (f"file://{lake_dir}/", None, lake_dir),
    ]
    for bucket_url, dataset_name, written in cases:
        target = dlt.destinations.filesystem(bucket_url=bucket_url)
        with pytest.raises(srdp_dlt.SrdpDltError) as refused:
            srdp_dlt.check_not_filesystem(target, config=cfg, dataset_name=dataset_name)
        assert str(refused.value) == refusal(written, bucket_url, data_path, cfg), (bucket_url, dataset_name)

    # A pipeline whose dataset folder is above the data path: refused before dlt writes anything.
    pipeline = dlt.pipeline("fs_parent", destination=dlt.destinations.filesystem(bucket_url=f"file://{x_dir}/"),
                            dataset_name="lake", pipelines_dir=str(tmp_path / "pipelines"))
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        srdp_dlt.check_not_filesystem(pipeline, config=cfg)
    assert str(refused.value) == refusal(lake_dir, f"file://{x_dir}/", data_path, cfg)
    dest = srdp_dlt.destination("lake", config=cfg)
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        dest.run(pipeline, dlt.resource([{"id": 1}], name="data"))
    assert str(refused.value) == refusal(lake_dir, f"file://{x_dir}/", data_path, cfg)
    assert not x_dir.exists()  # nothing was written, not even the bucket folder

    # Siblings pass: another dataset under the same bucket, and a folder whose name only starts
    # like the data path's.
    srdp_dlt.check_not_filesystem(dlt.destinations.filesystem(bucket_url=str(x_dir)), config=cfg, dataset_name="other")
    srdp_dlt.check_not_filesystem(dlt.destinations.filesystem(bucket_url=str(lake_dir)), config=cfg, dataset_name="data2")
    srdp_dlt.check_not_filesystem(dlt.destinations.filesystem(bucket_url=f"{x_dir}/lake2"), config=cfg, dataset_name="data")
