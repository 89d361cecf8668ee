"""Shared fixtures of the LLM host tests: the anyio backend, the scripted chat server, sample MCP tools."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[4]
if str(ROOT) not in sys.path:  # `tests.llm_server` lives outside the installed packages
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def llm_server() -> Iterator[Any]:
    """One scripted OpenAI-compatible server for the session; each test loads its own script."""
    from tests.llm_server import scripted_server

    with scripted_server() as server:
        yield server
