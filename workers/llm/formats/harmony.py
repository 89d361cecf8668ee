"""gpt-oss harmony channels, read message by message:

    <|channel|>analysis<|message|>reasoning…<|end|>
    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
    <|start|>assistant<|channel|>final<|message|>the answer<|return|>

`analysis` is reasoning, whatever it holds (a recipient there is not a call); `final` and `commentary`
without a recipient are content, even when they look like JSON; a message with a recipient
(`to=` in the header, before or after the channel) outside `analysis` is a call whose JSON ends where
the decoder says, so a `<|call|>` inside a string argument stays in it.
"""

import re

from workers.llm.formats.base import Block, Parsed, RawCall, json_end, malformed, skip_marker, skip_ws, truncated

START = re.compile(r"<\|channel\|>|<\|start\|>|<\|message\|>")
_MESSAGE = "<|message|>"
_TERMINATOR = re.compile(r"<\|(?:end|call|return)\|>|<\|start\|>")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_HEADER = re.compile(r"<\|start\|>|<\|channel\|>")
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
            _tail(text[pos:], parsed, content)
            break
        lead, header = _split_header(text[pos:head_end])
        content.append(lead)
        channel = found[1] if (found := _CHANNEL.search(header)) else ""
        recipient = found[1] if (found := _RECIPIENT.search(header)) else None
        body = head_end + len(_MESSAGE)
        if recipient and channel != "analysis":
            block = _call(text, body, recipient.removeprefix("functions."))
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


def _split_header(header: str) -> tuple[str, str]:
    """Plain text before a message's header (output outside any message), and the header itself."""
    first = _HEADER.search(header)
    if first is None:
        return "", header
    return header[: first.start()], header[first.start() :]


def _call(text: str, body: int, name: str) -> Block:
    at = skip_ws(text, body)
    if at >= len(text):
        return Block(len(text), errors=[truncated(_WHAT, name)])
    if text[at] not in "{[":
        stop = _TERMINATOR.search(text, at)
        end = stop.end() if stop else len(text)
        return Block(end, errors=[malformed(f"the arguments of {name!r} must be a JSON object", name)])
    end = json_end(text, at)
    if end is None:
        return Block(len(text), errors=[truncated(_WHAT, name)])
    return Block(skip_marker(text, end, "<|call|>", "<|end|>"), [RawCall(name, text[at:end])])


def _tail(rest: str, parsed: Parsed, content: list[str]) -> None:
    """Text after the last message: a header cut off before its message, or plain content."""
    lead, header = _split_header(rest)
    content.append(lead)
    recipient = _RECIPIENT.search(header)
    if recipient and (channel := _CHANNEL.search(header)) and channel[1] == "analysis":
        return
    if recipient:
        parsed.errors.append(truncated(_WHAT, recipient[1].removeprefix("functions.")))
