"""Vector layers of a map: the features whose boxes meet the frame, read bounded by `GEOGATE_LIMIT_FEATURES`, moved
into the map's CRS and coloured by one symbol, by category, or by graduated classes from mapclassify."""

import warnings
from dataclasses import dataclass

import geopandas as gpd
import mapclassify
import numpy as np
import pandas as pd
import pyogrio
import shapely
from matplotlib.colors import ListedColormap, to_hex
from pyproj import CRS
from rasterio.warp import transform_bounds

from schemas.tools import limits as bounds
from schemas.tools.maps import MAX_CLASSES, DrawnLayer, MapClass, VectorLayer
from workers.gdal.errors import reading
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace
from workers.jobkit.limits import exceeded, limits_of
from workers.maps.frame import Box, Frame
from workers.maps.rasters import colormap
from workers.vector.layers import layer_of, read_frame

JENKS_SAMPLE = 256
"""Values Fisher-Jenks runs on: evenly spaced quantiles of a larger layer's values (pure Python, quadratic)."""
NO_DATA = "#bbbbbb"
"""Features whose field is empty, and categories past `MAX_CLASSES`."""


@dataclass
class VectorPicture:
    """A vector layer ready to draw: its features in the map's CRS and each one's class colour."""

    frame: gpd.GeoDataFrame | None
    colours: list[str]
    drawn: DrawnLayer


@dataclass(frozen=True)
class Source:
    path: str
    name: str
    crs: CRS | None
    fields: list[str]
    bounds: Box | None


def source(layer: VectorLayer, field: str, ctx: JobContext) -> Source:
    """A layer's path, name, CRS, fields and bounds from its header.

    Raises:
        JobFailed: path, read and layer errors naming `field`; `field.not_found` for `field` or `label`.
    """
    path = resolve_in_workspace(layer.uri, ctx.roots, field=f"{field}.uri")
    name = layer_of(path, layer.layer, f"{field}.uri", f"{field}.layer")
    with reading(path, f"{field}.uri"):
        info = pyogrio.read_info(pinned(path, f"{field}.uri"), layer=name, force_total_bounds=True)
    fields = [str(f) for f in info["fields"]]
    for key in ("field", "label"):
        wanted = getattr(layer, key)
        if wanted is not None and wanted not in fields:
            message = f"{field}.{key}: {wanted!r} is not a field of {name!r} ({fields})"
            raise JobFailed("field.not_found", message, field=f"{field}.{key}")
    total = info.get("total_bounds")
    box = tuple(float(v) for v in total) if total is not None and np.isfinite(total).all() else None
    return Source(str(path), name, CRS.from_user_input(info["crs"]) if info["crs"] else None, fields, box)


def _read(layer: VectorLayer, src: Source, frame: Frame, field: str, ctx: JobContext) -> gpd.GeoDataFrame:
    crs = src.crs or frame.crs
    box = transform_bounds(frame.crs, crs, *frame.bounds, densify_pts=21) if crs != frame.crs else frame.bounds
    limit = limits_of(ctx.settings).features
    read = read_frame(
        resolve_in_workspace(layer.uri, ctx.roots, field=f"{field}.uri"), src.name, f"{field}.uri", box, limit + 1
    )
    if len(read) > limit:
        what = f"more than {limit:,} features meet the map's extent"
        raise exceeded(bounds.LAYER_FEATURES, f"{field}.uri", what, ctx.settings)
    read = read[~(read.geometry.isna() | read.geometry.is_empty)]
    if src.crs is not None and src.crs != frame.crs:
        read = read.to_crs(frame.crs)
    return read.set_crs(frame.crs, allow_override=True)


def _categories(values: pd.Series, layer: VectorLayer, field: str) -> tuple[list[str], list[MapClass]]:
    text = values.astype("string")
    counts = text.value_counts(dropna=True, sort=True)
    kept = list(counts.index[: MAX_CLASSES - 1] if len(counts) > MAX_CLASSES else counts.index)
    ramp = colormap(layer.colormap or "tab10", f"{field}.colormap")
    step = (
        (lambda i: ramp(i % ramp.N))
        if isinstance(ramp, ListedColormap)
        else (lambda i: ramp(i / max(1, len(kept) - 1)))
    )
    colour = {value: to_hex(step(i)) for i, value in enumerate(kept)}
    classes = [MapClass(label=str(v), colour=colour[v], value=str(v), count=int(counts[v])) for v in kept]
    others = int(counts.sum() - sum(int(counts[v]) for v in kept))
    if others:
        classes.append(MapClass(label="other", colour=NO_DATA, count=others))
    return [colour.get(v, NO_DATA) if not pd.isna(v) else NO_DATA for v in text], classes


