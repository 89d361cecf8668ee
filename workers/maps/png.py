"""A drawn map as a PNG that fits one image block: full colour when it fits, else quantised by Pillow to fewer
colours (no dithering: flat fills stay flat and compress), else the caller draws it smaller."""

import io
import math
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from schemas.content import MAX_BLOCK_CHARS

BLOCK_BYTES = MAX_BLOCK_CHARS // 4 * 3
"""The most bytes of PNG one image block holds once base64-encoded (49,152)."""
PALETTES = (256, 128, 64, 32)
"""Palette sizes tried in turn when the full-colour PNG is too large."""


@dataclass(frozen=True)
class Png:
    data: bytes
    colours: int | None
    """The palette size; None for full colour."""

    @property
    def fits(self) -> bool:
        return math.ceil(len(self.data) / 3) * 4 <= MAX_BLOCK_CHARS


def pixels(fig: Figure) -> np.ndarray:
    """The figure drawn by Agg, as an RGB array (rows from the top)."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()  # type: ignore[attr-defined]


def _save(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def encode(rgb: np.ndarray) -> Png:
    """The full-colour PNG when it fits a block, else the first palette of `PALETTES` that does, else the smallest
    tried (the caller draws smaller)."""
    image = Image.fromarray(rgb, mode="RGB")
    tried = [Png(_save(image), None)]
    for colours in PALETTES:
        if tried[-1].fits:
            break
        quantised = image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        tried.append(Png(_save(quantised), colours))
    return tried[-1] if tried[-1].fits else min(tried, key=lambda png: len(png.data))


def smaller(size: tuple[int, int], png: Png) -> tuple[int, int]:
    """A picture size that should bring `png` under the block (its bytes scale with the pixel count)."""
    ratio = min(0.9, math.sqrt(BLOCK_BYTES / len(png.data)) * 0.9)
    return max(200, int(size[0] * ratio)), max(150, int(size[1] * ratio))
