"""A map layer for the interactive map: what `GET /maps/layer?path=…` asks a worker for, and what it answers.

Like a tile (`schemas.xyz`), a layer is a read, not a call: the gateway sends a `LayerRequest` over the `gdal` queue
and waits for the `LayerReply` on a short-lived Redis list; neither goes into the event log. A raster comes back as
what its XYZ tiles need (bounds, bands, a stretch), a vector layer as GeoJSON in EPSG:4326, bounded in features and
bytes.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas.xyz import ReadRequest

MAX_FEATURES = 5_000
"""Features one vector layer may send to a map: a larger layer is refused (`limit.features`), never cut short."""
MAX_BYTES = 4_000_000
"""Bytes of GeoJSON one vector layer may send to a map (`limit.bytes`)."""
COORDINATE_DIGITS = 6
"""Decimal places of a longitude or latitude sent (about 0.1 m)."""


class LayerQuery(BaseModel):
    """One workspace file to show on a map: the query string of `GET /maps/layer`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1, max_length=4096)
    """A workspace path, as tools take it."""
    layer: str | None = Field(default=None, max_length=256)
    """A vector dataset's layer (default its first)."""


class LayerRequest(ReadRequest):
    """A layer's query and where the answer goes."""

    query: LayerQuery


class LayerReply(BaseModel):
    """A worker's answer: the layer as JSON (`MapLayer`'s), or an error with a stable code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Literal["ok", "error"]
    body: bytes = b""
    """The `MapLayer` as JSON bytes, passed to the browser as they are."""
    code: str = ""
    """`path.*`, `layer.not_found`, `raster.unreadable`, `vector.unreadable`, `limit.features`, `limit.bytes`."""
    message: str = ""


class MapLayer(BaseModel):
    """A layer as the map page draws it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["raster", "vector"]
    path: str
    """The path as asked (the page passes it back to `/tiles`)."""
    name: str
    bounds: tuple[float, float, float, float]
    """west, south, east, north in degrees (EPSG:4326)."""
    bands: int = 0
    """A raster's band count: 3 or more are drawn as RGB, else band 1 through a colormap."""
    rescale: tuple[float, float] | None = None
    """A raster's stretch: its 2nd and 98th percentiles on its coarsest overview."""
    features: int = 0
    geojson: JsonValue = None
    """A vector layer's FeatureCollection in EPSG:4326, each feature's properties with its id."""
