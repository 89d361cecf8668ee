"""The package metadata: what setuptools reads from pyproject.toml without a deprecation warning."""

import tomllib
from pathlib import Path

from packaging.licenses import canonicalize_license_expression
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_licence_is_an_spdx_expression_with_its_files() -> None:
    project = pyproject()["project"]
    assert isinstance(project["license"], str), "a table licence makes setuptools >= 77 warn on every build"
    assert canonicalize_license_expression(project["license"]) == project["license"] == "Apache-2.0"
    files = [path for pattern in project["license-files"] for path in ROOT.glob(pattern)]
    assert files and all("Apache License" in path.read_text()[:200] for path in files)
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))


def test_the_build_uses_a_setuptools_that_reads_spdx_licences() -> None:
    requires = [Requirement(r) for r in pyproject()["build-system"]["requires"]]
    setuptools = next(r for r in requires if r.name == "setuptools")
    assert not setuptools.specifier.contains("76.9") and setuptools.specifier.contains("77.0")
