"""Job `raster_terrain`: slope, aspect and hillshade of hand-made planes (known slope and aspect everywhere), in a
projected CRS with square and oblong pixels and in a geographic one (distances from pyproj's geodesic, independent of
the job's ellipsoid formulas); nodata and edges; and against GDAL's own `gdaldem` on a random DEM."""

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from pyproj import Geod

from schemas.tools.raster_ops import RasterTerrainArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster_ops import raster_terrain

SIZE = (23, 31)
GRADIENT = (0.3, -0.45)
"""dz/dx (east) and dz/dy (north) of the planes, metres per metre."""


def write_dem(path: Path, z: np.ndarray, transform: Affine, crs: str, nodata: float | None = None) -> Path:
    profile = {"driver": "GTiff", "width": z.shape[1], "height": z.shape[0], "count": 1, "dtype": z.dtype.name}
    with rasterio.open(path, "w", crs=crs, transform=transform, nodata=nodata, **profile) as dst:
        dst.write(z, 1)
    return path


def projected_plane(tmp_path: Path, xres: float = 30.0, yres: float = 30.0, nodata: float | None = None) -> Path:
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    east, north = (cols + 0.5) * xres, -(rows + 0.5) * yres
    z = (1000 + GRADIENT[0] * east + GRADIENT[1] * north).astype("float64")
    return write_dem(tmp_path / "dem.tif", z, Affine(xres, 0, 500_000, 0, -yres, 5_500_000), "EPSG:32633", nodata)


def terrain(ctx: JobContext, product: str, **extra: object) -> tuple[np.ndarray, dict]:
    args = RasterTerrainArgs(uri="dem.tif", output=f"{product}.tif", product=product, overwrite=True, **extra)  # type: ignore[arg-type]
    result = raster_terrain(args, ctx)
    with rasterio.open(result.output.path) as out:
        return out.read(1), result.model_dump()


def expected_slope() -> float:
    return math.degrees(math.atan(math.hypot(*GRADIENT)))


def expected_aspect() -> float:
    """Downhill, clockwise from north: the direction of minus the gradient."""
    return math.degrees(math.atan2(-GRADIENT[0], -GRADIENT[1])) % 360


@pytest.mark.parametrize(("xres", "yres"), [(30.0, 30.0), (10.0, 20.0)], ids=["square", "oblong"])
def test_a_planes_slope_and_aspect_are_the_same_everywhere_inside_the_edges(
    ctx: JobContext, tmp_path: Path, xres: float, yres: float
) -> None:
    projected_plane(tmp_path, xres, yres)

    slope, meta = terrain(ctx, "slope")
    percent, _ = terrain(ctx, "slope", slope_units="percent")
    aspect, _ = terrain(ctx, "aspect")

    inside = (slice(1, -1), slice(1, -1))
    np.testing.assert_allclose(slope[inside], expected_slope(), atol=1e-4)
    np.testing.assert_allclose(percent[inside], 100 * math.hypot(*GRADIENT), rtol=1e-6)
    np.testing.assert_allclose(aspect[inside], expected_aspect(), atol=1e-4)
    border = np.ones(SIZE, dtype=bool)
    border[inside] = False
    assert (slope[border] == -9999).all() and (aspect[border] == -9999).all()
    assert meta["geographic"] is False and meta["valid_pixels"] == (SIZE[0] - 2) * (SIZE[1] - 2)


def test_hillshade_is_the_lit_fraction_of_the_planes_normal(ctx: JobContext, tmp_path: Path) -> None:
    projected_plane(tmp_path)

    shade, meta = terrain(ctx, "hillshade", azimuth=200.0, altitude=30.0)

    az, alt = math.radians(200.0), math.radians(30.0)
    normal = np.array([-GRADIENT[0], -GRADIENT[1], 1.0]) / math.sqrt(1 + math.hypot(*GRADIENT) ** 2)
    light = np.array([math.sin(az) * math.cos(alt), math.cos(az) * math.cos(alt), math.sin(alt)])
    lit = float(normal @ light)
    assert lit > 0
    assert (shade[1:-1, 1:-1] == round(1 + 254 * lit)).all()
    assert (shade[0] == 0).all() and meta["dtype"] == "uint8" and meta["nodata"] == 0


