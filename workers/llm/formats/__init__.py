"""Tool calls as open-weight models write them when the serving engine leaves them in the text.

One parser per format family, each in its own module; `parse_reply` splits off the reasoning, picks the
parser whose marker comes first in the content (a marker inside a JSON call's string does not count),
and falls back to the JSON object scan when no marker is present. Every parser reads a call to its real
end (the JSON decoder's end, the markup's structure), never to the first end marker in the text.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from workers.llm.formats import (
    deepseek,
    dsml,
    gemma,
    harmony,
    json_scan,
    kimi,
    llama,
    mistral,
    pythonic,
    qwen_xml,
    tagged,
    xtml,
)
from workers.llm.formats.base import Parsed, RawCall
from workers.llm.formats.reasoning import split_reasoning
from workers.llm.scanner import looks_like_call, scan_objects

__all__ = ["FORMATS", "Format", "Parsed", "RawCall", "parse_reply"]


@dataclass(frozen=True)
class Format:
    """A format family: the markers that reveal it, and its parser."""

    name: str
    sniff: re.Pattern[str]
    parse: Callable[[str], Parsed]


FORMATS: tuple[Format, ...] = (
    Format("harmony", harmony.START, harmony.parse),
    Format("kimi_xtml", re.compile(r"<\|open\|>(?:tools|call)\b"), xtml.parse),
    Format("deepseek_dsml", re.compile(r"<[｜|]DSML[｜|]|<function_calls>|<invoke\s+name=\""), dsml.parse),
    Format("deepseek", re.compile(r"<｜tool[▁_]calls?[▁_]begin｜>"), deepseek.parse),
    Format("kimi", re.compile(r"<\|tool_calls_section_begin\|>|<\|tool_call_begin\|>"), kimi.parse),
    Format("gemma", gemma.START, gemma.parse),
    Format("mistral", mistral.START, mistral.parse),
    Format("tool_call", tagged.START, tagged.parse),
    Format("qwen3_xml", qwen_xml.START, qwen_xml.parse),
    Format("llama_python_tag", llama.START, llama.parse),
    Format("pythonic", pythonic.START, pythonic.parse),
)
"""Every marker format; when two markers start at the same place the earlier entry wins."""

_NOISE = re.compile(
    r"<\|(?:im_end|eot_id|eom_id|end_of_text|endoftext|end|return|end_of_msg|observation|user)\|>"
    r"|</s>|<end_of_turn>|<turn\|>|<｜end▁of▁sentence｜>"
)


def parse_reply(text: str) -> Parsed:
    """Reasoning, content, calls and broken calls of one reply, read by the format its markers reveal."""
    split = split_reasoning(text)
    parsed = sniff(split.content).parse(split.content)
    parsed.reasoning = "\n\n".join(part for part in (split.reasoning, parsed.reasoning) if part)
    parsed.errors[:0] = split.errors
    parsed.content = _NOISE.sub("", parsed.content).strip()
    return parsed


def sniff(text: str) -> Format:
    """The format whose marker comes first in `text`, or the JSON scan when there is none."""
    found = [(m.start(), i) for i, f in enumerate(FORMATS) if (m := f.sniff.search(text)) is not None]
    if not found:
        return _JSON
    pos, index = min(found)
    return _JSON if _inside_json_call(text, pos) else FORMATS[index]


_JSON = Format("json", re.compile(r"\{"), json_scan.parse)


def _inside_json_call(text: str, pos: int) -> bool:
    """True when `pos` lies inside a closed JSON object that is itself a call (a marker in a string argument)."""
    if "{" not in text[:pos]:
        return False
    return any(s.closed and s.start < pos < s.end and looks_like_call(s.of(text)) for s in scan_objects(text))
