"""Render one XYZ map tile (`schemas.xyz`) with rio-tiler and push the PNG back to the gateway that waits for it.

Not a tool call: no `tool.*` event is appended. The request came as a Celery message on the gdal queue (task
`gdal.render_tile`); the answer goes on the request's reply list, which expires if nobody takes it.
"""

import warnings
from collections import OrderedDict
from pathlib import Path

import redis
from rasterio.errors import RasterioError
from rio_tiler.colormap import cmap
from rio_tiler.errors import InvalidColorMapName, RioTilerError, TileOutsideBounds
from rio_tiler.io import Reader
from rio_tiler.models import ImageData

from schemas.xyz import TILE_SIZE, TileQuery, TileReply, TileRequest
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace
from workers.maps.reads import serve

ZOOM_BELOW_MIN = 3
"""How many zoom levels below the raster's own minimum zoom (its coarsest overview) a tile may be: each level reads
up to 4 times the pixels of the one above, so without overviews a tile never reads more than 64 tiles' worth."""
OPEN_READERS = 8
"""Rasters a worker process keeps open between tiles. A map asks many tiles of one raster, and opening it (its COG
header, overviews and zoom range) took about a tenth of a 256² tile's time."""

_READERS: "OrderedDict[tuple[str, int, int, int, int], Reader]" = OrderedDict()
"""Open readers by path and file version (device, inode, mtime, size): a file rewritten or replaced is opened anew."""


class TileRefused(Exception):
    """The tile cannot be drawn as asked; `code` is stable (`schemas.xyz.TileReply.code`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def render_tile(query: TileQuery, roots: list[Path]) -> TileReply:
    """The PNG of one 256² tile of a workspace raster, `empty` when the tile does not meet the raster.

    Errors come back as a reply with a code (never raised): the path outside the workspace or missing, a file GDAL
    cannot read, a band the file lacks, an unknown colormap, a zoom far below the raster's overviews.
    """
    try:
        path = resolve_in_workspace(query.path, roots, field="path")
        image = _read(path, query)
        return TileReply(status="ok", png=_draw(image, query)) if image is not None else TileReply(status="empty")
    except JobFailed as exc:
        return TileReply(status="error", code=exc.code, message=exc.message)
    except TileRefused as exc:
        return TileReply(status="error", code=exc.code, message=exc.message)


def _read(path: Path, query: TileQuery) -> ImageData | None:
    try:
        src = _reader(path)
        if not src.tile_exists(query.x, query.y, query.z):
            return None
        if query.z < src.minzoom - ZOOM_BELOW_MIN:
            lowest = src.minzoom - ZOOM_BELOW_MIN
            raise TileRefused("zoom.too_low", f"{query.path} is drawn from zoom {lowest}; add overviews (a COG)")
        if any(band > src.dataset.count for band in query.bands):
            raise TileRefused("band.out_of_range", f"bands: {query.path} has {src.dataset.count} band(s)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rio-tiler's alpha and overview warnings say nothing to a map
            indexes = list(query.bands) or None
            return src.tile(query.x, query.y, query.z, tilesize=TILE_SIZE, indexes=indexes)
    except TileOutsideBounds:
        return None
    except (RasterioError, RioTilerError) as exc:
        raise TileRefused("raster.unreadable", f"{query.path} cannot be read as a raster: {exc}") from exc


def _reader(path: Path) -> Reader:
    """An open reader of `path` as it is now, the least recently used one closed past `OPEN_READERS`."""
    st = path.stat()
    key = (str(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    if key in _READERS:
        _READERS.move_to_end(key)
        return _READERS[key]
    reader = _READERS[key] = Reader(str(path))
    while len(_READERS) > OPEN_READERS:
        _READERS.popitem(last=False)[1].close()
    return reader


def _draw(image: ImageData, query: TileQuery) -> bytes:
    if query.rescale is not None:
        image.rescale(in_range=[query.rescale] * image.count)
    colormap = None
    if query.colormap is not None:
        if image.count != 1:
            raise TileRefused("option.unsupported", "colormap: takes one band (bands=1)")
        try:
            colormap = cmap.get(query.colormap)
        except InvalidColorMapName as exc:
            raise TileRefused("option.unsupported", f"colormap: {query.colormap!r} is not a known colormap") from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data outside uint8 without `rescale` is clipped, as titiler does
        return image.render(img_format="PNG", colormap=colormap)


def serve_tile(client: redis.Redis, payload: bytes, roots: list[Path]) -> TileReply | None:
    """Render the requested tile and push the answer on its reply list; None when nobody waits any more."""
    failed = TileReply(status="error", code="tile.failed", message="the tile could not be drawn")
    reply = serve(client, payload, TileRequest, lambda request: render_tile(request.query, roots), failed)
    return reply if isinstance(reply, TileReply) else None
