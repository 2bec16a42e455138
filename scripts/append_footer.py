#!/usr/bin/env python3
"""Append DuckDB's extension metadata footer to a built shared library.

Usage::

    append_footer.py INPUT OUTPUT --platform P --duckdb-version V \
        --extension-version E --abi-type A

INPUT (the raw cdylib, e.g. ``target/release/libsrdp.so``) is copied to
OUTPUT (e.g. ``build/release/srdp.duckdb_extension``) with the footer
appended.  The output is first written to a temporary file in OUTPUT's
directory and then renamed over OUTPUT, so a reader never sees a half-written
extension.

DuckDB reads the last 512 bytes of an extension file.  The 534 appended bytes
are:

* a 22-byte prefix: ``00 93 04 10`` + ``b"duckdb_signature"`` + ``80 04``;
* 256 bytes of metadata: 8 fields of 32 bytes each, ASCII, NUL-padded, in
  this order: ``""``, ``""``, ``""``, abi_type, extension_version,
  duckdb_version, platform, ``"4"`` (the metadata format version);
* 256 zero bytes: the (empty) signature, i.e. an unsigned extension, which
  DuckDB only loads with ``allow_unsigned_extensions``.

Values known to load in DuckDB 1.5.5: ``--abi-type C_STRUCT``,
``--duckdb-version v1.2.0`` (the C API version for C_STRUCT extensions),
``--platform linux_amd64`` (see ``scripts/platform.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

PREFIX = b"\x00\x93\x04\x10" + b"duckdb_signature" + b"\x80\x04"
FIELD_SIZE = 32
METADATA_VERSION = "4"
SIGNATURE_SIZE = 256


def encode_field(name: str, value: str) -> bytes:
    """Return ``value`` as ASCII, NUL-padded to 32 bytes; raise if it does not fit."""
    try:
        raw = value.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError(f"{name} must be ASCII, got {value!r}") from None
    if len(raw) > FIELD_SIZE:
        raise ValueError(
            f"{name} is {len(raw)} bytes, at most {FIELD_SIZE} fit: {value!r}"
        )
    return raw.ljust(FIELD_SIZE, b"\x00")


def build_footer(platform: str, duckdb_version: str, extension_version: str,
                 abi_type: str) -> bytes:
    """Return the 534-byte footer described in the module docstring."""
    fields = [
        ("unused field 0", ""),
        ("unused field 1", ""),
        ("unused field 2", ""),
        ("--abi-type", abi_type),
        ("--extension-version", extension_version),
        ("--duckdb-version", duckdb_version),
        ("--platform", platform),
        ("metadata version", METADATA_VERSION),
    ]
    metadata = b"".join(encode_field(n, v) for n, v in fields)
    footer = PREFIX + metadata + b"\x00" * SIGNATURE_SIZE
    assert len(footer) == 22 + 8 * FIELD_SIZE + SIGNATURE_SIZE == 534
    return footer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="the built shared library")
    parser.add_argument("output", help="the .duckdb_extension file to write")
    parser.add_argument("--platform", required=True, help="e.g. linux_amd64")
    parser.add_argument("--duckdb-version", required=True, help="e.g. v1.2.0")
    parser.add_argument("--extension-version", required=True, help="e.g. v0.1.0")
    parser.add_argument("--abi-type", required=True, help="e.g. C_STRUCT")
    args = parser.parse_args(argv)

    try:
        footer = build_footer(args.platform, args.duckdb_version,
                              args.extension_version, args.abi_type)
    except ValueError as e:
        parser.error(str(e))

    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".duckdb_extension", dir=out_dir)
    try:
        with os.fdopen(fd, "wb") as dst, open(args.input, "rb") as src:
            shutil.copyfileobj(src, dst)
            dst.write(footer)
        os.chmod(tmp, 0o644)
        os.replace(tmp, args.output)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
