"""Map rasterio, pyogrio and pyproj errors to `JobFailed` codes a user can act on.

Codes: `gdal.not_geospatial` (GDAL recognises no format), `gdal.corrupt` (the format is known but the data is
unreadable), `gdal.write_failed` (the driver refused the output), `layer.not_found`, `crs.unknown`,
`band.out_of_range`.
"""

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pyogrio.errors
import rasterio
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError as ProjCRSError
from pyproj.exceptions import ProjError
from rasterio._err import CPLE_BaseError  # GDAL's own errors, raised by rasterio.shutil as they are
from rasterio.errors import CRSError as RasterioCRSError
from rasterio.errors import NotGeoreferencedWarning, RasterioError

from workers.gdal.drivers import RASTER_INPUTS
from workers.gdal.remote_guard import HostGuard, guarded_read
from workers.jobkit import objects
from workers.jobkit.confine import check_files, current_roots, pinned, shown_paths
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import RemoteRaster, allowed_host

REMOTE_TIMEOUT_S = 30
"""How long a request to the object store may take before the read fails."""
_UNRECOGNISED = ("not recognized as being in a supported file format", "not recognised as a supported file format")


def _read_failure(exc: Exception, path: Path, field: str) -> JobFailed:
    text = shown_paths(str(exc))
    if any(marker in text for marker in _UNRECOGNISED) or "No such file" in text:
        return JobFailed(
            "gdal.not_geospatial", f"{field}: {path.name!r} is not a geospatial format GDAL can read", field=field
        )
    return JobFailed("gdal.corrupt", f"{field}: {path.name!r} could not be read: {text}", field=field)


@contextlib.contextmanager
def reading(path: Path, field: str = "uri") -> Iterator[None]:
    """Turn GDAL read errors raised inside the block into `JobFailed` naming `field`.

    Raises:
        JobFailed: `gdal.not_geospatial` or `gdal.corrupt`.
    """
    try:
        yield
    except (RasterioError, pyogrio.errors.DataSourceError, pyogrio.errors.FeatureError) as exc:
        raise _read_failure(exc, path, field) from exc
    except pyogrio.errors.GeometryError as exc:
        message = f"{field}: bad geometry in {path.name!r}: {shown_paths(str(exc))}"
        raise JobFailed("gdal.corrupt", message, field=field) from exc


@contextlib.contextmanager
def writing(field: str = "output") -> Iterator[None]:
    """Turn GDAL and file-system write errors raised inside the block into `JobFailed` naming `field`; a GDAL
    failure without a message (rasterio's `SystemError`, e.g. a creation option the driver rejects) too.

    Raises:
        JobFailed: `gdal.write_failed`.
    """
    try:
        yield
    except (RasterioError, CPLE_BaseError, pyogrio.errors.DataSourceError, pyogrio.errors.FieldError, OSError) as exc:
        message = f"{field}: GDAL could not write the output: {shown_paths(str(exc))}"
        raise JobFailed("gdal.write_failed", message, field=field) from exc
    except SystemError as exc:
        message = f"{field}: GDAL could not write the output and gave no reason (check the driver's options)"
        raise JobFailed("gdal.write_failed", message, field=field) from exc


