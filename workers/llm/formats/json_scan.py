"""The fallback when no marker is present: every balanced JSON object in the text, fenced or not.

Covers the generic `{"tool", "params"}` format, Llama 3.x JSON `{"name", "parameters"}` and any JSON
call buried in prose. Objects that are not calls are data; an unclosed object that looks like a call
means the reply was cut off.
"""

from workers.llm.formats.base import Parsed, RawCall, clip, truncated
from workers.llm.scanner import scan_objects


def parse(text: str) -> Parsed:
    """Every top-level JSON object in `text`, as candidate calls; the whole text stays the content."""
    parsed = Parsed("json", content=text)
    for span in scan_objects(text):
        if span.closed:
            parsed.calls.append(RawCall(None, span.of(text), required=False))
        else:
            error = truncated("JSON")
            parsed.errors.append(error.model_copy(update={"message": f"{error.message}: {clip(span.of(text))}"}))
    return parsed
