"""Independent counts of a DuckLake catalog, read from its metadata tables and from storage.

Tests use these to check what srdp did without asking srdp: the live datasets, their live data
files (``ducklake_data_file`` rows with ``end_snapshot IS NULL``, resolved to full paths the way
DuckLake 1.0 stores them: data path, then schema path, then table path, then file path, each
relative to the one before when ``path_is_relative``), the files retired by merges (still on
disk), and their inlined rows (the rows of every table registered in
``ducklake_inlined_data_tables``). ``con`` is any DuckDB connection on which
the lake is attached as ``alias``; ``meta`` is the schema of its metadata tables ("main" for
DuckDB-file and SQLite catalogs, the ``metadata_schema`` for PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

Dataset = tuple[str, str]  # (schema, table)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


@dataclass(frozen=True)
class Lake:
    """The metadata tables of the lake attached as ``alias``."""

    con: Any  # a duckdb.DuckDBPyConnection
    alias: str = "lake"
    meta: str = "main"

    def table(self, name: str) -> str:
        return f"{_quote('__ducklake_metadata_' + self.alias)}.{_quote(self.meta)}.{_quote(name)}"

    def rows(self, sql: str, params: list | None = None) -> list[tuple]:
        return self.con.execute(sql, params or []).fetchall()

    def datasets(self) -> dict[Dataset, int]:
        """Live (schema, table) -> table_id."""
        return {
            (s, t): table_id
            for s, t, table_id in self.rows(
                f"SELECT s.schema_name, t.table_name, t.table_id FROM {self.table('ducklake_table')} t "
                f"JOIN {self.table('ducklake_schema')} s ON s.schema_id = t.schema_id "
                "WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL ORDER BY 1, 2"
            )
        }

    def data_path(self) -> str:
        (value,) = self.rows(
            f"SELECT value FROM {self.table('ducklake_metadata')} WHERE key = 'data_path' AND scope IS NULL"
        )[0]
        return value if value.endswith("/") else value + "/"

    def live_files(self) -> dict[Dataset, list[str]]:
        """Live dataset -> full paths of its live data files, sorted (datasets without files too)."""
        root = self.data_path()
        out: dict[Dataset, list[str]] = {key: [] for key in self.datasets()}
        for s_name, s_path, s_rel, t_name, t_path, t_rel, f_path, f_rel in self.rows(
            f"SELECT s.schema_name, s.path, s.path_is_relative, t.table_name, t.path, t.path_is_relative, "
            f"f.path, f.path_is_relative FROM {self.table('ducklake_data_file')} f "
            f"JOIN {self.table('ducklake_table')} t ON t.table_id = f.table_id AND t.end_snapshot IS NULL "
            f"JOIN {self.table('ducklake_schema')} s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL "
            "WHERE f.end_snapshot IS NULL"
        ):
            schema_dir = root + s_path if s_rel else s_path
            table_dir = schema_dir + t_path if t_rel else t_path
            out[(s_name, t_name)].append(table_dir + f_path if f_rel else f_path)
        return {key: sorted(paths) for key, paths in out.items()}

    def retired_files(self) -> set[str]:
        """Full paths of the files DuckLake 1.0 moved to ``ducklake_files_scheduled_for_deletion``.

        A merge (and a file that a flush wrote and a merge then replaced) leaves ``ducklake_data_file``
        for this table, with its path relative to the data path; the file stays on disk until
        ``ducklake_cleanup_old_files``, which srdp never runs.
        """
        root = self.data_path()
        return {
            root + path if relative else path
            for path, relative in self.rows(
                f"SELECT path, path_is_relative FROM {self.table('ducklake_files_scheduled_for_deletion')}"
            )
        }

    def registered_files(self) -> set[str]:
        """Every data file the metadata knows: live, or retired and not yet cleaned up."""
        return {path for paths in self.live_files().values() for path in paths} | self.retired_files()

    def file_counts(self) -> dict[Dataset, int]:
        """Live dataset -> number of live data files."""
        return {key: len(paths) for key, paths in self.live_files().items()}

    def inlined_rows(self) -> dict[Dataset, int]:
        """Live dataset -> rows in its registered inlined-data tables (every schema version)."""
        by_id = {table_id: key for key, table_id in self.datasets().items()}
        out = dict.fromkeys(by_id.values(), 0)
        for table_id, name in self.rows(
            f"SELECT table_id, table_name FROM {self.table('ducklake_inlined_data_tables')} ORDER BY ALL"
        ):
            if table_id in by_id:
                (n,) = self.rows(f"SELECT count(*) FROM {self.table(name)}")[0]
                out[by_id[table_id]] += n
        return out

    def delete_backlog(self) -> dict[Dataset, tuple[int, int, int]]:
        """Live dataset -> (live data files that carry deletes, deleted rows they carry, rows of
        all its live data files): each live file's live delete file's count plus the rows of its
        inline deletion markers table that name it."""
        by_id = {table_id: key for key, table_id in self.datasets().items()}
        deleted: dict[int, int] = {}
        rows = dict.fromkeys(by_id.values(), 0)
        for table_id, file_id, n, delete_count in self.rows(
            f"SELECT f.table_id, f.data_file_id, f.record_count, coalesce(x.delete_count, 0) "
            f"FROM {self.table('ducklake_data_file')} f LEFT JOIN {self.table('ducklake_delete_file')} x "
            "ON x.data_file_id = f.data_file_id AND x.end_snapshot IS NULL WHERE f.end_snapshot IS NULL"
        ):
            if table_id not in by_id:
                continue
            rows[by_id[table_id]] += n
            deleted[file_id] = deleted.get(file_id, 0) + delete_count
            try:
                (marks,) = self.rows(
                    f"SELECT count(*) FROM {self.table(f'ducklake_inlined_delete_{table_id}')} WHERE file_id = ?",
                    [file_id],
                )[0]
            except Exception:  # no small delete ever hit the table: no marker table
                marks = 0
            deleted[file_id] += marks
        out = {key: (0, 0, rows[key]) for key in by_id.values()}
        for table_id, file_id in self.rows(
            f"SELECT table_id, data_file_id FROM {self.table('ducklake_data_file')} WHERE end_snapshot IS NULL"
        ):
            if table_id in by_id and deleted.get(file_id, 0) > 0:
                files, total, n = out[by_id[table_id]]
                out[by_id[table_id]] = (files + 1, total + deleted[file_id], n)
        return out

    def state(self) -> dict[Dataset, tuple[int, int]]:
        """Live dataset -> (live data files, inlined rows)."""
        files, inlined = self.file_counts(), self.inlined_rows()
        return {key: (files[key], inlined[key]) for key in files}


def parquet_files(directory: Path) -> set[str]:
    """Every Parquet file under ``directory`` on disk, as full paths."""
    return {str(p) for p in directory.rglob("*.parquet") if p.is_file()}


def stored_files(con: Any, data_path: str) -> set[str]:
    """Every object under ``data_path`` (a local folder or an S3 prefix), through DuckDB's glob."""
    prefix = data_path if data_path.endswith("/") else data_path + "/"
    return {path for (path,) in con.execute("SELECT file FROM glob(?)", [prefix + "**"]).fetchall()}
