"""The object-storage side of the two roles: the bucket, not srdp, keeps a reader from writing data
files, and only when the reader's DuckDB S3 secret holds a key whose policy is read-only (the
docs/scale-out.md, Object storage).

The session's S3 server (scripts/servers.py) checks no credentials, so this module starts its own
moto server (the same ``start_s3``) and turns moto's IAM enforcement on once the bucket, two IAM
users and their policies exist (``/moto-api/reset-auth``): the writer's key may get, put, delete
and list under the data path, the reader's only get and list. The catalog is SQLite (the
PostgreSQL side of the roles is test_postgres_s3 and test_scale_out_platform).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import tempfile
import urllib.request
from pathlib import Path

import duckdb
import pytest

import srdp
from conftest import REPO, write_config

BUCKET = "policy-lake"
PREFIX = "prod"
WRITER_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"]
READER_ACTIONS = ["s3:GetObject", "s3:ListBucket"]


@pytest.fixture(scope="module")
def policy_s3():
    """A moto server that enforces IAM, with a writer key and a read-only reader key."""
    import boto3

    sys.path.insert(0, str(REPO / "scripts"))
    from servers import start_s3

    workdir = Path(tempfile.mkdtemp(prefix="srdp-s3-policy-"))
    port, pid = start_s3(workdir)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        setup = {"endpoint_url": endpoint, "region_name": "us-east-1",
                 "aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        boto3.client("s3", **setup).create_bucket(Bucket=BUCKET)
        iam = boto3.client("iam", **setup)
        keys = {}
        for role, actions in (("writer", WRITER_ACTIONS), ("reader", READER_ACTIONS)):
            iam.create_user(UserName=f"lake_{role}")
            policy = {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": actions,
                "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/{PREFIX}/*"],
            }]}
            iam.put_user_policy(UserName=f"lake_{role}", PolicyName="lake", PolicyDocument=json.dumps(policy))
            key = iam.create_access_key(UserName=f"lake_{role}")["AccessKey"]
            keys[role] = (key["AccessKeyId"], key["SecretAccessKey"])
        # From now on every request is authenticated and authorised against IAM.
        enforce = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(enforce, timeout=10).read()
        yield {"port": port, "keys": keys}
    finally:
        os.kill(pid, signal.SIGTERM)


def s3_secret(port: int, key: tuple[str, str]) -> str:
    return (f"CREATE OR REPLACE SECRET lake_s3 (TYPE s3, KEY_ID '{key[0]}', SECRET '{key[1]}', REGION 'us-east-1', "
            f"ENDPOINT '127.0.0.1:{port}', URL_STYLE 'path', USE_SSL false)")


def test_the_readers_key_cannot_write_the_data_path_the_writers_can(policy_s3, tmp_path: Path) -> None:
    port, keys = policy_s3["port"], policy_s3["keys"]
    data = f"s3://{BUCKET}/{PREFIX}/{secrets.token_hex(3)}/"
    cfg = write_config(tmp_path, f"""
        [catalogs.lake]
        metadata = "sqlite:catalog/lake.sqlite"
        data_path = "{data}"
        data_inlining_row_limit = 0
        """)
    writer = srdp.connect(config=cfg)
    writer.execute(s3_secret(port, keys["writer"]))
    writer.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    writer.execute("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
    writer.execute("INSERT INTO lake.main.t SELECT 100 + range FROM range(50)")
    assert writer.execute("SELECT status FROM srdp_compact('lake')").fetchall() == [("compacted",)]
    expected = writer.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone()
    assert expected == (150, 11175)
    writer.execute("DETACH lake")
    writer.close()

    reader = srdp.connect(config=cfg)
    reader.execute(s3_secret(port, keys["reader"]))
    reader.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    assert reader.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone() == expected
    # By hand, with the reader's key: no new file under the data path, none elsewhere in the bucket.
    for target in (f"{data}main/t/evil.parquet", f"s3://{BUCKET}/elsewhere/evil.parquet"):
        with pytest.raises(duckdb.Error) as refused:
            reader.execute(f"COPY (SELECT 1 AS id) TO '{target}'")
        assert "AccessDenied" in str(refused.value) and "403" in str(refused.value)
    reader.execute("DETACH lake")
    # Even attached as srdp's writer (the SQLite catalog has no role of its own), the reader's key
    # cannot write a data file: the bucket refuses, and the table keeps its rows.
    reader.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    with pytest.raises(duckdb.Error, match="AccessDenied"):
        reader.execute("INSERT INTO lake.main.t SELECT 1000 + range FROM range(10)")
    assert reader.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone() == expected
    reader.close()