@contextlib.contextmanager
def open_raster(path: Path | RemoteRaster, field: str = "uri") -> Iterator[rasterio.DatasetReader]:
    """Open a raster for reading, with read errors mapped as in `reading`; a `RemoteRaster` (`files.raster_input`)
    is read through `/vsicurl/` as a GeoTIFF only (a remote VRT could name local files), every request of the
    block through a `remote_guard.HostGuard` (allowed hosts only), its errors mapped by `remote_reading`. A workspace
    file must have been opened by one of `RASTER_INPUTS` (the only raster drivers registered, with rasterio's
    internal ones), and every file GDAL then says it uses (sidecars, overviews, masks, VRT sources) must resolve
    inside the workspace.

    Raises:
        JobFailed: `gdal.not_geospatial` or `gdal.corrupt`; `path.outside_workspace`; for a remote one
            `remote.not_allowed` (GDAL was sent off the list), `remote.unreachable`, `remote.no_range` or
            `remote.failed`.
    """
    if isinstance(path, RemoteRaster):
        check_remote(path, field)
        with (
            guarded_read(path, field) as env,
            remote_reading(path, field),
            rasterio.Env(**env),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", NotGeoreferencedWarning)
            with rasterio.open(path.gdal_path, driver="GTiff") as src:
                yield src
        return
    if objects.remote(path):
        with _open_object(path, field) as src:
            yield src
        return
    with reading(path, field), warnings.catch_warnings():
        # an ungeoreferenced raster is still described; jobs that need georeferencing check for it
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(pinned(path, field)) as src:
            _check_files(src, path, field)
            yield src


@contextlib.contextmanager
def _open_object(path: Path, field: str) -> Iterator[rasterio.DatasetReader]:
    """An object of an object-storage root read where it is, by range requests (`/vsis3/`), as a GeoTIFF only,
    with the store's credentials as GDAL options for the block (`workers.jobkit.objects.gdal_env`), every request
    through a `remote_guard.HostGuard` that lets it reach the store's endpoint only."""
    env, host = objects.gdal_env(path)
    with (
        reading(path, field),
        HostGuard(frozenset({host}), REMOTE_TIMEOUT_S) as guard,
        rasterio.Env(**env, **guard.gdal_env()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(objects.gdal_name(path), driver="GTiff") as src:
            yield src


_NO_RANGE = "Range downloading not supported"
_UNREACHABLE = ("CURL error", "HTTP response code: 0", "Couldn't connect", "Could not connect", "timed out")


@contextlib.contextmanager
def remote_reading(remote: RemoteRaster, field: str = "uri") -> Iterator[None]:
    """Turn GDAL's `/vsicurl/` errors inside the block into `JobFailed` naming `field`.

    Raises:
        JobFailed: `remote.no_range` (the server answers a range request with the whole file: GDAL refuses it),
            `remote.unreachable` (connection refused, DNS, timeout), `remote.failed` (an HTTP error status, a file
            that is no GeoTIFF).
    """
    try:
        yield
    except RasterioError as exc:
        text = str(exc)
        if _NO_RANGE in text:
            raise _no_range(remote, field) from exc
        if any(marker in text for marker in _UNREACHABLE):
            raise JobFailed(
                "remote.unreachable", f"{field}: {remote.url!r} is unreachable: {text}", field=field
            ) from exc
        raise JobFailed("remote.failed", f"{field}: {remote.url!r} could not be read: {exc}", field=field) from exc


MAX_REDIRECTS = 3


def check_remote(remote: RemoteRaster, field: str = "uri") -> None:
    """Ask the server for one byte before GDAL reads: a 206 lets GDAL go on; a redirect is followed only to an
    allowed host (GDAL's curl follows redirects wherever they lead, so each hop is checked here first); a 200 means
    the server ignores ranges.

    Raises:
        JobFailed: `remote.not_allowed` (a redirect to a host off the list), `remote.no_range`,
            `remote.unreachable`, `remote.failed` (an HTTP error status).
    """
    url = remote.url
    for _ in range(MAX_REDIRECTS + 1):
        try:
            with httpx.Client(timeout=remote.timeout_s) as client:
                request = client.build_request("GET", url, headers={"Range": "bytes=0-0"})
                reply = client.send(request, stream=True)  # the body is not read
                status, location = reply.status_code, reply.headers.get("location")
                reply.close()
        except httpx.HTTPError as exc:
            raise JobFailed(
                "remote.unreachable", f"{field}: {remote.url!r} is unreachable: {exc}", field=field
            ) from exc
        if not (300 <= status < 400 and location):
            break
        url = urljoin(url, location)
        if allowed_host(url, remote.allowed) is None:
            raise JobFailed(
                "remote.not_allowed",
                f"{field}: {remote.url!r} redirects to {url!r}, whose host is not in GEOGATE_REMOTE_HOSTS",
                field=field,
            )
    else:
        raise JobFailed(
            "remote.failed", f"{field}: {remote.url!r} redirects more than {MAX_REDIRECTS} times", field=field
        )
    if status == 200:
        raise _no_range(remote, field)
    if status != 206:
        raise JobFailed("remote.failed", f"{field}: {remote.url!r} answered HTTP {status}", field=field)


def _no_range(remote: RemoteRaster, field: str) -> JobFailed:
    return JobFailed(
        "remote.no_range",
        f"{field}: the server of {remote.url!r} does not answer HTTP range requests (it sent the whole file for a "
        "byte range); remote rasters are read by ranges, so copy the file into the workspace instead",
        field=field,
    )


def _check_files(src: rasterio.DatasetReader, path: Path, field: str) -> None:
    """After opening, whatever the driver: every file GDAL reads for the dataset is in the workspace."""
    if src.driver not in RASTER_INPUTS:
        raise JobFailed(
            "gdal.not_geospatial", f"{field}: {path.name!r} is not in a raster format Geogate reads", field=field
        )
    roots = current_roots()
    if roots is None or (outside := check_files(src.files, roots)) is None:
        return
    beside = Path(outside).parent == Path(src.name).parent  # a sidecar's own name says no more than the input's
    shown = f" ({Path(outside).name!r} beside it)" if beside else ""
    raise JobFailed(
        "path.outside_workspace", f"{field}: {path.name!r} reads files outside the workspace{shown}", field=field
    )


def parse_crs(text: str, field: str) -> CRS:
    """The CRS named by `text` (EPSG code, PROJ string, WKT, authority:code).

    Raises:
        JobFailed: `crs.unknown`, naming `field`.
    """
    try:
        return CRS.from_user_input(text)
    except (ProjCRSError, RasterioCRSError) as exc:
        raise JobFailed("crs.unknown", f"{field}: {text!r} is not a CRS PROJ knows ({exc})", field=field) from exc


def transformer_between(source: CRS, target: CRS, field: str) -> Transformer:
    """PROJ's transformation from `source` to `target` (x, y order), found before any work.

    Raises:
        JobFailed: `crs.no_transformation` naming `field` when PROJ knows none (a CRS of another body, a local
            engineering CRS), with CRSs the source can go to in `details.valid`.
    """
    try:
        return Transformer.from_crs(source, target, always_xy=True)
    except ProjError as exc:
        valid = [":".join(code) for crs in (source, source.geodetic_crs) if crs and (code := crs.to_authority())]
        names = f"{source.name!r} to {target.name!r}"
        message = f"{field}: PROJ knows no transformation from {names} (another body's CRS, or a local one)"
        details = {"valid": list(dict.fromkeys(valid)), "source_crs": source.name}
        raise JobFailed("crs.no_transformation", message, field=field, details=details) from exc


def check_bands(requested: list[int], count: int, field: str) -> None:
    """Refuse band indexes outside 1..count.

    Raises:
        JobFailed: `band.out_of_range`, naming `field`.
    """
    bad = [b for b in requested if not 1 <= b <= count]
    if bad:
        raise JobFailed(
            "band.out_of_range", f"{field}: band(s) {bad} do not exist; the raster has bands 1..{count}", field=field
        )


def require_georeferenced(src: rasterio.DatasetReader, field: str = "uri") -> None:
    """Refuse a raster that has neither a geotransform nor ground control points.

    Raises:
        JobFailed: `gdal.not_geospatial`.
    """
    if src.transform.is_identity and not src.gcps[0] and not src.rpcs:
        name = Path(src.name).name
        raise JobFailed("gdal.not_geospatial", f"{field}: {name!r} has no georeferencing", field=field)