def class_bins(values: np.ndarray, scheme: str, k: int) -> np.ndarray:
    """Upper bounds of `k` classes of `values` by mapclassify's `scheme` (fewer when values are fewer)."""
    k = max(1, min(k, len(np.unique(values))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's absence, and fewer distinct values than classes
        if scheme == "quantiles":
            return mapclassify.Quantiles(values, k=k).bins
        if scheme == "equal_interval":
            return mapclassify.EqualInterval(values, k=k).bins
        sample = np.quantile(values, np.linspace(0, 1, JENKS_SAMPLE)) if len(values) > JENKS_SAMPLE else values
        return mapclassify.FisherJenks(sample, k=k).bins


def _graduated(
    values: pd.Series, layer: VectorLayer, scheme: str, field: str
) -> tuple[list[str], list[MapClass], list[float]]:
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    present = np.isfinite(numbers)
    if not present.any():
        message = f"{field}.field: {layer.field!r} has no numbers to class by {scheme}; use scheme categories"
        raise JobFailed("field.not_numeric", message, field=f"{field}.field")
    bins = np.unique(class_bins(numbers[present], scheme, layer.classes))
    index = np.searchsorted(bins, numbers, side="left")
    ramp = colormap(layer.colormap or "viridis", f"{field}.colormap")
    palette = [to_hex(ramp(i / max(1, len(bins) - 1))) for i in range(len(bins))]
    lows = [float(numbers[present].min())] + [float(b) for b in bins[:-1]]
    classes = [
        MapClass(
            label=f"{lo:.4g} – {hi:.4g}",
            colour=palette[i],
            lower=lo,
            upper=float(hi),
            count=int(((index == i) & present).sum()),
        )
        for i, (lo, hi) in enumerate(zip(lows, bins, strict=True))
    ]
    colours = [palette[min(i, len(bins) - 1)] if ok else NO_DATA for i, ok in zip(index, present, strict=True)]
    return colours, classes, [float(b) for b in bins]


def _scheme(layer: VectorLayer, values: pd.Series) -> str:
    if layer.scheme != "auto":
        return layer.scheme
    return (
        "quantiles"
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        else "categories"
    )


def vector_picture(layer: VectorLayer, index: int, frame: Frame, src: Source, ctx: JobContext) -> VectorPicture:
    """Layer `index`'s features under the frame, in the map's CRS, with their colours and the legend's classes.

    Raises:
        JobFailed: `limit.features`, `field.not_numeric`, an unknown colormap, read errors (naming `layers[index]`).
    """
    field = f"layers[{index}]"
    read = _read(layer, src, frame, field, ctx)
    said = {"kind": "vector", "path": src.path, "layer": src.name, "crs": src.crs.to_string() if src.crs else None}
    drawn = DrawnLayer(drawn=len(read) > 0, features=len(read), field=layer.field, **said)
    if layer.field is None or len(read) == 0:
        drawn.mode = "single"
        lines = len(read) > 0 and kinds(read.geometry)["line"].mean() > 0.5  # lines are drawn in the stroke colour
        colour = layer.stroke if lines else layer.fill
        drawn.classes = [MapClass(label=src.name, colour=colour, count=len(read))]
        return VectorPicture(read, [colour] * len(read), drawn)
    drawn.mode = _scheme(layer, read[layer.field])
    if drawn.mode == "categories":
        colours, drawn.classes = _categories(read[layer.field], layer, field)
    else:
        colours, drawn.classes, drawn.breaks = _graduated(read[layer.field], layer, drawn.mode, field)
    return VectorPicture(read, colours, drawn)


def kinds(geometry: gpd.GeoSeries) -> dict[str, np.ndarray]:
    """Which features are areas, lines and points (collections go with areas: they are drawn as such)."""
    ids = shapely.get_type_id(geometry.values.to_numpy())
    return {"area": np.isin(ids, [3, 6, 7]), "line": np.isin(ids, [1, 2, 5]), "point": np.isin(ids, [0, 4])}
