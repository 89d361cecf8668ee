"""The model capability table (data): native tool calling or prompt-based, which prompt template, context size."""

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelCapability:
    """What the host assumes about a model family."""

    native_tools: bool
    """The serving API parses tool calls itself (`tools` in the request, `tool_calls` in the reply)."""
    template: str
    """Key into `templates.TEMPLATES` for prompt-based calling (also used if native calling is turned off)."""
    context_tokens: int = 8192
    native_format: str | None = None
    """The template of the format the model was trained to write calls in, when known: prompt-based
    calling asks for it instead of `template` with `GEOGATE_LLM_PROMPT_FORMAT=native`."""


CAPABILITIES: tuple[tuple[str, ModelCapability], ...] = (
    ("gpt-4o*", ModelCapability(True, "generic", 128_000)),
    ("gpt-4.1*", ModelCapability(True, "generic", 128_000)),
    ("gpt-5*", ModelCapability(True, "generic", 200_000)),
    ("o[134]*", ModelCapability(True, "generic", 128_000)),
    ("gpt-oss*", ModelCapability(True, "generic", 128_000, "harmony")),
    ("claude-*", ModelCapability(True, "generic", 200_000)),
    ("qwen2.5-coder*", ModelCapability(False, "code", 32_768, "hermes")),
    ("qwen2.5*", ModelCapability(True, "generic", 32_768, "hermes")),
    ("qwen3-coder*", ModelCapability(True, "generic", 262_144, "qwen3_coder")),
    ("qwen3.5*", ModelCapability(True, "generic", 262_144, "qwen3_coder")),
    ("qwen3*", ModelCapability(True, "generic", 32_768, "hermes")),
    ("hermes*", ModelCapability(False, "generic", 8192, "hermes")),
    ("llama3.[123]*", ModelCapability(True, "llama3", 128_000)),
    ("llama-3.[123]*", ModelCapability(True, "llama3", 128_000)),
    ("meta-llama-3.[123]*", ModelCapability(True, "llama3", 128_000)),
    ("llama3*", ModelCapability(False, "llama3", 8192)),
    ("llama4*", ModelCapability(True, "llama3", 128_000, "pythonic")),
    ("llama-4*", ModelCapability(True, "llama3", 128_000, "pythonic")),
    ("glm-4.[5-9]*", ModelCapability(True, "generic", 128_000, "glm")),
    ("glm*", ModelCapability(False, "generic", 32_768, "glm")),
    ("deepseek-v3.[2-9]*", ModelCapability(True, "generic", 128_000, "dsml")),
    ("deepseek-v4*", ModelCapability(True, "generic", 128_000, "dsml")),
    ("deepseek-v3*", ModelCapability(True, "generic", 128_000, "deepseek")),
    ("deepseek-r1*", ModelCapability(False, "generic", 128_000, "deepseek")),
    ("deepseek-chat*", ModelCapability(True, "generic", 128_000, "deepseek")),
    ("kimi*", ModelCapability(True, "generic", 128_000, "kimi")),
    ("mistral-large*", ModelCapability(True, "generic", 128_000, "mistral")),
    ("mistral-small*", ModelCapability(True, "generic", 32_768, "mistral")),
    ("magistral*", ModelCapability(True, "generic", 40_000, "mistral")),
    ("devstral*", ModelCapability(True, "generic", 128_000, "mistral")),
    ("mistral*", ModelCapability(False, "generic", 32_768, "mistral")),
    ("*coder*", ModelCapability(False, "code", 16_384)),
    ("codellama*", ModelCapability(False, "code", 16_384)),
    ("starcoder*", ModelCapability(False, "code", 8192)),
    ("gemma-4*", ModelCapability(False, "generic", 128_000, "gemma4")),
    ("gemma4*", ModelCapability(False, "generic", 128_000, "gemma4")),
    ("gemma*", ModelCapability(False, "generic", 8192)),
    ("phi*", ModelCapability(False, "generic", 4096)),
    ("*", ModelCapability(False, "generic", 8192)),
)
"""First match wins (fnmatch on the lower-cased model name without an `org/` prefix). Unknown models are
prompt-based: the universal path that works with any instruction-following model."""


def capability_for(model: str) -> ModelCapability:
    """The capability row for `model` (`Qwen/Qwen3-8B`, `llama3.1:8b`, `gpt-4o-mini`, …)."""
    name = model.lower().rsplit("/", 1)[-1]
    return next(cap for pattern, cap in CAPABILITIES if fnmatch.fnmatchcase(name, pattern))
