"""Dependency rule (STYLE.md): gateway and workers never import each other; schemas imports neither nor eventlog."""

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
