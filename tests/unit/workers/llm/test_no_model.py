"""`ask` with no model behind it answers at once, with the settings that configure one, instead of backing off on a
connection nothing will ever accept."""

import socket
import time

import pytest

from geogate.calls.store import EventStore
from geogate.settings import LLMSettings, Settings
from schemas.ids import new_id
from schemas.tools.llm import AskArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.llm import ask


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def asked(store: EventStore, redis_url: str, llm: LLMSettings) -> tuple[JobFailed, float]:
    settings = Settings(redis_url=redis_url, llm=llm)
    ctx = JobContext(call_id=new_id(), roots=[], actor="alice", store=store, settings=settings)
    started = time.monotonic()
    with pytest.raises(JobFailed) as failed:
        ask(AskArgs(question="What is the CRS of dem.tif?"), ctx)
    return failed.value, time.monotonic() - started


def test_with_no_model_configured_ask_fails_at_once_naming_the_settings(real_store: EventStore, redis_url: str) -> None:
    """Nothing set: the default local address is tried once; the answer says how to configure a model."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    unset = LLMSettings.model_construct(_fields_set=set(), base_url=url, backoff_retries=4)

    error, took = asked(real_store, redis_url, unset)

    assert (error.code, error.retryable) == ("llm.unavailable", False)
    assert took < 2.0  # four backed-off retries took about 4 s
    for setting in ("GEOGATE_LLM_BASE_URL", "GEOGATE_LLM_MODEL", "GEOGATE_LLM_API_KEY", "GEOGATE_LLM_PROVIDER"):
        assert setting in error.message
    assert "no model is configured" in error.message and url in error.message


def test_a_configured_model_that_does_not_answer_fails_at_once_and_may_be_retried(
    real_store: EventStore, redis_url: str
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"

    error, took = asked(real_store, redis_url, LLMSettings(base_url=url, backoff_retries=4))

    assert (error.code, error.retryable) == ("llm.unavailable", True) and took < 2.0
    assert f"GEOGATE_LLM_BASE_URL is {url}" in error.message and f"nothing answers at {url}/" in error.message
