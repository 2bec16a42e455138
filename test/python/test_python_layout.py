"""The Python package's layout: a dlt-only import never pulls Dagster (nor a Dagster-only import
dlt), and the public names of ``srdp.ingest.dlt`` and ``srdp.dagster`` survive the split into
packages.

Imports are checked in fresh processes of the venv's Python, since this test process has
imported everything already.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import textwrap

import pytest

from conftest import REPO

VENV_PYTHON = REPO / ".venv" / "bin" / "python"


def run_venv_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_PYTHON), "-c", textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "RUNTIME__DLTHUB_TELEMETRY": "false"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_importing_the_dlt_helper_does_not_import_dagster() -> None:
    done = run_venv_python("import srdp.ingest.dlt, sys; assert 'dagster' not in sys.modules")
    assert (done.returncode, done.stderr) == (0, "")


def test_the_old_spelling_of_the_dlt_assets_warns_and_imports_dagster_only_then() -> None:
    # The control for the test above: the deprecated spelling still works this release, and the
    # same check sees Dagster once it is asked for.
    done = run_venv_python(
        """
        import sys, warnings
        import srdp.ingest.dlt as srdp_dlt
        assert "dagster" not in sys.modules and "srdp.dagster" not in sys.modules
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assets = srdp_dlt.srdp_dlt_assets
        print(sorted(m for m in ("dagster", "dagster_dlt", "srdp.dagster", "srdp.dagster.dlt_assets") if m in sys.modules))
        print(assets.__module__, assets.__qualname__)
        print([(w.category.__name__, str(w.message), w.filename) for w in caught])
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['dagster', 'dagster_dlt', 'srdp.dagster', 'srdp.dagster.dlt_assets']",
        "srdp.dagster.dlt_assets srdp_dlt_assets",
        "[('DeprecationWarning', 'srdp.ingest.dlt.srdp_dlt_assets is deprecated and will be removed in the next "
        "release: import it from srdp.dagster (from srdp.dagster import srdp_dlt_assets); srdp.ingest.dlt is "
        "Dagster-free', '<string>')]",
    ]


