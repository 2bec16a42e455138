"""The ``secrets:`` block of the generated dbt profile: present exactly when the catalog dbt writes
needs DuckDB secrets (a ``writer_secret``, an ``s3://`` data path), named by ``writer_secret``,
every value through dbt's ``env_var()`` and the password and S3 secret key through
``DBT_ENV_SECRET_*`` variables (dbt scrubs those from its logs). dbt-duckdb then creates them on
its connection; test_scale_out_platform runs ``dbt run`` with such a profile on PostgreSQL + S3.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from conftest import write_config
from srdp.dbt.profile import env_prefix, render_profile

SCALE_OUT = """
[catalogs.lake]
metadata = "postgres:dbname=lakecat host=db.internal port=5432"
metadata_schema = "lake"
data_path = "s3://acme-lake/prod/"
writer_secret = "lake_writer"
reader_secret = "lake_reader"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

SECRETS = """\
      # The DuckDB secrets srdp's writer attach needs, created by dbt-duckdb on its connection
      # (temporary, never persisted); every value comes from the environment.
      secrets:
        - type: postgres
          name: "lake_writer"
          user: "{{ env_var('LAKE_WRITER_USER') }}"
          password: "{{ env_var('DBT_ENV_SECRET_LAKE_WRITER_PASSWORD') }}"
        - type: s3
          name: "lake_writer_s3"
          scope: "s3://acme-lake/prod/"
          key_id: "{{ env_var('LAKE_WRITER_S3_KEY_ID') }}"
          secret: "{{ env_var('DBT_ENV_SECRET_LAKE_WRITER_S3_SECRET') }}"
          region: "{{ env_var('LAKE_WRITER_S3_REGION', 'us-east-1') }}"
          endpoint: "{{ env_var('LAKE_WRITER_S3_ENDPOINT', 's3.amazonaws.com') }}"
          url_style: "{{ env_var('LAKE_WRITER_S3_URL_STYLE', 'vhost') }}"
          use_ssl: "{{ env_var('LAKE_WRITER_S3_USE_SSL', 'true') }}"
      plugins:
"""


def test_a_scale_out_catalog_gets_both_secrets_from_the_environment(tmp_path: Path) -> None:
    text = render_profile(write_config(tmp_path, SCALE_OUT))
    assert SECRETS in text
    (output,) = yaml.safe_load(text)["srdp"]["outputs"].values()
    assert [s["name"] for s in output["secrets"]] == ["lake_writer", "lake_writer_s3"]


def test_a_local_catalog_gets_no_secrets_block(tmp_path: Path) -> None:
    local = SCALE_OUT.replace('metadata = "postgres:dbname=lakecat host=db.internal port=5432"', 'metadata = "sqlite:c.sqlite"')
    local = local.replace('metadata_schema = "lake"\n', "").replace("s3://acme-lake/prod/", "data/")
    without = local.replace('writer_secret = "lake_writer"\n', "").replace('reader_secret = "lake_reader"\n', "")
    text = render_profile(write_config(tmp_path, without))
    assert "secrets" not in text and "env_var" not in text
    # A writer_secret alone: the secret srdp's writer attach asks for, and no S3 secret.
    only_writer = render_profile(write_config(tmp_path / "w", local))
    assert (
        "      secrets:\n"
        "        - type: postgres\n"
        '          name: "lake_writer"\n'
        "          user: \"{{ env_var('LAKE_WRITER_USER') }}\"\n"
        "          password: \"{{ env_var('DBT_ENV_SECRET_LAKE_WRITER_PASSWORD') }}\"\n"
        "      plugins:\n"
    ) in only_writer


def test_an_s3_data_path_without_writer_secret_is_named_by_the_catalog(tmp_path: Path) -> None:
    text = render_profile(write_config(tmp_path, SCALE_OUT.replace('writer_secret = "lake_writer"\n', "")))
    assert '        - type: s3\n          name: "lake_writer_s3"\n' in text
    assert "type: postgres" not in text


def test_environment_variable_names_from_secret_names() -> None:
    assert env_prefix("lake_writer") == "LAKE_WRITER"
    assert env_prefix("Lake-Writer.2") == "LAKE_WRITER_2"
    assert env_prefix("__") == "SRDP"
