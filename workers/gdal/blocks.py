"""How jobs cut work into blocks (row strips aligned to tiles) and describe the files they write."""

import hashlib
from pathlib import Path

from rasterio.windows import Window

from schemas.tools.raster import OutputRef

BLOCK_PIXELS = 1 << 20
"""Pixels per strip: big enough that GDAL's per-call overhead stays small, small enough to cancel promptly."""
ALIGN_ROWS = 256
"""Strips start on multiples of the output tile height, so each tile is written once."""


def strips(height: int, width: int, *, budget: int = BLOCK_PIXELS, align: int = ALIGN_ROWS) -> list[Window]:
    """Full-width row windows covering a `height`×`width` grid, each about `budget` pixels."""
    rows = max(align, budget // max(width, 1) // align * align)
    return [Window(0, top, width, min(rows, height - top)) for top in range(0, height, rows)]


def file_ref(path: Path, driver: str) -> OutputRef:
    """Describe a written file: URI, path, size and sha256 (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return OutputRef(
        uri=path.as_uri(), path=str(path), size=path.stat().st_size, sha256=digest.hexdigest(), driver=driver
    )
