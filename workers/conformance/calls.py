"""Jobs of the plain fixtures (`schemas.tools.conformance.calls`): media, progress, client log lines, errors."""

import base64
import io
import math
import struct
import time
import wave

from schemas.content import AudioBlock, ContentBlock, ImageBlock, ResourceBlock, TextBlock, solid_png
from schemas.tools.conformance.calls import ContactArgs, GreetArgs, MediaReply, RegionArgs, Reply
from schemas.tools.conformance.tasks import NeverResult, NoArgs
from workers.context import JobContext
from workers.errors import JobFailed
from workers.inputs import tell
from workers.jobs import job

GEOGATE_GREEN = (46, 139, 87)


def wav(seconds: float = 0.05, hz: float = 440.0, rate: int = 8000) -> bytes:
    """A short mono 16-bit sine tone as a WAV file."""
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * n / rate))) for n in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(frames)
    return out.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def swatch() -> ImageBlock:
    return ImageBlock(data=_b64(solid_png(2, 2, GEOGATE_GREEN)), mime_type="image/png")


NOTE = ResourceBlock(
    uri="test://fixtures/note.txt", mime_type="text/plain", text="A note embedded in a Geogate tool result."
)
CATALOG_ENTRY = ResourceBlock(
    uri="test://fixtures/catalog-entry.json",
    mime_type="application/json",
    text='{"file": "dem.tif", "crs": "EPSG:32633", "bands": 1}',
)


@job("test_simple_text")
def simple_text(args: NoArgs, ctx: JobContext) -> Reply:
    return Reply(said=f"Plain text from Geogate worker {ctx.worker}.")


def _media(blocks: list[ContentBlock]) -> MediaReply:
    return MediaReply.of(blocks)


@job("test_image_content")
def image(args: NoArgs, ctx: JobContext) -> MediaReply:
    return _media([swatch()])


@job("test_audio_content")
def audio(args: NoArgs, ctx: JobContext) -> MediaReply:
    return _media([AudioBlock(data=_b64(wav()), mime_type="audio/wav")])


@job("test_embedded_resource")
def embedded(args: NoArgs, ctx: JobContext) -> MediaReply:
    return _media([NOTE])


@job("test_multiple_content_types")
def mixed(args: NoArgs, ctx: JobContext) -> MediaReply:
    return _media([TextBlock(text="A swatch and a catalog entry follow."), swatch(), CATALOG_ENTRY])


@job("test_error_handling")
def refuses(args: NoArgs, ctx: JobContext) -> NeverResult:
    raise JobFailed("fixture.refused", "test_error_handling always ends with this tool error, on purpose")


@job("test_tool_with_progress")
def progress(args: NoArgs, ctx: JobContext) -> Reply:
    for done in (0, 50, 100):
        ctx.progress(done, 100, f"{done} of 100")
        if done < 100:
            time.sleep(0.15)  # the runner sends at most one progress event per 0.1 s
    return Reply(said="reported progress 0, 50 and 100 of 100")


@job("test_tool_with_logging")
def logging_lines(args: NoArgs, ctx: JobContext) -> Reply:
    for step in ("started", "halfway", "done"):
        tell(ctx, f"test_tool_with_logging: {step}")
        time.sleep(0.05)
    return Reply(said="sent three log lines")


@job("test_reconnection")
def held(args: NoArgs, ctx: JobContext) -> Reply:
    tell(ctx, "holding the call")
    time.sleep(0.2)
    tell(ctx, "releasing the call")
    return Reply(said="held the call for 0.2 s")


@job("greet")
def greet(args: GreetArgs, ctx: JobContext) -> Reply:
    return Reply(said=f"Hello, {args.name}!")


@job("test_x_mcp_header")
def region(args: RegionArgs, ctx: JobContext) -> Reply:
    return Reply(said=f"region={args.region or '(none)'}")


@job("json_schema_2020_12_tool")
def contact(args: ContactArgs, ctx: JobContext) -> Reply:
    how = args.phone if args.contactMethod == "phone" or not args.email else args.email
    return Reply(said=f"reach {args.name or 'them'} at {how}")


@job("test_trigger_tool_change")
def tools_changed(args: NoArgs, ctx: JobContext) -> Reply:
    return Reply(said="the gateway announces a tool-list change")


@job("test_trigger_prompt_change")
def prompts_changed(args: NoArgs, ctx: JobContext) -> Reply:
    return Reply(said="the gateway announces a prompt-list change")


@job("test_missing_capability")
def needs_sampling(args: NoArgs, ctx: JobContext) -> Reply:
    return Reply(said="the client declared sampling")
