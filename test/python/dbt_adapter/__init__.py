"""dbt-duckdb's adapter test classes run through srdp's dbt set-up (see conftest.py)."""
