"""XYZ map tiles: what a tile request asks for (WebMercatorQuad, 256² PNG) and what a worker answers.

A tile is a read, not a call: the gateway sends a `TileRequest` to a worker over the `gdal` queue and waits for the
`TileReply` on a short-lived Redis list; neither goes into the event log (docs/maps.md, "Tiles").
"""

import hashlib
import re
from typing import Annotated, Literal, Self, TypeVar

import msgpack
from pydantic import BaseModel, ConfigDict, Field, model_validator

TILE_SIZE = 256
"""Pixels on a side of every tile (MapLibre's raster source default)."""
MIN_ZOOM, MAX_ZOOM = 0, 24
COLORMAP_NAME = re.compile(r"^[a-z0-9_]{1,40}$")

M = TypeVar("M", bound=BaseModel)

Band = Annotated[int, Field(ge=1, le=65_535)]


class TileQuery(BaseModel):
    """One tile of one workspace raster, in a given style: the query string of `GET /tiles/{z}/{x}/{y}.png`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    path: str = Field(min_length=1, max_length=4096)
    """A workspace path, as tools take it."""
    z: int = Field(ge=MIN_ZOOM, le=MAX_ZOOM)
    x: int = Field(ge=0)
    y: int = Field(ge=0)
    bands: tuple[Band, ...] = Field(default=(), max_length=3)
    """1 band (grey or a colormap) or 3 (RGB); empty: the file's own bands, as rio-tiler reads them."""
    rescale: tuple[float, float] | None = None
    """The values drawn as 0 and 255 (every band); None: the values as they are (uint8 data)."""
    colormap: str | None = Field(default=None, pattern=COLORMAP_NAME.pattern)
    """A rio-tiler colormap name (`viridis`, `terrain`, …) for one band."""

    @model_validator(mode="after")
    def _on_the_grid(self) -> Self:
        side = 1 << self.z
        if self.x >= side or self.y >= side:
            raise ValueError(f"tile {self.z}/{self.x}/{self.y} is not on the grid (x and y below {side} at z={self.z})")
        if self.rescale is not None and not self.rescale[0] < self.rescale[1]:
            raise ValueError("rescale: the low value must be below the high one")
        return self

    def style(self) -> str:
        """The part of the query that changes the picture but not the tile: bands, rescale, colormap."""
        bands = ",".join(map(str, self.bands))
        rescale = "" if self.rescale is None else f"{self.rescale[0]!r},{self.rescale[1]!r}"
        return f"b={bands};r={rescale};c={self.colormap or ''}"

    def digest(self, file_version: str) -> str:
        """The cache key's digest: the path, the file's version (changes with its content), the tile and the style."""
        text = f"{self.path}\0{file_version}\0{self.z}/{self.x}/{self.y}\0{self.style()}"
        return hashlib.sha256(text.encode()).hexdigest()


class ReadRequest(BaseModel):
    """What crosses the queue for a read a map makes (a tile, a layer): where the answer goes, and until when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply_to: str
    """The Redis list the worker pushes its reply on."""
    deadline: float
    """Unix time after which nobody waits for the answer: a worker that takes the request later skips it."""


class TileRequest(ReadRequest):
    """A tile's query and where the answer goes."""

    query: TileQuery


TileStatus = Literal["ok", "empty", "error"]


class TileReply(BaseModel):
    """A worker's answer: the PNG, `empty` (the tile is outside the raster), or an error with a stable code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: TileStatus
    png: bytes = b""
    code: str = ""
    """`path.outside_workspace`, `path.not_found`, `path.invalid`, `raster.unreadable`, `band.out_of_range`,
    `zoom.too_low`, `option.unsupported`, `tile.failed`."""
    message: str = ""


def pack(model: BaseModel) -> bytes:
    """msgpack bytes of a request or a reply (bytes stay bytes)."""
    return msgpack.packb(model.model_dump(mode="python"), use_bin_type=True)


def unpack(model: type[M], raw: bytes) -> M:
    """Raises: pydantic.ValidationError or msgpack's errors when `raw` is not a `model`."""
    return model.model_validate(msgpack.unpackb(raw, raw=False))


def unpack_request(raw: bytes) -> TileRequest:
    """Raises: pydantic.ValidationError or msgpack's errors when `raw` is not a request."""
    return unpack(TileRequest, raw)


def unpack_reply(raw: bytes) -> TileReply:
    """Raises: pydantic.ValidationError or msgpack's errors when `raw` is not a reply."""
    return unpack(TileReply, raw)
