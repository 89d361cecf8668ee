"""Vector jobs on generated GeoPackage/GeoJSON layers: formats, CRSs, clipping, buffering, simplifying."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio
import pyogrio.raw
import pytest
import shapely
from pydantic import ValidationError
from pyproj import Transformer

from schemas.tools.vector import (
    VectorBufferArgs,
    VectorClipArgs,
    VectorConvertArgs,
    VectorReprojectArgs,
    VectorSimplifyArgs,
)
from workers.gdal import vector_io
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed
from workers.tools.vector import vector_buffer, vector_clip, vector_convert, vector_reproject, vector_simplify

VectorFactory = Callable[..., Path]


def geometries(path: Path) -> np.ndarray:
    _, _, wkb, _ = pyogrio.raw.read(path)
    return shapely.from_wkb(wkb)


def wiggly_lines(n: int = 5) -> list[shapely.Geometry]:
    t = np.linspace(0, 10, 400)
    return [shapely.LineString(np.c_[t, np.sin(t * 3) + 0.01 * np.cos(t * 50) + i]) for i in range(n)]


@pytest.mark.parametrize(
    ("output", "driver"),
    [("out.geojson", "GeoJSON"), ("out.shp", "ESRI Shapefile"), ("out.fgb", "FlatGeobuf"), ("out.gpkg", "GPKG")],
)
def test_convert_writes_the_format_the_extension_names(
    make_vector: VectorFactory, ctx: JobContext, output: str, driver: str
) -> None:
    make_vector("src.gpkg")

    result = vector_convert(VectorConvertArgs(uri="src.gpkg", output=output), ctx)

    info = pyogrio.read_info(ctx.roots[0] / output)
    assert (info["driver"], info["features"], info["crs"]) == (driver, 6, "EPSG:4326")
    assert (result.src_driver, result.dst_driver, result.feature_count) == ("GPKG", driver, 6)
    written, source = geometries(ctx.roots[0] / output), geometries(ctx.roots[0] / "src.gpkg")
    # FlatGeobuf reorders features by its spatial index and may rewind rings
    assert sorted(shapely.to_wkt(shapely.normalize(written))) == sorted(shapely.to_wkt(shapely.normalize(source)))
    assert not [p.name for p in ctx.roots[0].iterdir() if ".partial" in p.name]


def test_convert_to_shapefile_records_the_encoding(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.geojson", driver="GeoJSON")

    result = vector_convert(VectorConvertArgs(uri="src.geojson", output="out.shp", encoding="ISO-8859-1"), ctx)

    assert result.encoding == "ISO-8859-1"
    assert (ctx.roots[0] / "out.cpg").read_text().strip() in {"ISO-8859-1", "88591"}


def test_convert_to_an_unknown_extension_fails_naming_driver(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as failed:
        vector_convert(VectorConvertArgs(uri="src.gpkg", output="out.xyz"), ctx)

    assert (failed.value.code, failed.value.field) == ("driver.unknown", "driver")


def test_reprojected_coordinates_agree_with_pyproj(make_vector: VectorFactory, ctx: JobContext) -> None:
    """Issue 3 acceptance: reprojected coordinates equal pyproj's transform of the source coordinates."""
    make_vector("src.gpkg")
    source = shapely.get_coordinates(geometries(ctx.roots[0] / "src.gpkg"))
    x, y = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True).transform(source[:, 0], source[:, 1])

    result = vector_reproject(VectorReprojectArgs(uri="src.gpkg", output="utm.gpkg", dst_crs="EPSG:32632"), ctx)

    written = shapely.get_coordinates(geometries(ctx.roots[0] / "utm.gpkg"))
    np.testing.assert_allclose(written, np.c_[x, y], atol=1e-6)
    assert pyogrio.read_info(ctx.roots[0] / "utm.gpkg")["crs"] == "EPSG:32632"
    assert result.bounds == pytest.approx([x.min(), y.min(), x.max(), y.max()])


def test_reproject_refuses_an_unknown_crs_naming_dst_crs() -> None:
    with pytest.raises(ValidationError) as invalid:
        VectorReprojectArgs(uri="a.gpkg", output="b.gpkg", dst_crs="EPSG:0")

    assert invalid.value.errors()[0]["loc"] == ("dst_crs",)


