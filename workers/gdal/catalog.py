"""Jobs `catalog_scan` and `dataset_format`: what the workspace holds, and what one file is (resource reads)."""

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pyogrio
from pyproj import CRS
from pyproj.exceptions import CRSError

from schemas.tools.catalog import (
    RASTER_EXTENSIONS,
    VECTOR_EXTENSIONS,
    CatalogEntry,
    CatalogScanArgs,
    CatalogScanResult,
    DatasetFormatArgs,
    DatasetFormatResult,
    DatasetKind,
)
from workers.gdal import geoparquet
from workers.gdal.errors import open_raster, parse_crs, reading
from workers.gdal.info import crs_text
from workers.jobkit import objects
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace

PROGRESS_EVERY = 200
"""Files between two progress reports (each one is also where a cancellation lands)."""


def _starts(subpath: str, roots: list[Path]) -> list[tuple[Path, Path]]:
    """(root, folder to walk) pairs: every root, or the one folder `subpath` names."""
    if subpath.strip() in ("", ".", "/"):
        return [(root, root) for root in roots]
    start = resolve_in_workspace(subpath, roots, field="subpath")
    if not objects.is_folder(start):
        raise JobFailed("path.not_a_folder", f"subpath: {subpath!r} is a file, not a folder", field="subpath")
    return [(next(r for r in roots if start == r or start.is_relative_to(r)), start)]


def _walk(start: Path, include_hidden: bool) -> Iterator[Path]:
    """Files under `start` in a stable order, skipping dot-folders and dot-files unless asked."""
    if objects.mount_of(start) is not None:  # an object-storage root: its listing
        yield from objects.walk(start, include_hidden)
        return
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if include_hidden or not d.startswith("."))
        for name in sorted(files):
            if include_hidden or not name.startswith("."):
                yield Path(folder, name)


def dataset_kind(path: Path) -> DatasetKind | None:
    """`raster` or `vector` by suffix, None for anything else."""
    suffix = path.suffix.lower()
    if suffix in RASTER_EXTENSIONS:
        return "raster"
    return "vector" if suffix in VECTOR_EXTENSIONS else None


def _open_details(path: Path, kind: DatasetKind) -> tuple[str, str | None]:
    if kind == "raster":
        with open_raster(path) as src:
            return src.driver, crs_text(src.crs)
    objects.ensure_local(path, "uri")
    if geoparquet.is_parquet(path):
        return geoparquet.DRIVER, geoparquet.describe(path).crs
    with reading(path):
        info = pyogrio.read_info(pinned(path))
    return str(info["driver"]), info["crs"]


def _real_inside(path: Path, roots: list[Path]) -> Path | None:
    """The file a listed path names; None for a link that leads outside the roots or nowhere (never opened)."""
    if not path.is_symlink():
        return path
    real = path.resolve()
    return real if real.exists() and any(real == root or real.is_relative_to(root) for root in roots) else None


def _entry(path: Path, real: Path, root: Path, kind: DatasetKind, details: bool) -> CatalogEntry:
    relative, size = str(path.relative_to(root)), objects.size(real)
    entry = CatalogEntry(path=objects.shown(path), relative=relative, kind=kind, size=size)
    if details:
        try:
            entry.driver, entry.crs = _open_details(real, kind)
        except JobFailed as exc:
            entry.error = exc.message
    return entry


@lru_cache(maxsize=256)
def _crs(text: str) -> CRS | None:
    try:
        return CRS.from_user_input(text)
    except CRSError:
        return None


def same_crs(text: str | None, target: CRS) -> bool:
    """Whether `text` names the same CRS as `target` (axis order ignored)."""
    crs = _crs(text) if text else None
    return crs is not None and crs.equals(target, ignore_axis_order=True)


def _wanted(path: Path, args: CatalogScanArgs) -> DatasetKind | None:
    kind = dataset_kind(path)
    if kind is None or args.kind not in ("all", kind):
        return None
    if args.extensions is not None and path.suffix.lower() not in {e.lower() for e in args.extensions}:
        return None
    return kind


def _entries(args: CatalogScanArgs, ctx: JobContext) -> Iterator[CatalogEntry]:
    target = parse_crs(args.crs, "crs") if args.crs is not None else None
    seen = 0
    for root, start in _starts(args.subpath, ctx.roots):
        for path in _walk(start, args.include_hidden):
            seen += 1
            if seen % PROGRESS_EVERY == 0:
                ctx.progress(seen, None, f"looked at {seen} files")
            kind = _wanted(path, args)
            real = _real_inside(path, ctx.roots) if kind is not None else None
            if kind is None or real is None:
                continue
            entry = _entry(path, real, root, kind, args.details or target is not None)
            if target is None or same_crs(entry.crs, target):
                yield entry


def catalog_scan(args: CatalogScanArgs, ctx: JobContext) -> CatalogScanResult:
    """List the datasets under the workspace roots (or one folder), optionally with driver and CRS.

    Raises:
        JobFailed: `subpath` is outside the workspace, missing or not a folder; `crs` is unknown.
    """
    entries: list[CatalogEntry] = []
    truncated = False
    for entry in _entries(args, ctx):
        if len(entries) == args.limit:
            truncated = True
            break
        entries.append(entry)
    roots = [objects.shown(root) for root in ctx.roots]
    return CatalogScanResult(kind=args.kind, entries=entries, total=len(entries), truncated=truncated, roots=roots)


def _as_raster(path: Path) -> DatasetFormatResult | None:
    try:
        with open_raster(path) as src:
            return DatasetFormatResult(
                path=objects.shown(path), kind="raster", driver=src.driver, crs=crs_text(src.crs),
                size=objects.size(path), extension=path.suffix.lower(), width=src.width, height=src.height,
                count=src.count,
            )  # fmt: skip
    except JobFailed:
        return None


def _as_vector(path: Path) -> DatasetFormatResult | None:
    try:
        if geoparquet.is_parquet(path):
            found = geoparquet.describe(path)
            layers, info = [found.layer], {"driver": geoparquet.DRIVER, "crs": found.crs}
        else:
            with reading(path):
                layers = [str(name) for name, _ in pyogrio.list_layers(pinned(path))]
                info = pyogrio.read_info(pinned(path)) if layers else None
    except JobFailed:
        return None
    if info is None:
        return None
    return DatasetFormatResult(
        path=objects.shown(path), kind="vector", driver=str(info["driver"]), crs=info["crs"], size=objects.size(path),
        extension=path.suffix.lower(), layers=layers,
    )  # fmt: skip


def dataset_format(args: DatasetFormatArgs, ctx: JobContext) -> DatasetFormatResult:
    """Say whether `args.uri` is a raster or a vector dataset, its driver, CRS and shape.

    Raises:
        JobFailed: the path is outside the workspace or missing, or GDAL reads it neither as raster nor vector.
    """
    path = resolve_in_workspace(args.uri, ctx.roots)
    openers = (_as_vector, _as_raster) if dataset_kind(path) == "vector" else (_as_raster, _as_vector)
    for opener in openers:
        if (found := opener(path)) is not None:
            return found
    raise JobFailed("gdal.not_geospatial", f"uri: {path.name!r} is not a format GDAL can read", field="uri")
