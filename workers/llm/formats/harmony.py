"""gpt-oss harmony channels, read message by message:

    <|channel|>analysis<|message|>reasoning…<|end|>
    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
    <|start|>assistant<|channel|>final<|message|>the answer<|return|>

`analysis` is reasoning; `final` and `commentary` without a recipient are content, even when they look like
JSON; a message with a recipient (`to=` in the header, before or after the channel, `<|constrain|>json` or the
bare word `json` anywhere after it) is a call whose JSON ends where the decoder says, so a `<|call|>` inside a
string argument stays in it. On `analysis` only a `functions.*` recipient is a call (vLLM and llama.cpp accept
it there too); the built-in tools' recipients there (`browser.*`, `python`) are reasoning. A reply may begin
inside its first header when the engine prefilled `<|start|>assistant` (` to=functions.NAME<|channel|>…`) or
also the channel tag (`commentary to=functions.NAME <|constrain|>json<|message|>`).
"""

import re

from workers.llm.formats.base import Block, Parsed, json_call, malformed, skip_ws, truncated

START = re.compile(r"<\|channel\|>|<\|start\|>|<\|message\|>")
_MESSAGE = "<|message|>"
_TERMINATOR = re.compile(r"<\|(?:end|call|return)\|>|<\|start\|>")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_HEADER = re.compile(r"<\|start\|>|<\|channel\|>")
_PREFILLED = re.compile(
    r"\s*(?:assistant\b\s*)?(?P<channel>(?:analysis|commentary|final)\b)?\s*(?:to=[^\s<]+\s*)?"
    r"(?:<\|constrain\|>\s*)?(?:json\s*)?"
)
"""The rest of a header whose start the engine prefilled: what may come before the first `<|message|>`."""
_HEADER_ONLY = re.compile(
    r"(?:\s+|<\|start\|>|<\|channel\|>|<\|constrain\|>|assistant|analysis|commentary|final|json|to=[^\s<]*|<\|?)*"
)
"""A header cut off before its `<|message|>`: tags, the role, a channel name, a recipient, a constraint."""
_WHAT = "harmony"


def parse(text: str) -> Parsed:
    """The reply's messages: analysis as reasoning, final and preambles as content, recipients as calls."""
    parsed = Parsed("harmony")
    content: list[str] = []
    reasoning: list[str] = []
    pos = 0
    while pos < len(text):
        head_end = text.find(_MESSAGE, pos)
        if head_end == -1:
            _tail(text[pos:], parsed, content, prefilled=pos == 0)
            break
        lead, header = _split_header(text[pos:head_end], prefilled=pos == 0)
        content.append(lead)
        channel, recipient = _channel(header), _recipient(header)
        body = head_end + len(_MESSAGE)
        if _is_call(channel, recipient) or (recipient is None and "<|constrain|>" in header):
            block = _call(text, body, recipient) if recipient else _no_recipient(text, body)
            parsed.calls += block.calls
            parsed.errors += block.errors
            pos = block.end
            continue
        stop = _TERMINATOR.search(text, body)
        end = stop.start() if stop else len(text)
        (reasoning if channel == "analysis" else content).append(text[body:end])
        pos = stop.end() if stop and stop[0] != "<|start|>" else end
    parsed.content = "\n".join(part.strip() for part in content if part.strip())
    parsed.reasoning = "\n".join(part.strip() for part in reasoning if part.strip())
    return parsed


def _split_header(header: str, *, prefilled: bool) -> tuple[str, str]:
    """Plain text before a message's header (output outside any message), and the header itself.

    At the start of the reply, header text before the first tag is the rest of a prefilled header.
    """
    first = _HEADER.search(header)
    start = first.start() if first else len(header)
    if prefilled and header[:start].strip() and _PREFILLED.fullmatch(header[:start]):
        return "", header
    if first is None:
        return "", header
    return header[:start], header[start:]


def _channel(header: str) -> str:
    found = _CHANNEL.search(header) or _PREFILLED.match(header)
    return (found[1] if found else None) or ""


def _recipient(header: str) -> str | None:
    found = _RECIPIENT.search(header)
    return found[1] if found else None


def _is_call(channel: str, recipient: str | None) -> bool:
    """A recipient makes a call, except the built-in tools' recipients on the analysis channel."""
    return recipient is not None and (channel != "analysis" or recipient.startswith("functions."))


def _no_recipient(text: str, body: int) -> Block:
    stop = _TERMINATOR.search(text, body)
    end = stop.end() if stop else len(text)
    return Block(end, errors=[malformed("a harmony call header (<|constrain|>) names no recipient (to=functions.…)")])


def _call(text: str, body: int, recipient: str) -> Block:
    name = recipient.removeprefix("functions.")
    at = skip_ws(text, body)
    if at >= len(text):
        return Block(len(text), errors=[truncated(_WHAT, name)])
    if text[at] not in "{[":
        stop = _TERMINATOR.search(text, at)
        end = stop.end() if stop else len(text)
        return Block(end, errors=[malformed(f"{_WHAT}: the arguments of {name!r} must be a JSON object", name)])
    return json_call(text, at, _WHAT, name, ("<|call|>", "<|end|>"))


def _tail(rest: str, parsed: Parsed, content: list[str], *, prefilled: bool) -> None:
    """Text after the last message: a header cut off before its message, or plain content."""
    lead, header = _split_header(rest, prefilled=prefilled)
    content.append(lead)
    recipient = _recipient(header)
    if recipient and _is_call(_channel(header), recipient):
        parsed.errors.append(truncated(_WHAT, recipient.removeprefix("functions.")))
    elif not _HEADER_ONLY.fullmatch(header):
        content.append(header)  # not a header cut short: text the model wrote after a stray tag
