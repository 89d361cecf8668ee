"""The GDAL tool surface as a whole: gdal-mcp's names, a job per tool, honest hints, workspace scoping."""

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from schemas.tools import TOOLS
from schemas.tools.raster import RasterInfoArgs, RasterReprojectArgs, RasterStatsArgs
from schemas.tools.vector import VectorBufferArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import load_all
from workers.tools.raster import raster_info, raster_reproject, raster_stats
from workers.tools.vector import vector_buffer

RasterFactory = Callable[..., Path]

# Argument names of gdal-mcp 1.1.3's tools (read from its wheel). Nested `options`/`params` objects there are
# accepted here and flattened, so their inner names count as ours.
GDAL_MCP_ARGUMENTS: dict[str, set[str]] = {
    "raster_info": {"uri", "band"},
    "raster_convert": {"uri", "output", "driver", "compression", "tiled", "blockxsize", "blockysize", "photometric",
                       "overviews", "overview_resampling", "creation_options"},
    "raster_reproject": {"uri", "output", "dst_crs", "resampling", "src_crs", "resolution", "width", "height",
                         "bounds", "nodata"},
    "raster_stats": {"uri", "bands", "include_histogram", "histogram_bins", "percentiles", "sample_size"},
    "vector_info": {"uri"},
    "vector_convert": {"uri", "output", "driver", "encoding"},
    "vector_reproject": {"uri", "output", "dst_crs", "src_crs"},
    "vector_clip": {"uri", "output", "bounds", "mask"},
    "vector_buffer": {"uri", "output", "distance", "resolution"},
    "vector_simplify": {"uri", "output", "tolerance", "method", "preserve_topology"},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(GDAL_MCP_ARGUMENTS))
def test_every_gdal_mcp_tool_exists_with_its_argument_names_and_a_job(name: str) -> None:
    spec = TOOLS[name]

    assert GDAL_MCP_ARGUMENTS[name] <= set(spec.args.model_fields)
    assert name in load_all()


@pytest.mark.parametrize("name", sorted(GDAL_MCP_ARGUMENTS))
def test_hints_say_read_only_or_destructive_and_writers_take_overwrite(name: str) -> None:
    spec = TOOLS[name]
    writes = "output" in spec.args.model_fields

    assert spec.hints.read_only is not writes
    assert spec.hints.destructive is writes
    assert ("overwrite" in spec.args.model_fields) is writes
    assert "Use it" in spec.description


def test_a_gdal_mcp_style_nested_call_validates_the_same_as_a_flat_one() -> None:
    nested = TOOLS["raster_stats"].args.model_validate({"uri": "a.tif", "params": {"bands": [1]}})
    flat = TOOLS["raster_stats"].args.model_validate({"uri": "a.tif", "bands": [1]})

    assert nested == flat


def test_arguments_survive_the_gateway_round_trip_through_json() -> None:
    """The gateway publishes `model_dump(mode="json")`; the worker validates it again."""
    args = RasterReprojectArgs(uri="a.tif", output="b.tif", dst_crs="EPSG:3857", resampling="cubic")

    assert RasterReprojectArgs.model_validate(args.model_dump(mode="json")) == args


def _symlink_out(tmp_path: Path, outside: Path) -> str:
    (outside / "secret.tif").write_bytes(b"x")
    os.symlink(outside / "secret.tif", tmp_path / "link.tif")
    return "link.tif"


@pytest.mark.parametrize(
    "uri",
    ["../escape.tif", "/etc/hostname", "symlink"],
    ids=["dotdot", "absolute-outside", "symlink-escaping"],
)
@pytest.mark.parametrize(
    "call",
    [
        lambda uri, ctx: raster_info(RasterInfoArgs(uri=uri), ctx),
        lambda uri, ctx: raster_stats(RasterStatsArgs(uri=uri), ctx),
        lambda uri, ctx: raster_reproject(
            RasterReprojectArgs(uri=uri, output="o.tif", dst_crs="EPSG:3857", resampling="nearest"), ctx
        ),
        lambda uri, ctx: vector_buffer(VectorBufferArgs(uri=uri, output="o.gpkg", distance=1), ctx),
    ],
    ids=["raster_info", "raster_stats", "raster_reproject", "vector_buffer"],
)
def test_a_source_outside_the_workspace_is_refused_naming_uri(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, uri: str, call: Callable[[str, JobContext], BaseModel]
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    if uri == "symlink":
        uri = _symlink_out(root, tmp_path_factory.mktemp("outside"))

    with pytest.raises(JobFailed) as failed:
        call(uri, JobContext(call_id="c", roots=[root]))

    assert (failed.value.code, failed.value.field) == ("path.outside_workspace", "uri")


@pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")
@pytest.mark.parametrize("output", ["../out.tif", "/tmp/geogate-out.tif"])
def test_an_output_outside_the_workspace_is_refused(make_raster: RasterFactory, ctx: JobContext, output: str) -> None:
    make_raster()

    with pytest.raises(JobFailed) as failed:
        raster_reproject(
            RasterReprojectArgs(uri="src.tif", output=output, dst_crs="EPSG:3857", resampling="nearest"), ctx
        )

    assert (failed.value.code, failed.value.field) == ("path.outside_workspace", "output")
    assert not Path("/tmp/geogate-out.tif").exists()


@pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")
def test_an_output_in_a_missing_folder_creates_the_folder(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()

    result = raster_reproject(
        RasterReprojectArgs(uri="src.tif", output="new/sub/out.tif", dst_crs="EPSG:3857", resampling="nearest"), ctx
    )

    assert Path(result.output.path) == ctx.roots[0] / "new" / "sub" / "out.tif"
    assert (ctx.roots[0] / "new" / "sub" / "out.tif").is_file()
