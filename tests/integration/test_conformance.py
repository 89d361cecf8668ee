"""The official MCP conformance suite (`make conformance`) in CI: both eras against `geogate dev` with the fixtures."""

import subprocess
import sys

import pytest

from tests.conformance_suite import ROOT, SUITE

pytestmark = pytest.mark.integration


def test_the_conformance_suite_passes_every_scored_and_tasks_scenario_in_both_eras() -> None:
    assert SUITE.exists(), "the suite is installed by `make test` (conformance-deps): Node 22 from the npm registry"
    run = subprocess.run(
        [sys.executable, "-m", "tests.conformance_suite"], cwd=ROOT, capture_output=True, text=True, timeout=1500
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "== 2026-07-28" in run.stdout and "== 2025-11-25" in run.stdout
