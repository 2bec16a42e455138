"""srdp.install and srdp.extension_wheels on their own: which extension file and which extension
directory srdp picks in a wheel install and in a checkout (on fake trees), the per-environment
cache folder, and filling an extension directory from the extension wheels of this venv
(including two processes at once)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import duckdb
import pytest

from conftest import PY, REPO
from srdp import extension_wheels, install

NAMES = ["ducklake", "sqlite_scanner", "postgres_scanner", "httpfs"]


def wheel_tree(root: Path, shipped: bool) -> Path:
    """site-packages/srdp of an installed wheel; with or without the extension file."""
    package = root / "lib" / "python3.11" / "site-packages" / "srdp"
    (package / "dbt_package").mkdir(parents=True)
    (package / "dbt_package" / "dbt_project.yml").write_text("name: srdp\n")
    if shipped:
        (package / "extension").mkdir()
        (package / "extension" / install.EXTENSION_FILE).write_bytes(b"wheel")
    return package


def checkout_tree(root: Path, built: bool) -> Path:
    """python/srdp of a source checkout; with or without a release build."""
    (root / "Cargo.toml").parent.mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text("[package]\n")
    package = root / "python" / "srdp"
    package.mkdir(parents=True)
    if built:
        (root / "build" / "release").mkdir(parents=True)
        (root / "build" / "release" / install.EXTENSION_FILE).write_bytes(b"built")
    return package


def test_the_real_package_runs_from_this_checkout() -> None:
    assert install.checkout_root() == REPO
    assert install.dbt_package_path() == REPO / "dbt"


def test_checkout_root_needs_cargo_toml_and_python_srdp(tmp_path: Path) -> None:
    assert install.checkout_root(checkout_tree(tmp_path / "co", built=False)) == tmp_path / "co"
    assert install.checkout_root(wheel_tree(tmp_path / "venv", shipped=True)) is None
    # A folder named python/srdp without Cargo.toml above it is no checkout.
    (tmp_path / "x" / "python" / "srdp").mkdir(parents=True)
    assert install.checkout_root(tmp_path / "x" / "python" / "srdp") is None


def test_an_installed_wheel_loads_the_file_it_ships(tmp_path: Path) -> None:
    package = wheel_tree(tmp_path, shipped=True)
    assert install.find_extension({}, package) == install.ExtensionLocation(package / "extension" / install.EXTENSION_FILE, "wheel")
    assert install.dbt_package_path(package) == package / "dbt_package"


def test_srdp_extension_wins_over_the_shipped_file_even_when_it_names_no_file(tmp_path: Path) -> None:
    package = wheel_tree(tmp_path, shipped=True)
    given = str(tmp_path / "nowhere.duckdb_extension")
    assert install.find_extension({"SRDP_EXTENSION": given}, package) == install.ExtensionLocation(Path(given), "$SRDP_EXTENSION")
    # Empty counts as unset.
    assert install.find_extension({"SRDP_EXTENSION": ""}, package).source == "wheel"


def test_a_checkout_loads_its_release_build(tmp_path: Path) -> None:
    package = checkout_tree(tmp_path, built=True)
    assert install.find_extension({}, package) == install.ExtensionLocation(tmp_path / "build" / "release" / install.EXTENSION_FILE, "checkout")
    assert install.dbt_package_path(package) == tmp_path / "dbt"
    unbuilt = checkout_tree(tmp_path / "other", built=False)
    assert install.find_extension({}, unbuilt) == install.ExtensionLocation(
        tmp_path / "other" / "build" / "release" / install.EXTENSION_FILE, "none"
    )


def test_a_wheel_without_its_file_finds_nothing(tmp_path: Path) -> None:
    package = wheel_tree(tmp_path, shipped=False)
    assert install.find_extension({}, package) == install.ExtensionLocation(package / "extension" / install.EXTENSION_FILE, "none")


def test_extension_directory_by_where_srdp_runs(tmp_path: Path) -> None:
    wheel = wheel_tree(tmp_path / "venv", shipped=True)
    checkout = checkout_tree(tmp_path / "co", built=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert install.extension_directory_source({**env, "SRDP_EXTENSION_DIR": "/x/y"}, wheel) == (Path("/x/y"), "$SRDP_EXTENSION_DIR")
    assert install.extension_directory_source(env, checkout) == (tmp_path / "co" / ".duckdb" / "extensions", "checkout")
    directory, source = install.extension_directory_source(env, wheel, str(tmp_path / "venv"))
    assert (directory.parent, source) == (tmp_path / "cache" / "srdp" / "duckdb_extensions", "cache")
    assert directory.name.startswith("venv-")


def test_each_python_environment_has_its_own_cache_folder(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    a = install.user_extension_directory(env, str(tmp_path / "a"))
    b = install.user_extension_directory(env, str(tmp_path / "b"))
    assert a != b and a.parent == b.parent == tmp_path / "cache" / "srdp" / "duckdb_extensions"
    assert (a.name[:2], b.name[:2]) == ("a-", "b-")
    # The same environment reached through a symlink is the same folder; a hidden venv's name loses its dot.
    assert install.user_extension_directory(env, str(tmp_path / "link")) == a
    assert install.user_extension_directory(env, "/srv/app/.venv").name.startswith("venv-")
    # Without XDG_CACHE_HOME: ~/.cache.
    assert install.user_extension_directory({}, "/srv/app/.venv").parent == Path.home() / ".cache" / "srdp" / "duckdb_extensions"


def test_not_found_message_names_the_override() -> None:
    assert install.not_found_message(Path("/x/srdp.duckdb_extension"), {"SRDP_EXTENSION": "/x/srdp.duckdb_extension"}) == (
        "srdp extension not found at /x/srdp.duckdb_extension (from $SRDP_EXTENSION); fix or unset SRDP_EXTENSION"
    )
    # This package runs from the checkout: build it.
    assert install.not_found_message(Path("/r/build/release/srdp.duckdb_extension"), {}) == (
        "srdp extension not found at /r/build/release/srdp.duckdb_extension; run `make release` or set SRDP_EXTENSION"
    )


def loads(directory: Path) -> list[str]:
    """The extensions a fresh, offline connection loads from ``directory``."""
    con = duckdb.connect(config={"extension_directory": str(directory), "autoinstall_known_extensions": "false"})
    try:
        for name in NAMES:
            con.execute(f"LOAD {name}")
        return sorted(r[0] for r in con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded AND extension_name IN ?", [NAMES]).fetchall())
    finally:
        con.close()


def test_ensure_installed_fills_a_directory_once_and_repairs_it(tmp_path: Path) -> None:
    directory = tmp_path / "extensions"
    assert extension_wheels.missing(directory) == NAMES
    extension_wheels.ensure_installed(directory)
    assert extension_wheels.missing(directory) == []
    (platform_dir,) = (directory / "v1.5.5").iterdir()
    for e in extension_wheels.wheel_extensions(directory):
        assert e.target.read_bytes() == e.source.read_bytes()
    assert loads(directory) == sorted(NAMES)
    # Only the four files and their .info files; no staging folder left behind.
    assert sorted(p.name for p in directory.iterdir()) == ["v1.5.5"]
    assert sorted(p.name for p in platform_dir.iterdir()) == sorted(
        f"{name}.duckdb_extension{suffix}" for name in NAMES for suffix in ("", ".info")
    )
    # A second use in a new process (the in-process memo forgotten) rewrites nothing.
    times = {p.name: p.stat().st_mtime_ns for p in platform_dir.iterdir()}
    extension_wheels._done.discard(directory)
    extension_wheels.ensure_installed(directory)
    assert {p.name: p.stat().st_mtime_ns for p in platform_dir.iterdir()} == times
    # A removed file is put back, and a truncated one replaced; the others are left alone.
    (platform_dir / "httpfs.duckdb_extension").unlink()
    # (A new file moved over it: this process has the old one mapped, and truncating a loaded
    # library in place would crash it; srdp too only ever moves new files in.)
    (platform_dir / "short").write_bytes(b"truncated")
    os.replace(platform_dir / "short", platform_dir / "ducklake.duckdb_extension")
    extension_wheels._done.discard(directory)
    extension_wheels.ensure_installed(directory)
    assert extension_wheels.missing(directory) == []
    assert loads(directory) == sorted(NAMES)
    after = {p.name: p.stat().st_mtime_ns for p in platform_dir.iterdir()}
    assert {k for k in after if after[k] != times.get(k)} == {
        f"{name}.duckdb_extension{suffix}" for name in ("ducklake", "httpfs") for suffix in ("", ".info")
    }


def test_ensure_installed_says_what_to_do_when_the_directory_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    directory = tmp_path / "file" / "extensions"
    with pytest.raises(extension_wheels.ExtensionWheelError) as error:
        extension_wheels.ensure_installed(directory)
    assert str(error.value) == (
        f"srdp: cannot fill the extension directory {directory}: [Errno 20] Not a directory: "
        f"'{directory / 'v1.5.5' / 'linux_amd64'}'; set SRDP_EXTENSION_DIR to a writable folder"
    )


def test_two_processes_filling_one_directory_at_once_both_succeed(tmp_path: Path) -> None:
    directory = tmp_path / "extensions"
    code = textwrap.dedent(f"""
        from pathlib import Path
        from srdp.extension_wheels import ensure_installed
        ensure_installed(Path({str(directory)!r}))
    """)
    env = {**os.environ}
    procs = [subprocess.Popen([PY, "-c", code], env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    assert results == [(0, ""), (0, "")]
    assert extension_wheels.missing(directory) == []
    assert loads(directory) == sorted(NAMES)
    assert sorted(p.name for p in directory.iterdir()) == ["v1.5.5"]


def test_connect_reports_a_missing_extension_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import srdp

    monkeypatch.setenv("SRDP_EXTENSION", "/nonexistent/srdp.duckdb_extension")
    with pytest.raises(FileNotFoundError) as error:
        srdp.connect()
    assert str(error.value) == (
        "srdp extension not found at /nonexistent/srdp.duckdb_extension (from $SRDP_EXTENSION); fix or unset SRDP_EXTENSION"
    )
