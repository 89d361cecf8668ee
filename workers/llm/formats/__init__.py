"""Tool calls as open-weight models write them when the serving engine leaves them in the text.

One parser per format family, each in its own module; `parse_reply` splits off the reasoning, picks the
parser whose marker comes first in the content (a marker inside a JSON call's string does not count),
and falls back to the JSON object scan when no marker is present. Every parser reads a call to its real
end (the JSON decoder's end, the markup's structure), never to the first end marker in the text.

Never a silent drop: when call markup is left in the content and neither a call nor an error came out of the
reply, it gets an `invalid_markup` error naming the family, so the loop can tell the model.
"""

import re
from collections.abc import Callable, Collection
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
from workers.llm.formats.base import Parsed, RawCall, clip, malformed
from workers.llm.formats.reasoning import split_reasoning
from workers.llm.scanner import looks_like_call, scan_objects

__all__ = ["FORMATS", "Format", "Parsed", "RawCall", "parse_reply"]


@dataclass(frozen=True)
class Format:
    """A format family: the markers that reveal it, and its parser."""

    name: str
    sniff: re.Pattern[str]
    parse: Callable[[str], Parsed]
    markup: re.Pattern[str] | None = None
    """Call markup that is never prose: found with no call and no error, it is an `invalid_markup` error. None
    where the parser itself tells a mention in prose from a broken call (`<tool_call>`, `[TOOL_CALLS]`)."""


_XTML = re.compile(r"<\|open\|>(?:tools|call)\b")
_DEEPSEEK = re.compile(r"<｜tool[▁_]calls?[▁_]begin｜>")
_KIMI = re.compile(r"<\|tool_calls_section_begin\|>|<\|tool_call_begin\|>")
FORMATS: tuple[Format, ...] = (
    Format("harmony", harmony.START, harmony.parse, re.compile(r"<\|constrain\|>")),
    Format("kimi_xtml", _XTML, xtml.parse, _XTML),
    Format("deepseek_dsml", dsml.MARKERS, dsml.parse, dsml.MARKERS),
    Format("deepseek", _DEEPSEEK, deepseek.parse, _DEEPSEEK),
    Format("kimi", _KIMI, kimi.parse, _KIMI),
    Format("gemma", gemma.START, gemma.parse, gemma.START),
    Format("mistral", mistral.START, mistral.parse),
    Format("tool_call", tagged.START, tagged.parse),
    Format("qwen3_xml", qwen_xml.START, qwen_xml.parse, qwen_xml.START),
    Format("llama_python_tag", llama.START, llama.parse, llama.START),
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
    parsed = _read(split.content)
    _no_silent_drop(parsed)
    parsed.reasoning = "\n\n".join(part for part in (split.reasoning, parsed.reasoning) if part)
    parsed.errors[:0] = split.errors
    parsed.content = _NOISE.sub("", parsed.content).strip()
    return parsed


def _read(content: str) -> Parsed:
    """`content` read by the format its first marker reveals; when that yields nothing, the content it left is
    read again by the next format whose marker it holds (a stray marker of another family came first). JSON in
    that content stays content: a harmony `final` message that looks like a call is the answer."""
    tried: set[str] = set()
    fmt = sniff(content)
    parsed = fmt.parse(content)
    while not parsed.calls and not parsed.errors:
        tried.add(fmt.name)
        fmt = sniff(parsed.content, skip=tried)
        if fmt is _JSON:
            break
        again = fmt.parse(parsed.content)
        again.reasoning = "\n\n".join(part for part in (parsed.reasoning, again.reasoning) if part)
        parsed = again
    return parsed


def sniff(text: str, skip: Collection[str] = ()) -> Format:
    """The format whose marker comes first in `text` (formats named in `skip` aside), or the JSON scan."""
    found = [
        (m.start(), i) for i, f in enumerate(FORMATS) if f.name not in skip and (m := f.sniff.search(text)) is not None
    ]
    if not found:
        return _JSON
    pos, index = min(found)
    return _JSON if _inside_json_call(text, pos) else FORMATS[index]


_JSON = Format("json", re.compile(r"\{"), json_scan.parse)


def _no_silent_drop(parsed: Parsed) -> None:
    """Call markup the parser left in the content, with no call and no error, becomes an `invalid_markup` error."""
    if parsed.errors or any(call.required for call in parsed.calls):
        return  # JSON that the fallback scan found in prose may be data, not a call
    for fmt in FORMATS:
        if fmt.markup is not None and (found := fmt.markup.search(parsed.content)) is not None:
            near = clip(parsed.content[found.start() :], 60)
            parsed.errors.append(malformed(f"{fmt.name} call markup holds no call that can be read: {near!r}"))
            return


def _inside_json_call(text: str, pos: int) -> bool:
    """True when `pos` lies inside a closed JSON object that is itself a call (a marker in a string argument)."""
    if "{" not in text[:pos]:
        return False
    return any(s.closed and s.start < pos < s.end and looks_like_call(s.of(text)) for s in scan_objects(text))