def test_importing_srdp_dagster_does_not_import_dlt() -> None:
    done = run_venv_python(
        """
        import sys
        import srdp.dagster
        print(sorted(m for m in ("dagster", "dlt", "dagster_dlt", "srdp.ingest.dlt") if m in sys.modules))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['dagster']"]


# The public names of the single modules srdp/ingest/dlt.py and srdp/dagster.py before the split.
DLT_NAMES = [
    "DltDestination",
    "SrdpDltError",
    "SrdpDltLoadError",
    "check_not_filesystem",
    "destination",
    "pipeline",
    "run",
]
#: Names whose one home is srdp.dagster; their old spellings in srdp.ingest(.dlt) are deprecated
#: (a DeprecationWarning this release, gone in the next).
MOVED = {
    "srdp.ingest.dlt": ["SrdpDltTranslator", "srdp_dlt_assets"],
    "srdp.ingest": ["landing_retention_schedule", "srdp_landing_assets"],
}
DAGSTER_NAMES = [
    "MAINTENANCE_JOB",
    "MAINTENANCE_SCHEDULE",
    "MONITOR_JOB",
    "MONITOR_SCHEDULE",
    "PRESSURE_EVENT",
    "PUBLISHER_KEY",
    "RESOURCE_KEY",
    "LogPublisher",
    "MaintenanceConfig",
    "PressureEvent",
    "PressureMonitorConfig",
    "PressurePublisher",
    "SrdpResource",
    "add_srdp_definitions",
    "check_catalog_pressure",
    "hourly_schedule",
    "maintain_datasets",
    "maintenance_job",
    "monitor_job",
    "nightly_schedule",
    "srdp_definitions",
]


def test_the_public_names_of_srdp_ingest_dlt_still_exist() -> None:
    import srdp.ingest.dlt as srdp_dlt

    assert [n for n in DLT_NAMES if not hasattr(srdp_dlt, n)] == []
    assert set(DLT_NAMES) <= set(srdp_dlt.__all__)
    # Entry points are the functions (not the submodules of the same name).
    assert [getattr(srdp_dlt, n).__module__ for n in ("destination", "pipeline", "run")] == [
        "srdp.ingest.dlt.destination"
    ] * 3
    assert issubclass(srdp_dlt.SrdpDltLoadError, srdp_dlt.SrdpDltError)
    assert issubclass(srdp_dlt.SrdpDltError, ValueError)
    with pytest.raises(AttributeError, match="module 'srdp.ingest.dlt' has no attribute 'no_such_name'"):
        srdp_dlt.no_such_name  # noqa: B018


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in MOVED.items() for n in names])
def test_a_moved_name_has_one_home_in_srdp_dagster_and_its_old_spelling_warns(module: str, name: str) -> None:
    import importlib

    import srdp.dagster as sd

    old = importlib.import_module(module)
    assert name in sd.__dir__() and name not in getattr(old, "__all__", [])
    with pytest.warns(DeprecationWarning) as caught:
        found = getattr(old, name)
    assert found is getattr(sd, name)
    assert [str(w.message) for w in caught] == [
        f"{module}.{name} is deprecated and will be removed in the next release: import it from srdp.dagster "
        f"(from srdp.dagster import {name}); {module} is Dagster-free"
    ]
    assert caught[0].filename == __file__  # the warning points at the caller's line


def test_the_public_names_of_srdp_dagster_still_exist() -> None:
    import dagster as dg

    import srdp.dagster as sd
    from srdp.dagster import SrdpDltTranslator, srdp_dlt_assets
    from srdp.dagster import dlt_assets

    assert [n for n in DAGSTER_NAMES if not hasattr(sd, n)] == []
    assert (srdp_dlt_assets, SrdpDltTranslator) == (dlt_assets.srdp_dlt_assets, dlt_assets.SrdpDltTranslator)
    assert (sd.MAINTENANCE_JOB, sd.MAINTENANCE_SCHEDULE, sd.MONITOR_JOB, sd.MONITOR_SCHEDULE) == (
        "srdp_dataset_maintenance",
        "srdp_dataset_maintenance_nightly",
        "srdp_catalog_pressure_monitor",
        "srdp_catalog_pressure_hourly",
    )
    assert (sd.PRESSURE_EVENT, sd.RESOURCE_KEY, sd.PUBLISHER_KEY) == (
        "DatasetCatalogPressure",
        "srdp",
        "srdp_pressure_publisher",
    )
    assert isinstance(sd.maintenance_job, dg.JobDefinition) and sd.maintenance_job.name == sd.MAINTENANCE_JOB
    assert isinstance(sd.monitor_job, dg.JobDefinition) and sd.monitor_job.name == sd.MONITOR_JOB
    assert (sd.maintain_datasets.name, sd.check_catalog_pressure.name) == (
        "srdp_maintain_datasets",
        "srdp_check_catalog_pressure",
    )
    assert (sd.nightly_schedule.name, sd.hourly_schedule.name) == (sd.MAINTENANCE_SCHEDULE, sd.MONITOR_SCHEDULE)
    assert issubclass(sd.SrdpResource, dg.ConfigurableResource)
    with pytest.raises(AttributeError, match="module 'srdp.dagster' has no attribute 'no_such_name'"):
        sd.no_such_name  # noqa: B018


def test_every_module_of_the_python_package_says_what_it_owns() -> None:
    modules = sorted((REPO / "python" / "srdp").rglob("*.py"))
    assert len(modules) >= 15
    missing = [str(m.relative_to(REPO)) for m in modules if not ast.get_docstring(ast.parse(m.read_text()))]
    assert missing == []


def test_the_write_core_and_ingest_import_neither_dagster_nor_dagster_dlt() -> None:
    done = run_venv_python(
        """
        import sys
        import srdp.lake, srdp.ingest, srdp.ingest.landing
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "dagster_dlt") or m.startswith("srdp.dagster")))
        print(srdp.lake.LakeSession.__module__, srdp.lake.TableRef.__module__, srdp.lake.Source.__module__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "srdp.lake.session srdp.lake.names srdp.lake.frames"]


def test_the_write_core_keeps_its_old_import_paths() -> None:
    import srdp.lake as lake
    from srdp.dagster import IOManagerError, handlers, tables
    from srdp.dagster import lake as old_lake

    assert (old_lake.LakeSession, old_lake.WritePlan, handlers.Source, tables.TableRef, tables.Slice) == (
        lake.LakeSession,
        lake.WritePlan,
        lake.Source,
        lake.TableRef,
        lake.Slice,
    )
    assert IOManagerError is tables.IOManagerError is lake.LakeError


def _import_time_edges() -> dict[str, set[str]]:
    """srdp's subpackages (lake, ingest, dagster, dbt, ...) and the other subpackages each imports
    when it is imported: module-level imports, outside ``if TYPE_CHECKING:`` and function bodies
    (a name imported on first use, in a function body, is not an edge here; see
    :func:`_upward_imports` for those)."""
    root = REPO / "python" / "srdp"
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if len(parts) < 2:
            continue  # srdp's own top-level modules are below every subpackage
        package = parts[0]
        for node in ast.parse(path.read_text()).body:
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                bits = name.split(".")
                if bits[0] == "srdp" and len(bits) > 1 and (root / bits[1]).is_dir() and bits[1] != package:
                    edges.setdefault(package, set()).add(bits[1])
    return edges


