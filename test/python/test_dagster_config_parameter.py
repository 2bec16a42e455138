"""One name for the srdp.toml path across srdp's Python API: ``config=``, as in ``srdp.connect``,
``srdp.ingest.dlt.destination``, ``SrdpDbtTranslator`` and ``srdp_table``. The Dagster resources
and ``srdp_definitions`` / ``add_srdp_definitions`` took ``config_path=``; they accept it for one
release with a DeprecationWarning saying what to write instead. The catalog parameter is
``catalog`` everywhere."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import dagster as dg
import pytest

from conftest import write_config
from srdp.dagster import SrdpResource, add_srdp_definitions, srdp_definitions
from srdp.dagster.io_manager import SrdpIOManager

CONFIG = '[catalogs.lake]\nmetadata = "sqlite:catalog/lake.sqlite"\ndata_path = "data/lake"\n'


def _warning(where: str) -> str:
    return (
        f"{where}: config_path= is deprecated and will be removed in the next release; write config= "
        "(the srdp.toml path is config= across srdp's Python API: srdp.connect, "
        "srdp.ingest.dlt.destination, SrdpDbtTranslator, srdp_table)"
    )


@pytest.fixture(scope="module")
def cfg(tmp_path_factory) -> str:
    return str(write_config(tmp_path_factory.mktemp("config_parameter"), CONFIG))


@pytest.mark.parametrize("cls", [SrdpIOManager, SrdpResource], ids=lambda c: c.__name__)
def test_the_resources_take_config_without_a_warning(cls, cfg) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resource = cls(config=cfg)
    assert [str(w.message) for w in caught if "config_path" in str(w.message)] == []
    assert resource.config == cfg


@pytest.mark.parametrize("cls", [SrdpIOManager, SrdpResource], ids=lambda c: c.__name__)
def test_the_resources_accept_config_path_with_a_deprecation_warning(cls, cfg) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        resource = cls(config_path=cfg)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [_warning(cls.__name__)]
    # The warning points at the caller's line, not at Dagster's or pydantic's.
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
    # The old attribute still reads the path for this release.
    assert (resource.config, resource.config_path) == (cfg, cfg)


@pytest.mark.parametrize("cls", [SrdpIOManager, SrdpResource], ids=lambda c: c.__name__)
def test_the_resources_refuse_two_different_paths_and_none(cls, cfg) -> None:
    with pytest.raises(ValueError, match=f"{cls.__name__}: config= and config_path= name different files"):
        cls(config=cfg, config_path=cfg + ".other")
    with pytest.raises(ValueError, match=f"{cls.__name__}: config= is required \\(the srdp.toml path\\)"):
        cls()


def test_run_config_with_config_path_still_works(cfg) -> None:
    """A run config that repeats the code location's path under the old key runs (with the
    warning); one that names another file is refused (test_dagster_launch_config)."""
    seen: list[str] = []

    @dg.op
    def read(srdp: SrdpResource) -> None:
        seen.append(srdp.config)

    @dg.job(resource_defs={"srdp": SrdpResource(config=cfg)})
    def job() -> None:
        read()

    with pytest.warns(DeprecationWarning, match="SrdpResource: config_path= is deprecated"):
        result = job.execute_in_process(run_config={"resources": {"srdp": {"config": {"config_path": cfg}}}})
    assert result.success and seen == [cfg]
    result = job.execute_in_process(run_config={"resources": {"srdp": {"config": {"config": cfg}}}})
    assert result.success and seen == [cfg, cfg]


@pytest.mark.parametrize("cls", [SrdpIOManager, SrdpResource], ids=lambda c: c.__name__)
def test_config_and_config_path_naming_one_file_are_one_path(cls, cfg, monkeypatch) -> None:
    """``config="srdp.toml"`` beside ``config_path="<abs>/srdp.toml"`` names one file: accepted
    (config= kept, as for a copy of the resource, which passes both); a symlink to it too; a
    different file is refused."""
    folder = Path(cfg).parent
    monkeypatch.chdir(folder)
    resource = cls(config="srdp.toml", config_path=cfg)
    assert (resource.config, resource.config_path) == ("srdp.toml", "srdp.toml")
    link = folder / "link.toml"
    link.unlink(missing_ok=True)
    link.symlink_to(cfg)
    assert cls(config=str(link), config_path="./srdp.toml").config == str(link)
    with pytest.raises(ValueError, match=f"{cls.__name__}: config= and config_path= name different files"):
        cls(config="srdp.toml", config_path=str(folder / "other" / "srdp.toml"))


@pytest.mark.parametrize("build", [srdp_definitions, add_srdp_definitions], ids=lambda f: f.__name__)
def test_the_definitions_accept_config_and_config_path_naming_one_file(build, cfg, monkeypatch) -> None:
    monkeypatch.chdir(Path(cfg).parent)
    args = (dg.Definitions(),) if build is add_srdp_definitions else ()
    with pytest.warns(DeprecationWarning):
        defs = build(*args, config="srdp.toml", config_path=cfg, io_manager=True)
    assert Path(defs.resources["srdp"].config).resolve() == Path(cfg).resolve()
    with pytest.raises(TypeError, match=f"{build.__name__}\\(\\) got config= and config_path= naming different files"):
        build(*args, config="srdp.toml", config_path=cfg + ".other")


@pytest.mark.parametrize("build", [srdp_definitions, add_srdp_definitions], ids=lambda f: f.__name__)
def test_the_definitions_take_config_and_accept_config_path(build, cfg) -> None:
    args = (dg.Definitions(),) if build is add_srdp_definitions else ()
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        new = build(*args, config=cfg, io_manager=True)
        positional = build(*args, cfg)
    assert [str(w.message) for w in quiet if "config_path" in str(w.message)] == []
    with pytest.warns(DeprecationWarning) as caught:
        old = build(*args, config_path=cfg, io_manager=True)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [_warning(build.__name__)]
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
    for defs in (new, old, positional):
        assert defs.resources["srdp"].config == cfg
    assert new.resources["io_manager"].config == old.resources["io_manager"].config == cfg
    with pytest.raises(TypeError, match=f"{build.__name__}\\(\\) needs config= \\(the srdp.toml path\\)"):
        build(*args)


def test_every_entry_point_names_the_path_config_and_the_catalog_catalog() -> None:
    import srdp
    import srdp.ingest.dlt as srdp_dlt
    from srdp.dagster import SrdpDbtTranslator, srdp_table

    entry_points = {
        "srdp.connect": srdp.connect,
        "srdp.ingest.dlt.destination": srdp_dlt.destination,
        "SrdpDbtTranslator": SrdpDbtTranslator.__init__,
        "srdp_table": srdp_table,
        "srdp_definitions": srdp_definitions,
        "add_srdp_definitions": add_srdp_definitions,
    }
    params = {name: set(inspect.signature(f).parameters) for name, f in entry_points.items()}
    assert [n for n, p in params.items() if "config" not in p] == []
    fields = {c.__name__: set(c.model_fields) for c in (SrdpIOManager, SrdpResource)}
    assert [n for n, f in fields.items() if "config" not in f] == []
    # The catalog is `catalog` wherever one is taken (no catalog_name=, lake=, ...).
    names = {p for ps in [*params.values(), *fields.values()] for p in ps}
    assert sorted(n for n in names if "catalog" in n or n == "lake") == ["catalog", "catalog_password", "catalog_user"]
