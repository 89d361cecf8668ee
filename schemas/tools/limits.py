"""The bounds a tool call is checked against, as its definition states them to clients (`ToolSpec.bounds`).

Each names a field of the workers' `GEOGATE_LIMIT_*` settings; the gateway writes the values it runs with into the
tool's description, so a client reads the bound before it calls.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """One bound: the settings field that holds it and what it limits ("{value}" is the configured figure)."""

    setting: str
    text: str

    @property
    def variable(self) -> str:
        return "GEOGATE_LIMIT_" + self.setting.upper()


TILES = Bound("tiles", "at most {value} windows of the tile grid")
OUTPUT_BYTES = Bound("output_bytes", "an output raster of at most {value} uncompressed")
READ_BYTES = Bound("output_bytes", "bands read of at most {value} uncompressed")
FEATURES = Bound("features", "at most {value} features traced")
LAYER_FEATURES = Bound("features", "at most {value} features per layer read or written")
ZONES = Bound("zones", "at most {value} zones")
RESULT_BYTES = Bound("result_bytes", "a structured result of at most {value} of JSON")
STAC_ITEMS = Bound("stac_items", "at most {value} items per search")

IN_BYTES = frozenset({"output_bytes", "result_bytes"})
"""Settings counted in bytes (shown as KiB, MiB, GiB)."""


_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


def size_text(count: float) -> str:
    """`2147483648` → `2 GiB`, `3.5 * 2**20` → `3.5 MiB`."""
    step = 0
    while count >= 1024 and step < len(_UNITS) - 1:
        count, step = count / 1024, step + 1
    return f"{int(count)} bytes" if step == 0 else f"{round(count, 2):g} {_UNITS[step]}"


def figure(setting: str, value: int) -> str:
    return size_text(value) if setting in IN_BYTES else f"{value:,}"


def bounds_note(bounds: Iterable[Bound], values: Mapping[str, int]) -> str:
    """The line a tool's description ends with: each bound with its value and the variable that raises it."""
    parts = [f"{b.text.format(value=figure(b.setting, values[b.setting]))} ({b.variable})" for b in bounds]
    return "\nBounds: " + "; ".join(parts) + "."
