"""Per-model prompt templates: native formats where known, and every example they show is read by the extractor."""

import pytest

from geogate.settings import LLMSettings
from workers.llm import LLMConfig, capability_for, extract_calls
from workers.llm.config import config_for
from workers.llm.providers.openai import parse_reply
from workers.llm.templates import TEMPLATES

EXAMPLE_TOOLS = [
    {
        "name": name,
        "inputSchema": {"type": "object", "properties": {"arg": {"type": "string"}, "count": {"type": "integer"}}},
    }
    for name in ("function_name", "other_function", "tool_name")
]
NATIVE = sorted(set(TEMPLATES) - {"generic", "llama3", "code"})


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_example_call_a_template_shows_is_read_back_as_a_call(name: str) -> None:
    template = TEMPLATES[name]
    found = extract_calls(template.call_format, EXAMPLE_TOOLS)
    assert found.errors == [] and found.calls, (name, found.errors)
    assert found.calls[0].tool in ("function_name", "tool_name")
    assert "{{" not in template.call_format  # shown as written, never str.format-ted


@pytest.mark.parametrize(
    ("model", "native_format"),
    [
        ("Qwen/Qwen3-8B", "hermes"),
        ("qwen3-coder:30b", "qwen3_coder"),
        ("glm-4.6", "glm"),
        ("mistral-small-3.2", "mistral"),
        ("magistral-small", "mistral"),
        ("llama4:scout", "pythonic"),
        ("deepseek-v3.1", "deepseek"),
        ("deepseek-v3.2-exp", "dsml"),
        ("kimi-k2-instruct", "kimi"),
        ("gpt-oss:20b", "harmony"),
        ("gemma-4-e4b-it", "gemma4"),
        ("gemma3:4b", None),
        ("some-new-model", None),
    ],
)
def test_the_capability_table_knows_native_formats(model: str, native_format: str | None) -> None:
    cap = capability_for(model)
    assert cap.native_format == native_format
    assert native_format is None or native_format in TEMPLATES


def test_prompt_format_native_asks_for_the_models_own_format() -> None:
    assert LLMConfig(model="glm-4.6", native_tools=False).capability().template == "generic"
    assert LLMConfig(model="glm-4.6", native_tools=False, prompt_format="native").capability().template == "glm"
    assert LLMConfig(model="gemma3:4b", prompt_format="native").capability().template == "generic"
    assert LLMConfig(model="glm-4.6", prompt_format="native", template="code").capability().template == "code"


def test_the_setting_reaches_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEOGATE_LLM_PROMPT_FORMAT", "native")
    assert config_for(LLMSettings(), "kimi-k2").capability().template == "kimi"


def test_reasoning_the_server_split_off_is_kept() -> None:
    reply = {"choices": [{"message": {"content": "EPSG:4326", "reasoning_content": "the tool said so"}}]}
    assert parse_reply(reply).reasoning == "the tool said so"