def test_clip_by_bounds_keeps_only_intersecting_features_cut_to_the_box(
    make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_vector("src.gpkg")  # six 0.1° squares from x=10.0, one square apart
    box = [10.05, 49.0, 10.45, 49.2]

    result = vector_clip(VectorClipArgs(uri="src.gpkg", output="clip.gpkg", bounds=box), ctx)

    clipped = geometries(ctx.roots[0] / "clip.gpkg")
    assert (result.feature_count, result.source_feature_count, result.clip_method) == (3, 6, "bbox")
    assert shapely.within(clipped, shapely.box(*box).buffer(1e-9)).all()
    assert shapely.area(clipped).sum() == pytest.approx(0.05 * 0.1 + 0.1 * 0.1 + 0.05 * 0.1)


def test_clip_by_a_mask_file_in_another_crs_reprojects_the_mask(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")
    transformer = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    mask = shapely.transform(shapely.box(10.0, 48.9, 10.35, 49.2), lambda c: np.c_[transformer.transform(*c.T)])
    make_vector("mask.geojson", [mask], crs="EPSG:3857", driver="GeoJSON")

    result = vector_clip(VectorClipArgs(uri="src.gpkg", output="clip.gpkg", mask="mask.geojson"), ctx)

    assert (result.feature_count, result.clip_method) == (2, "mask")


def test_clip_by_an_inline_wkt_mask(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    result = vector_clip(
        VectorClipArgs(uri="src.gpkg", output="clip.gpkg", mask="POLYGON((10 49, 10.15 49, 10.15 50, 10 50, 10 49))"),
        ctx,
    )

    assert result.feature_count == 1


def test_clip_drops_features_that_only_touch_the_box(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    result = vector_clip(VectorClipArgs(uri="src.gpkg", output="clip.gpkg", bounds=[10.1, 49.0, 10.2, 49.1]), ctx)

    assert result.feature_count == 0


def test_clip_with_a_line_mask_fails_naming_mask(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as failed:
        vector_clip(VectorClipArgs(uri="src.gpkg", output="c.gpkg", mask="LINESTRING(0 0, 1 1)"), ctx)

    assert (failed.value.code, failed.value.field) == ("mask.invalid", "mask")


def test_clip_needs_exactly_one_of_bounds_and_mask() -> None:
    with pytest.raises(ValidationError):
        VectorClipArgs(uri="a.gpkg", output="b.gpkg")


def test_buffer_grows_every_area(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg", crs="EPSG:32633")  # squares of 0.1 m in a metric CRS
    before = shapely.area(geometries(ctx.roots[0] / "src.gpkg"))

    result = vector_buffer(VectorBufferArgs(uri="src.gpkg", output="buf.gpkg", distance=0.05), ctx)

    after = shapely.area(geometries(ctx.roots[0] / "buf.gpkg"))
    assert (after > before).all()
    assert after == pytest.approx(before + 4 * 0.1 * 0.05 + np.pi * 0.05**2, rel=1e-3)
    assert result.warnings == []


def test_buffer_of_points_gives_polygons_and_warns_about_degrees(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("pts.geojson", [shapely.Point(10, 49), shapely.Point(11, 49)], driver="GeoJSON")

    args = VectorBufferArgs(uri="pts.geojson", output="buf.geojson", distance=0.1, units="crs")
    result = vector_buffer(args, ctx)

    assert result.geometry_type == "Polygon"
    assert result.warnings


@pytest.mark.parametrize("method", ["douglas-peucker", "visvalingam"])
def test_simplify_reduces_vertex_counts(make_vector: VectorFactory, ctx: JobContext, method: str) -> None:
    make_vector("lines.gpkg", wiggly_lines())

    result = vector_simplify(VectorSimplifyArgs(uri="lines.gpkg", output="s.gpkg", tolerance=0.05, method=method), ctx)

    before = shapely.get_num_coordinates(geometries(ctx.roots[0] / "lines.gpkg"))
    after = shapely.get_num_coordinates(geometries(ctx.roots[0] / "s.gpkg"))
    assert (after < before).all()
    assert (result.vertices_before, result.vertices_after) == (before.sum(), after.sum())
    assert shapely.hausdorff_distance(geometries(ctx.roots[0] / "s.gpkg"), wiggly_lines()).max() < 0.2


def test_visvalingam_keeps_polygons_valid_with_preserve_topology(make_vector: VectorFactory, ctx: JobContext) -> None:
    t = np.linspace(0, 2 * np.pi, 300)
    radius = 1 + 0.05 * np.random.default_rng(7).standard_normal(300)
    make_vector("blob.gpkg", [shapely.Polygon(np.c_[radius * np.cos(t), radius * np.sin(t)]).buffer(0)])

    args = VectorSimplifyArgs(uri="blob.gpkg", output="s.gpkg", tolerance=0.1, method="visvalingam")
    result = vector_simplify(args, ctx)

    assert shapely.is_valid(geometries(ctx.roots[0] / "s.gpkg")).all()
    assert result.vertices_after < result.vertices_before


def test_a_cancelled_vector_job_leaves_no_output(
    make_vector: VectorFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_io, "CHUNK_FEATURES", 2)
    make_vector("src.gpkg")
    ctx = JobContext(call_id="c", roots=[tmp_path], sink=lambda p, t, m: p >= 4)

    with pytest.raises(JobCancelled):
        vector_buffer(VectorBufferArgs(uri="src.gpkg", output="out.shp", distance=1.0), ctx)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.gpkg"]


def test_vector_jobs_read_in_chunks_with_progress(
    make_vector: VectorFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_io, "CHUNK_FEATURES", 4)
    make_vector("src.gpkg", [shapely.Point(i, i) for i in range(10)])
    seen: list[tuple[float, float | None]] = []
    ctx = JobContext(call_id="c", roots=[tmp_path], sink=lambda p, t, m: seen.append((p, t)) is not None)

    result = vector_convert(VectorConvertArgs(uri="src.gpkg", output="out.geojson"), ctx)

    assert seen == [(4, 10), (8, 10), (10, 10)]
    assert result.feature_count == 10


def test_an_unknown_layer_fails_naming_layer(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as failed:
        vector_convert(VectorConvertArgs(uri="src.gpkg", output="o.geojson", layer="nope"), ctx)

    assert (failed.value.code, failed.value.field) == ("layer.not_found", "layer")


@pytest.mark.parametrize("driver", ["MVT", "OpenFileGDB", "MiraMonVector", "MEM", "PDS4"])
def test_drivers_that_write_no_single_file_are_refused_naming_driver_and_leave_nothing(
    driver: str, make_vector: VectorFactory, ctx: JobContext
) -> None:
    """MVT and OpenFileGDB write folders, MiraMonVector and PDS4 files under names of their own, MEM nothing: each
    wrote something and still crashed, or left temporaries behind."""
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as refused:
        vector_convert(VectorConvertArgs(uri="src.gpkg", output="out.dat", driver=driver), ctx)

    assert (refused.value.code, refused.value.field) == ("driver.unsupported", "driver")
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["src.gpkg"]


@pytest.mark.parametrize("output", ["out.mvt", "out.pbf", "out.pol"])
def test_a_refused_driver_chosen_by_the_extension_names_output(
    output: str, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as refused:
        vector_convert(VectorConvertArgs(uri="src.gpkg", output=output), ctx)

    assert (refused.value.code, refused.value.field) == ("driver.unknown", "driver")  # not on the output list
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["src.gpkg"]


def test_reproject_to_another_bodys_crs_is_refused_naming_dst_crs(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    with pytest.raises(JobFailed) as failed:
        vector_reproject(VectorReprojectArgs(uri="src.gpkg", output="mars.gpkg", dst_crs="IAU_2015:49900"), ctx)

    assert (failed.value.code, failed.value.field) == ("crs.no_transformation", "dst_crs")
    assert failed.value.details["valid"] == ["EPSG:4326"]
    assert not (ctx.roots[0] / "mars.gpkg").exists()