def test_no_two_srdp_packages_import_each_other() -> None:
    edges = _import_time_edges()
    mutual = sorted((a, b) for a, targets in edges.items() for b in targets if a in edges.get(b, set()) and a < b)
    assert mutual == []
    # The write core is the bottom: it imports no other subpackage, and both wings use it.
    assert "lake" not in edges
    assert {"lake"} <= edges["ingest"] and {"lake", "ingest"} <= edges["dagster"]


def _dlt_helper_import_graph() -> dict[str, set[str]]:
    """The modules of ``srdp.ingest.dlt`` (by file name, the package's ``__init__`` excluded: it is
    the facade that re-exports them) and the sibling modules each one imports ANYWHERE in its
    text: at module level, under ``if TYPE_CHECKING:`` and in function bodies. A type-only import
    is an edge too: the module cannot be read without the other."""
    root = REPO / "python" / "srdp" / "ingest" / "dlt"
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module in modules:
        for node in ast.walk(ast.parse((root / f"{module}.py").read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if node.level == 0 else "srdp.ingest.dlt." + node.module
                if node.level not in (0, 1):
                    continue
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                bits = name.split(".")
                if bits[:3] == ["srdp", "ingest", "dlt"] and len(bits) > 3 and bits[3] in modules:
                    if bits[3] != module:
                        graph[module].add(bits[3])
    return graph


def _first_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of ``graph`` as ``[a, b, ..., a]`` (sorted walk, so the answer is stable), or ``[]``."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_cycle_finder_sees_a_circle() -> None:
    # The control for the test below: the same finder reports a circle when there is one.
    assert _first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _first_cycle({"a": {"b"}, "b": set()}) == []


def test_the_dlt_helpers_modules_import_each_other_without_a_circle() -> None:
    graph = _dlt_helper_import_graph()
    assert _first_cycle(graph) == []
    # The value type is below every step; the steps use it, and only the top builds destinations.
    assert graph["target"] <= {"errors"}
    steps = ("credentials", "guard", "load", "redact", "rules")
    assert {s for s in steps if "target" not in graph[s]} == set()
    assert [m for m in graph if "destination" in graph[m]] == []
    assert {"target", *steps} <= graph["destination"]


#: Subpackages by layer, lowest first: a module may import only its own layer and those below
#: (``srdp``'s own top-level modules are below all of them). ``srdp.dagster`` and ``srdp.dbt``
#: are the top, the thin adapters.
LAYERS = {"lake": 1, "ingest": 2, "dagster": 3, "dbt": 3}

#: Upward imports kept for one release, each a deprecated spelling that goes in the next.
DEPRECATED_UPWARD_IMPORTS = {
    ("ingest/__init__.py", "srdp.dagster"),
    ("ingest/dlt/__init__.py", "srdp.dagster"),
}

#: A module name in a string (``importlib.import_module("srdp.dagster.x")``), not prose.
_MODULE_NAME = re.compile(r"srdp(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _upward_imports(relative: str, text: str) -> list[tuple[str, str]]:
    """(module file, imported module) of each import in ``text`` (the module ``relative`` to
    python/srdp) of a higher layer than the module's own: ``import``/``from`` statements anywhere
    (module level, ``if TYPE_CHECKING:``, function bodies) and module names in strings (what
    ``importlib.import_module`` is given)."""
    layer = LAYERS.get(relative.split("/")[0])
    if layer is None:
        return []
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _MODULE_NAME.fullmatch(node.value):
                names.append(node.value)
    found = []
    for name in names:
        bits = name.split(".")
        if bits[0] == "srdp" and len(bits) > 1 and LAYERS.get(bits[1], 0) > layer:
            found.append((relative, ".".join(bits[:2])))
    return sorted(set(found))


def test_the_upward_import_finder_sees_every_form() -> None:
    # The control for the test below: each way a module can reach up is found.
    text = textwrap.dedent(
        """
        \"\"\"Mentions srdp.dagster in prose, which is no import.\"\"\"
        import importlib
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from srdp.dbt.profile import render_profile
        def lazily():
            import srdp.dagster
            return importlib.import_module("srdp.dagster.dlt_assets")
        """
    )
    assert _upward_imports("ingest/x.py", text) == [("ingest/x.py", "srdp.dagster"), ("ingest/x.py", "srdp.dbt")]
    assert _upward_imports("lake/y.py", "from srdp.ingest.landing import zone\n") == [("lake/y.py", "srdp.ingest")]
    assert _upward_imports("dagster/z.py", "import srdp.ingest.dlt\n") == []


def test_no_module_imports_a_higher_layer_anywhere_in_its_text() -> None:
    root = REPO / "python" / "srdp"
    found = set()
    for path in sorted(root.rglob("*.py")):
        relative = str(path.relative_to(root))
        found |= set(_upward_imports(relative, path.read_text()))
    assert found - DEPRECATED_UPWARD_IMPORTS == set()
    # Each allowed one is still there: when a deprecated spelling goes, its entry goes too.
    assert found == DEPRECATED_UPWARD_IMPORTS
