"""One spelling per storage location, so two spellings of one folder compare equal.

srdp keys things by where they live (the landing ledger keys loads by the landing zone; the dlt
guard compares dlt's folder with each data path). The same folder has many spellings: relative or
absolute, ``file://`` or ``file://localhost/``, ``.``/``..``/``//``, a symlinked parent; the same
S3 prefix is ``s3://``, ``S3://``, ``s3a://`` or ``s3n://`` with ``//`` or ``..`` in the key.
:func:`canonical` maps each of them to one string. Pure: no srdp, no DuckDB (only the file
system, to resolve symlinks of local folders).
"""

from __future__ import annotations

import os
import re

__all__ = ["canonical"]

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?P<rest>.*)$", re.DOTALL)
_S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})


def canonical(url: str) -> str:
    """The one spelling of the folder or prefix ``url`` names, ending in ``/``.

    * A local folder (a plain path, relative to the working directory; ``file:///path``,
      ``file://localhost/path``, ``file:/path``): ``file://`` + the real absolute path (``.``,
      ``..`` and ``//`` folded, symlinks resolved, as far as the path exists) + ``/``.
    * S3 (``s3://``, ``s3a://``, ``s3n://``, any case): ``s3://<bucket>/<key>/`` with the key's
      ``//`` and ``.`` folded and ``..`` applied; the bucket is kept as written.

    Raises ``ValueError`` naming ``url`` for anything else (another scheme, a ``file://`` URL of
    another host, an S3 URL without a bucket or whose ``..`` climbs above it).
    """
    match = _SCHEME.match(url)
    if match is None or len(match["scheme"]) == 1:  # a plain path (one letter: a drive, not a scheme)
        if not url:
            raise ValueError("srdp: an empty location is no folder; give a path or an s3://bucket/prefix URL")
        return _local(url)
    scheme, rest = match["scheme"].lower(), match["rest"]
    if scheme == "file":
        if rest.startswith("//"):
            host, slash, path = rest[2:].partition("/")
            if host.lower() not in ("", "localhost"):
                raise ValueError(
                    f"srdp: {url!r} names a folder on host {host!r}; srdp reads local folders only "
                    "(file:///path or a plain path)"
                )
            rest = slash + path
        if not rest.startswith("/"):
            raise ValueError(f"srdp: {url!r} is a relative file: URL; write file:///absolute/path or a plain path")
        return _local(rest)
    if scheme in _S3_SCHEMES and rest.startswith("//"):
        bucket, _, key = rest[2:].partition("/")
        if not bucket:
            raise ValueError(f"srdp: {url!r} names no bucket; write s3://bucket/prefix/")
        parts: list[str] = []
        for part in key.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ValueError(f"srdp: {url!r} climbs above its bucket with '..'")
                parts.pop()
            else:
                parts.append(part)
        return f"s3://{bucket}/" + "".join(f"{part}/" for part in parts)
    raise ValueError(
        f"srdp: {url!r} is neither a local folder (a path or file:///path) nor an S3 location "
        "(s3://bucket/prefix/)"
    )


def _local(path: str) -> str:
    real = os.path.realpath(os.path.abspath(path))
    return "file://" + real.rstrip("/") + "/"
