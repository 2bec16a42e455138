"""``srdp.locations.canonical``: every spelling of one local folder or S3 prefix gives one exact
string (the ledger keys landing loads by it; the dlt guard compares folders by it), and anything
else is refused with a message naming the URL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srdp.locations import canonical


@pytest.mark.parametrize(("url", "expected"), [
    ("s3://bucket/prefix/landing/", "s3://bucket/prefix/landing/"),
    ("s3://bucket/prefix/landing", "s3://bucket/prefix/landing/"),
    ("S3://bucket/prefix/landing", "s3://bucket/prefix/landing/"),
    ("s3a://bucket/prefix/landing/", "s3://bucket/prefix/landing/"),
    ("S3N://bucket/prefix/landing/", "s3://bucket/prefix/landing/"),
    ("s3://bucket//prefix///landing//", "s3://bucket/prefix/landing/"),
    ("s3://bucket/prefix/./landing/.", "s3://bucket/prefix/landing/"),
    ("s3://bucket/prefix/other/../landing/", "s3://bucket/prefix/landing/"),
    ("s3://bucket/prefix/landing/x/..", "s3://bucket/prefix/landing/"),
    ("s3://bucket", "s3://bucket/"),
    ("s3://bucket/", "s3://bucket/"),
    ("s3://bucket/a/..", "s3://bucket/"),
    ("s3://My-Bucket/Prefix/", "s3://My-Bucket/Prefix/"),  # the bucket and key as written
])
def test_s3_spellings(url: str, expected: str) -> None:
    assert canonical(url) == expected


def test_local_spellings_of_one_folder_through_a_symlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path(os.path.realpath(tmp_path)) / "real"
    (real / "landing" / "sub").mkdir(parents=True)
    link = Path(os.path.realpath(tmp_path)) / "link"
    link.symlink_to(real)
    expected = f"file://{real}/landing/"
    monkeypatch.chdir(link)
    spellings = [
        f"{real}/landing", f"{real}/landing/", f"{real}//landing//", f"{real}/./landing/sub/..",
        f"{link}/landing", f"file://{link}/landing", f"file://{real}/landing/", f"file://localhost{link}/landing/",
        f"FILE://LOCALHOST{real}/landing", f"file:{real}/landing", f"file:///{link}/landing/./",
        "landing", "./landing/", "landing/sub/../", f"../link/landing",
    ]
    assert {url: canonical(url) for url in spellings} == {url: expected for url in spellings}
    # A folder that does not exist yet: as far as it exists, then as written.
    assert canonical(f"{link}/landing/new//later/../x") == f"file://{real}/landing/new/x/"
    assert canonical("/") == "file:///"


@pytest.mark.parametrize(("url", "message"), [
    ("gs://bucket/landing/", "srdp: 'gs://bucket/landing/' is neither a local folder (a path or file:///path) "
     "nor an S3 location (s3://bucket/prefix/)"),
    ("https://example.com/landing/", "srdp: 'https://example.com/landing/' is neither a local folder (a path or "
     "file:///path) nor an S3 location (s3://bucket/prefix/)"),
    ("s3:bucket/landing", "srdp: 's3:bucket/landing' is neither a local folder (a path or file:///path) nor an "
     "S3 location (s3://bucket/prefix/)"),
    ("s3:///landing/", "srdp: 's3:///landing/' names no bucket; write s3://bucket/prefix/"),
    ("s3://bucket/a/../../landing", "srdp: 's3://bucket/a/../../landing' climbs above its bucket with '..'"),
    ("file://server/share/landing", "srdp: 'file://server/share/landing' names a folder on host 'server'; srdp "
     "reads local folders only (file:///path or a plain path)"),
    ("file:landing", "srdp: 'file:landing' is a relative file: URL; write file:///absolute/path or a plain path"),
    ("", "srdp: an empty location is no folder; give a path or an s3://bucket/prefix URL"),
])
def test_anything_else_is_refused_naming_the_url(url: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        canonical(url)
    assert str(refused.value) == message
