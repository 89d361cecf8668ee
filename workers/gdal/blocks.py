"""How raster jobs cut work into blocks: full-width row strips aligned to the output tiles."""

from rasterio.windows import Window

BLOCK_PIXELS = 1 << 22
"""Pixels per strip (16 MiB of float32 per band): each strip is one GDAL warp or read, and warps re-read a margin
of source rows, so fewer, larger strips are faster (1 Mpx strips cost +30% on a 2048² warp); a cancellation
still lands within one strip."""
ALIGN_ROWS = 256
"""Strips start on multiples of the output tile height, so each tile is written once."""


def strips(height: int, width: int, *, budget: int | None = None, align: int = ALIGN_ROWS) -> list[Window]:
    """Full-width row windows covering a `height`×`width` grid, each about `budget` (`BLOCK_PIXELS`) pixels."""
    rows = max(align, (budget or BLOCK_PIXELS) // max(width, 1) // align * align)
    return [Window(0, top, width, min(rows, height - top)) for top in range(0, height, rows)]