def test_a_geographic_dem_is_measured_on_the_ellipsoid_row_by_row(ctx: JobContext, tmp_path: Path) -> None:
    """Heights laid on a degree grid at 60°N from geodesic distances (east along each parallel from the middle
    column, north along the meridians): the slope and aspect come out as the geodesic gradient says, where one scale
    for the whole raster (gdaldem's `-s`) would be off by the cosine of the latitude. Parallels converge, so the
    north gradient has a small term growing with the east distance; it is taken from the geodesic as well."""
    geod, res, left, top = Geod(ellps="WGS84"), 0.0005, 10.0, 60.01
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    lon, lat = left + (cols + 0.5) * res, top - (rows + 0.5) * res
    middle = SIZE[1] // 2
    east = geod.inv(np.full(lon.shape, lon[0, middle]), lat, lon, lat)[2] * np.sign(cols - middle)
    north = geod.inv(lon, np.full(lat.shape, top - 0.5), lon, lat)[2]
    z = 200 + GRADIENT[0] * east + GRADIENT[1] * north
    write_dem(tmp_path / "dem.tif", z, Affine(res, 0, left, 0, -res, top), "EPSG:4326")

    slope, meta = terrain(ctx, "slope")
    aspect, _ = terrain(ctx, "aspect")

    def width(at: np.ndarray) -> np.ndarray:
        return geod.inv(np.full(at.shape, left), at, np.full(at.shape, left + res), at)[2]

    delta = 1e-4
    shrink = (np.log(width(lat + delta)) - np.log(width(lat - delta))) / geod.inv(lon, lat - delta, lon, lat + delta)[2]
    g_east, g_north = GRADIENT[0], GRADIENT[1] + GRADIENT[0] * east * shrink
    want_slope = np.degrees(np.arctan(np.hypot(g_east, g_north)))
    want_aspect = np.degrees(np.arctan2(-g_east, -g_north)) % 360
    inside = (slice(1, -1), slice(1, -1))
    np.testing.assert_allclose(slope[inside], want_slope[inside], atol=1e-3)
    np.testing.assert_allclose(aspect[inside], want_aspect[inside], atol=1e-3)
    assert meta["geographic"] is True


def test_nodata_spreads_to_its_neighbours_unless_edges_are_computed(ctx: JobContext, tmp_path: Path) -> None:
    path = projected_plane(tmp_path, nodata=-1.0)
    with rasterio.open(path, "r+") as dem:
        z = dem.read(1)
        z[10, 12] = -1.0
        dem.write(z, 1)
    hole = z == -1.0

    plain, _ = terrain(ctx, "slope")
    computed, _ = terrain(ctx, "slope", edges="compute")

    padded = np.pad(hole, 1, constant_values=True)  # past the raster counts as missing
    touched = np.zeros(SIZE, dtype=bool)
    for dr in range(3):
        for dc in range(3):
            touched |= padded[dr : dr + SIZE[0], dc : dc + SIZE[1]]
    assert np.array_equal(plain == -9999, touched)
    np.testing.assert_allclose(plain[~touched], expected_slope(), atol=1e-4)
    assert np.array_equal(computed == -9999, hole)  # a missing neighbour takes the centre's value


@pytest.mark.parametrize("edges", ["nodata", "compute"])
@pytest.mark.parametrize("product", ["slope", "aspect", "hillshade"])
def test_the_products_equal_gdaldems_on_a_random_dem_with_nodata(
    ctx: JobContext, tmp_path: Path, product: str, edges: str
) -> None:
    """GDAL's own gdaldem (gdal-bin, installed by `make system-deps`) over the same file, borders included (with
    `-compute_edges` for `edges=compute`; but for the four corner cells, where gdaldem repeats the edge column on
    its first and last rows and the job extends it linearly as on every other row): gdaldem computes in float32, the
    job in float64."""
    z = (np.random.default_rng(5).random(SIZE) * 300).astype("float32")
    z[4:6, 7] = -1.0
    z[0, 12] = z[SIZE[0] - 1, 3] = -1.0  # nodata on the border too
    write_dem(tmp_path / "dem.tif", z, Affine(25, 0, 400_000, 0, -25, 5_000_000), "EPSG:32633", nodata=-1.0)
    gdaldem = shutil.which("gdaldem")
    assert gdaldem is not None, "gdaldem is missing: run `make system-deps`"
    flags = ["-compute_edges"] if edges == "compute" else []
    subprocess.run([gdaldem, product, "dem.tif", "gdal.tif", "-q", *flags], cwd=tmp_path, check=True,
                   capture_output=True)  # fmt: skip

    ours, _ = terrain(ctx, product, edges=edges)

    with rasterio.open(tmp_path / "gdal.tif") as theirs:
        expected, nodata = theirs.read(1), theirs.nodata
    compared = np.ones(SIZE, dtype=bool)
    if edges == "compute":
        compared[[0, 0, -1, -1], [0, -1, 0, -1]] = False
    assert np.array_equal(ours == nodata, expected == nodata)
    np.testing.assert_allclose(ours[compared].astype("float64"), expected[compared].astype("float64"), atol=1e-3)


def test_a_rotated_grid_is_refused_naming_the_dem(ctx: JobContext, tmp_path: Path) -> None:
    write_dem(tmp_path / "dem.tif", np.zeros(SIZE), Affine(30, 5, 0, 5, -30, 0), "EPSG:32633")

    with pytest.raises(JobFailed) as caught:
        terrain(ctx, "slope")

    assert (caught.value.code, caught.value.field) == ("raster.rotated", "uri")


def test_a_band_the_dem_lacks_is_refused_naming_band(ctx: JobContext, tmp_path: Path) -> None:
    projected_plane(tmp_path)

    with pytest.raises(JobFailed) as caught:
        terrain(ctx, "slope", band=2)

    assert (caught.value.code, caught.value.field) == ("band.out_of_range", "band")
