"""Content blocks a job returns beside its structured result (MCP `content`: text, image, audio, embedded resource).

Small media only (a preview, a legend, a short snippet): they travel in `tool.succeeded`, and the log holds no large
payload; a large output goes to the blob store behind `output_ref`.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_BLOCK_CHARS = 65_536
"""The most characters one block's text or base64 data may hold."""


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str = Field(max_length=MAX_BLOCK_CHARS)


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    data: str = Field(min_length=1, max_length=MAX_BLOCK_CHARS)
    """Base64 of the image bytes."""
    mime_type: str = Field(pattern=r"^image/[\w.+-]+$")


class AudioBlock(_Block):
    type: Literal["audio"] = "audio"
    data: str = Field(min_length=1, max_length=MAX_BLOCK_CHARS)
    """Base64 of the audio bytes."""
    mime_type: str = Field(pattern=r"^audio/[\w.+-]+$")


class ResourceBlock(_Block):
    """A resource embedded in the result: its URI and either its text or its bytes (base64)."""

    type: Literal["resource"] = "resource"
    uri: str = Field(min_length=1, max_length=2000)
    mime_type: str = Field(min_length=1, max_length=200)
    text: str | None = Field(default=None, max_length=MAX_BLOCK_CHARS)
    blob: str | None = Field(default=None, max_length=MAX_BLOCK_CHARS)

    @model_validator(mode="after")
    def _text_or_blob(self) -> "ResourceBlock":
        if (self.text is None) == (self.blob is None):
            raise ValueError("an embedded resource carries exactly one of text and blob")
        return self


ContentBlock = Annotated[TextBlock | ImageBlock | AudioBlock | ResourceBlock, Field(discriminator="type")]
