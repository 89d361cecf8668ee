"""How raster jobs cut work into blocks: full-width row strips aligned to the output tiles."""

from rasterio.windows import Window

BLOCK_PIXELS = 1 << 20
"""Pixels per strip: big enough that GDAL's per-call overhead stays small, small enough to cancel promptly."""
ALIGN_ROWS = 256
"""Strips start on multiples of the output tile height, so each tile is written once."""


def strips(height: int, width: int, *, budget: int = BLOCK_PIXELS, align: int = ALIGN_ROWS) -> list[Window]:
    """Full-width row windows covering a `height`×`width` grid, each about `budget` pixels."""
    rows = max(align, budget // max(width, 1) // align * align)
    return [Window(0, top, width, min(rows, height - top)) for top in range(0, height, rows)]
