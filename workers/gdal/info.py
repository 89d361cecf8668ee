"""Jobs `raster_info` and `vector_info`: metadata of one dataset, read without loading pixels or features."""

import math
from pathlib import Path

import pyogrio
import pyogrio.errors
import rasterio

from schemas.tools.raster import BandInfo, RasterInfoArgs, RasterInfoResult
from schemas.tools.vector import FieldInfo, VectorInfoArgs, VectorInfoResult
from workers.gdal import geoparquet
from workers.gdal.errors import check_bands, open_raster, reading
from workers.jobkit import objects
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import raster_input, resolve_in_workspace


def _nodata(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def crs_text(crs: rasterio.crs.CRS | None) -> str | None:
    """`EPSG:xxxx` when the CRS has an authority code, WKT otherwise, None when there is no CRS."""
    if crs is None:
        return None
    return crs.to_string()


def _band_info(src: rasterio.DatasetReader, index: int) -> BandInfo:
    return BandInfo(
        index=index,
        dtype=src.dtypes[index - 1],
        nodata=_nodata(src.nodatavals[index - 1]),
        description=src.descriptions[index - 1],
        color_interp=src.colorinterp[index - 1].name,
        block_shape=list(src.block_shapes[index - 1]),
        overview_factors=src.overviews(index),
    )


def raster_info(args: RasterInfoArgs, ctx: JobContext) -> RasterInfoResult:
    """Describe a raster: driver, size, bands, CRS, transform, bounds, nodata and overviews.

    Raises:
        JobFailed: the path is outside the workspace (or the URL's host is not allowed), the file is not a readable
            raster, or `band` is out of range.
    """
    path = raster_input(args.uri, ctx.roots, ctx.settings)
    with open_raster(path) as src:
        bands = [args.band] if args.band is not None else list(range(1, src.count + 1))
        check_bands(bands, src.count, "band")
        return RasterInfoResult(
            path=objects.shown(path),
            driver=src.driver,
            crs=crs_text(src.crs),
            width=src.width,
            height=src.height,
            count=src.count,
            dtype=src.dtypes[0],
            transform=list(src.transform)[:6],
            bounds=list(src.bounds),
            resolution=list(src.res),
            nodata=_nodata(src.nodata),
            overview_levels=src.overviews(1) if src.count else [],
            bands=[_band_info(src, b) for b in bands],
            tags={str(k): str(v) for k, v in src.tags().items()},
        )


def _layers(path: Path) -> list[str]:
    with reading(path):
        return [str(name) for name, _ in pyogrio.list_layers(pinned(path))]


def _read_layer_info(path: Path, layer: str) -> dict:
    try:
        with reading(path):
            return pyogrio.read_info(pinned(path), layer=layer, force_feature_count=True, force_total_bounds=True)
    except pyogrio.errors.DataLayerError as exc:
        raise JobFailed("layer.not_found", f"layer: {layer!r} not found in {path.name!r}", field="layer") from exc


def vector_info(args: VectorInfoArgs, ctx: JobContext) -> VectorInfoResult:
    """Describe one layer of a vector dataset: driver, layers, CRS, feature count, geometry type, bounds, fields.

    Raises:
        JobFailed: the path is outside the workspace, the file is not a readable vector dataset, or `layer` is
            not one of its layers.
    """
    path = resolve_in_workspace(args.uri, ctx.roots)
    if geoparquet.is_parquet(path):
        return _parquet_info(path, args.layer)
    layers = _layers(path)
    if not layers:
        raise JobFailed("gdal.not_geospatial", f"uri: {path.name!r} has no vector layers", field="uri")
    layer = args.layer if args.layer is not None else layers[0]
    if layer not in layers:
        raise JobFailed("layer.not_found", f"layer: {layer!r} is not one of {layers}", field="layer")
    info = _read_layer_info(path, layer)
    bounds = info.get("total_bounds")
    return VectorInfoResult(
        path=objects.shown(path),
        driver=str(info["driver"]),
        layer=layer,
        layers=layers,
        crs=info["crs"],
        feature_count=max(int(info["features"]), 0),
        geometry_type=info["geometry_type"],
        bounds=None if bounds is None or any(math.isnan(b) for b in bounds) else [float(b) for b in bounds],
        fields=[FieldInfo(name=str(n), type=str(t)) for n, t in zip(info["fields"], info["dtypes"], strict=True)],
        encoding=info.get("encoding"),
    )


def _parquet_info(path: Path, layer: str | None) -> VectorInfoResult:
    """A GeoParquet file's one layer, from its footer: bounds as its metadata gives them."""
    found = geoparquet.describe(path)
    if layer is not None and layer != found.layer:
        raise JobFailed("layer.not_found", f"layer: {layer!r} is not one of {[found.layer]}", field="layer")
    return VectorInfoResult(
        path=objects.shown(path),
        driver=geoparquet.DRIVER,
        layer=found.layer,
        layers=[found.layer],
        crs=found.crs,
        feature_count=found.features,
        geometry_type=found.geometry_type,
        bounds=found.bounds,
        fields=[FieldInfo(name=n, type=t) for n, t in zip(found.fields, found.types, strict=True)],
    )
