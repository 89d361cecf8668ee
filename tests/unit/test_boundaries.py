"""Import rule (docs/layout.md): gateway and workers never import each other; schemas imports neither nor eventlog."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "gateway": {"workers"},
    "workers": {"gateway"},
    "eventlog": {"gateway", "workers"},
    "schemas": {"gateway", "workers", "eventlog"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_dependency_rule(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_rule_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("from workers.app import app\nimport gateway.cli\n")
    assert imported_packages(bad) == {"workers", "gateway"}


def imported_modules(path: Path) -> set[str]:
    """Full dotted names of what `path` imports (`from a.b import c` gives `a.b`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


PREFLIGHT_DOMAIN = ("pyproj", "schemas.preflight", "schemas.call_plan")


def test_the_event_store_knows_nothing_of_the_preflight_domain() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith(PREFLIGHT_DOMAIN))
        for path in (ROOT / "eventlog").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


OUTCOME_READERS = {"gateway/outcomes.py", "workers/outcomes.py"}
"""The one module per process (gateway, worker) that reads the calls stream to answer or resume a waiting call."""
LOG_VIEWS = {
    "gateway/tail.py": "`geogate tail`, its own process: prints every stream",
    "gateway/ops/reads.py": "the /ops live log: shows every stream to an operator, answers no call",
    "eventlog/ops_feed.py": "folds every stream into the ops projections",
}


def xread_modules() -> set[str]:
    found = set()
    for package in ("eventlog", "gateway", "workers"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "xread":
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_one_module_per_process_reads_outcomes_from_the_calls_stream() -> None:
    readers = xread_modules() - set(LOG_VIEWS)
    assert readers == OUTCOME_READERS
    assert {r.split("/")[0] for r in readers} == {"gateway", "workers"}
