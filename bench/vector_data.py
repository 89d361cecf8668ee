"""The vector bench's layers, seeded: random points, a Voronoi tessellation with some holes, and jittered grids of
quadrilaterals, in EPSG:3857 over one 100 km square, written as GeoPackages (with their R-trees)."""

import math
from pathlib import Path

import geopandas as gpd
import numpy as np
import pyogrio
import shapely

CRS = "EPSG:3857"
ORIGIN = (1_000_000.0, 6_000_000.0)
SIDE = 100_000.0
"""Metres: every layer covers the square of this side from `ORIGIN`."""
HOLE_EVERY = 5
"""Every fifth Voronoi cell has a hole (its cell shrunk to 30% about its seed): points in it match nothing."""
JITTER = 0.2
"""A grid vertex moves by up to this share of a cell in x and in y: its quadrilaterals stay simple."""

SIZES = {"points": 1_000_000, "polygons": 100_000, "grid": 200_000}
"""At `--scale 1`: points and polygons of the join, polygons of each overlay layer."""


def box() -> shapely.Polygon:
    x, y = ORIGIN
    return shapely.box(x, y, x + SIDE, y + SIDE)


def points(n: int, rng: np.random.Generator) -> gpd.GeoDataFrame:
    """`n` points uniform over the square, with an id and a value."""
    xy = rng.random((n, 2)) * SIDE + ORIGIN
    frame = {"pid": np.arange(n, dtype=np.int64), "value": rng.random(n)}
    return gpd.GeoDataFrame(frame, geometry=shapely.points(xy), crs=CRS)


def voronoi(n: int, rng: np.random.Generator) -> gpd.GeoDataFrame:
    """The Voronoi cells of `n` random seeds clipped to the square, every `HOLE_EVERY`th with a hole."""
    seeds = rng.random((n, 2)) * SIDE + ORIGIN
    cells = shapely.get_parts(shapely.voronoi_polygons(shapely.multipoints(seeds), extend_to=box(), ordered=True))
    cells = shapely.intersection(cells, box())
    holed = np.arange(0, n, HOLE_EVERY)
    cells[holed] = [_with_hole(cells[i], seeds[i]) for i in holed]
    frame = {"zone": np.arange(n, dtype=np.int64), "kind": np.array(["a", "b", "c", "d"])[np.arange(n) % 4]}
    return gpd.GeoDataFrame(frame, geometry=cells, crs=CRS)


def _with_hole(cell: shapely.Polygon, seed: np.ndarray) -> shapely.Polygon:
    """The cell with its own shape shrunk to 30% about its seed as a hole (inside it: a Voronoi cell is convex)."""
    shell = np.asarray(cell.exterior.coords)
    return shapely.Polygon(shell, [seed + 0.3 * (shell - seed)])


def grid(n: int, rng: np.random.Generator, offset: float, prefix: str) -> gpd.GeoDataFrame:
    """About `n` quadrilaterals over the square on a lattice jittered by `JITTER`, shifted by `offset` cells in x
    and y (half a cell: each overlaps about four of the unshifted grid's)."""
    side = max(1, math.isqrt(n))
    cell = SIDE / side
    ii, jj = np.meshgrid(np.arange(side + 1), np.arange(side + 1), indexing="ij")
    lattice = np.stack([jj, ii], axis=-1).astype(float) + offset
    lattice += rng.uniform(-JITTER, JITTER, lattice.shape)
    lattice = lattice * cell + ORIGIN
    rings = np.stack(
        [lattice[:-1, :-1], lattice[:-1, 1:], lattice[1:, 1:], lattice[1:, :-1], lattice[:-1, :-1]], axis=2
    ).reshape(-1, 5, 2)
    count = len(rings)
    frame = {f"{prefix}_id": np.arange(count, dtype=np.int64), f"{prefix}_value": rng.random(count)}
    return gpd.GeoDataFrame(frame, geometry=shapely.polygons(rings), crs=CRS)


def layers(scale: float, seed: int = 46) -> dict[str, gpd.GeoDataFrame]:
    """Every layer of the bench at `scale` (1: `SIZES`), by file stem."""
    rng = np.random.default_rng(seed)
    size = {name: max(4, round(count * scale)) for name, count in SIZES.items()}
    return {
        "points": points(size["points"], rng),
        "polygons": voronoi(size["polygons"], rng),
        "grid_a": grid(size["grid"], rng, 0.0, "a"),
        "grid_b": grid(size["grid"], rng, 0.5, "b"),
    }


def write_layers(root: Path, scale: float, seed: int = 46) -> dict[str, int]:
    """Every layer as `<root>/<stem>.gpkg` (GDAL's R-tree included); the feature count of each."""
    root.mkdir(parents=True, exist_ok=True)
    counts = {}
    for stem, frame in layers(scale, seed).items():
        pyogrio.write_dataframe(frame, root / f"{stem}.gpkg", layer=stem, driver="GPKG", use_arrow=True)
        counts[stem] = len(frame)
    return counts
