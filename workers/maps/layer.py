"""Read one workspace layer for the interactive map (`schemas.maplayer`): a raster as what its XYZ tiles need, a
vector layer as GeoJSON in EPSG:4326, bounded by `MAX_FEATURES` and `MAX_BYTES`.

Not a tool call: no `tool.*` event is appended (task `gdal.map_layer`, answered on the request's reply list).
"""

import warnings
from pathlib import Path

import numpy as np
import pyogrio
import redis
from pyproj import CRS
from rio_tiler.io import Reader

from schemas.maplayer import COORDINATE_DIGITS, MAX_BYTES, MAX_FEATURES, LayerQuery, LayerReply, LayerRequest, MapLayer
from workers.gdal.errors import open_raster, reading
from workers.jobkit.confine import confinement, pinned
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace
from workers.maps.reads import serve
from workers.vector.layers import layer_of, read_frame

FIELD = "path"
PREVIEW_PIXELS = 512
"""The longest side of the overview a raster's stretch is measured on."""
WGS84 = CRS.from_epsg(4326)


def map_layer(query: LayerQuery, roots: list[Path]) -> LayerReply:
    """The layer at `query.path` as the map draws it; errors come back as a reply with a code (never raised)."""
    try:
        with confinement(roots):
            path = resolve_in_workspace(query.path, roots, field=FIELD)
            layer, geojson = _vector(path, query) if _is_vector(path) else (_raster(path, query), "")
    except JobFailed as exc:
        return LayerReply(status="error", code=exc.code, message=exc.message)
    body = _body(layer, geojson)
    if len(body) > MAX_BYTES:
        message = f"{FIELD}: {query.path!r} is {len(body):,} bytes of GeoJSON, over the map's {MAX_BYTES:,}"
        return LayerReply(status="error", code="limit.bytes", message=message)
    return LayerReply(status="ok", body=body)


def _body(layer: MapLayer, geojson: str) -> bytes:
    """The layer's JSON with the GeoJSON text geopandas wrote set in as it is: parsing and validating thousands of
    features only to write them again took half a large layer's time."""
    said = layer.model_dump_json(exclude_none=True)
    return (said[:-1] + ',"geojson":' + geojson + "}").encode() if geojson else said.encode()


def _is_vector(path: Path) -> bool:
    try:
        return len(pyogrio.list_layers(pinned(path, FIELD))) > 0
    except pyogrio.errors.DataSourceError:
        return False


def _raster(path: Path, query: LayerQuery) -> MapLayer:
    with open_raster(path, FIELD) as src, Reader(None, dataset=src) as tiles, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rio-tiler's alpha and overview warnings say nothing to a map
        bounds = tiles.get_geographic_bounds(WGS84)
        preview = tiles.preview(max_size=PREVIEW_PIXELS, indexes=[1] if src.count < 3 else [1, 2, 3])
        rgb = src.count >= 3 and all(dtype == "uint8" for dtype in src.dtypes[:3])
    values = preview.array.compressed()
    rescale = None if rgb or values.size == 0 else tuple(float(f"{v:.6g}") for v in np.percentile(values, [2, 98]))
    if rescale is not None and rescale[0] >= rescale[1]:
        rescale = (rescale[0], rescale[0] + 1)
    return MapLayer(kind="raster", path=query.path, name=path.name, bounds=bounds, bands=src.count, rescale=rescale)


def _vector(path: Path, query: LayerQuery) -> tuple[MapLayer, str]:
    name = layer_of(path, query.layer, FIELD, "layer")
    frame = read_frame(path, name, FIELD, limit=MAX_FEATURES + 1)
    if len(frame) > MAX_FEATURES:
        message = f"{FIELD}: {name!r} has more than {MAX_FEATURES:,} features, more than a map is sent"
        raise JobFailed("limit.features", message, field=FIELD)
    frame = frame[~(frame.geometry.isna() | frame.geometry.is_empty)]
    frame = frame.to_crs(WGS84) if frame.crs is not None else frame.set_crs(WGS84)
    frame = frame.set_geometry(frame.geometry.set_precision(10**-COORDINATE_DIGITS, mode="pointwise"))
    with reading(path, FIELD):
        geojson = frame.to_json(na="null", drop_id=False, separators=(",", ":"))
    bounds = tuple(float(v) for v in frame.total_bounds) if len(frame) else (-180.0, -85.0, 180.0, 85.0)
    return MapLayer(kind="vector", path=query.path, name=name, bounds=bounds, features=len(frame)), geojson


def serve_layer(client: redis.Redis, payload: bytes, roots: list[Path]) -> LayerReply | None:
    """Read the requested layer and push the answer on its reply list; None when nobody waits any more."""
    failed = LayerReply(status="error", code="layer.failed", message="the layer could not be read")
    reply = serve(client, payload, LayerRequest, lambda request: map_layer(request.query, roots), failed)
    return reply if isinstance(reply, LayerReply) else None
