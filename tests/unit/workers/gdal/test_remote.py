"""Remote raster inputs: COGs read by HTTP range requests through `/vsicurl/` from allowed hosts only.

Each test starts its own threaded HTTP(S) servers on 127.0.0.1 (`serve`, in conftest.py) that record every request:
one answers `Range` with 206 and the bytes asked for, one ignores `Range` and sends the whole file with 200, one
redirects (all requests, or those after the first few: GDAL's own), each port standing for a host.
"""

import json
import ssl
from pathlib import Path

import pytest
import shapely

from geogate.calls import keys
from geogate.calls.keys import celery_queue_key
from geogate.calls.publish import request_effects, request_event
from geogate.calls.store import EventStore
from geogate.queue.message import envelope_args
from geogate.settings import Settings
from schemas.events import ToolRequested
from schemas.ids import new_id
from schemas.tools import TOOLS
from schemas.tools.analysis import VectorRasterizeArgs, ZonalStatsArgs
from schemas.tools.previews import CogValidateArgs, RasterPreviewArgs
from schemas.tools.raster import RasterInfoArgs
from tests.support import free_port
from tests.unit.workers.gdal.conftest import ServerFactory, VectorFactory
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import RemoteRaster, allowed_host, raster_input
from workers.run import runner
from workers.tools import load_all
from workers.tools.analysis import vector_rasterize, zonal_stats
from workers.tools.previews import cog_validate, raster_preview
from workers.tools.raster import raster_info

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3


def remote_ctx(tmp_path: Path, hosts: str) -> JobContext:
    settings = Settings(redis_url="redis://unused", workspaces=str(tmp_path), remote_hosts=hosts, remote_timeout_s=5)
    return JobContext(call_id="remote", roots=[tmp_path], settings=settings)


def test_an_allowed_range_server_is_read_by_ranges_and_gives_the_local_figures(
    cog: Path, serve: ServerFactory, make_vector: VectorFactory, tmp_path: Path
) -> None:
    served = serve(cog)
    ctx = remote_ctx(tmp_path, f"example.org, {served.host}")
    zones = [shapely.box(10.5, 46.2, 12.3, 47.9), shapely.box(15.0, 45.5, 16.1, 46.0)]
    make_vector("zones.gpkg", zones)
    (tmp_path / "dem.tif").write_bytes(cog.read_bytes())  # the same file in the workspace, for the local figures

    remote = zonal_stats(ZonalStatsArgs(uri=served.url, zones="zones.gpkg", stats=["mean", "count", "max"]), ctx)
    local = zonal_stats(ZonalStatsArgs(uri="dem.tif", zones="zones.gpkg", stats=["mean", "count", "max"]), ctx)
    report = cog_validate(CogValidateArgs(uri=served.url), ctx)
    preview = raster_preview(RasterPreviewArgs(uri=served.url, max_size=64), ctx)
    info = raster_info(RasterInfoArgs(uri=served.url), ctx)

    assert remote.features == local.features and remote.features[0].count
    assert (report.valid, report.errors, report.path) == (True, [], served.url)
    assert (preview.width, preview.height, preview.path) == (64, 46, served.url)
    assert (info.path, info.driver, info.width, info.height) == (served.url, "GTiff", 700, 500)
    assert info.overview_levels == report.overviews == [2, 4]  # the COG driver's, down to one 256² block
    gets = [r for r in served.requests if r[0] == "GET"]
    assert gets and all(status == 206 and asked for _, asked, status in gets)
    fetched = sum(int(a.split("-")[1]) - int(a.split("=")[1].split("-")[0]) + 1 for _, a, _ in gets if a)
    assert fetched < 4 * cog.stat().st_size  # ranges, not whole-file downloads per call


def test_a_host_outside_the_allow_list_is_refused_before_any_request(
    cog: Path, serve: ServerFactory, make_vector: VectorFactory, tmp_path: Path
) -> None:
    served = serve(cog)
    make_vector("zones.gpkg")
    other_port = f"127.0.0.1:{free_port()}"

    for hosts in ("", "example.org", other_port):
        ctx = remote_ctx(tmp_path, hosts)
        for run, args in (
            (zonal_stats, ZonalStatsArgs(uri=served.url, zones="zones.gpkg")),
            (cog_validate, CogValidateArgs(uri=served.url)),
            (raster_preview, RasterPreviewArgs(uri=served.url)),
        ):
            with pytest.raises(JobFailed) as refused:
                run(args, ctx)
            assert (refused.value.code, refused.value.field) == ("remote.not_allowed", "uri")

    assert served.requests == []


def test_a_redirect_is_followed_only_to_an_allowed_host(cog: Path, serve: ServerFactory, tmp_path: Path) -> None:
    target = serve(cog)
    redirecting = serve(cog, redirect=target.url)

    with pytest.raises(JobFailed) as refused:
        cog_validate(CogValidateArgs(uri=redirecting.url), remote_ctx(tmp_path, redirecting.host))
    assert (refused.value.code, refused.value.field) == ("remote.not_allowed", "uri")
    assert target.requests == [] and len(redirecting.requests) == 1

    both = remote_ctx(tmp_path, f"{redirecting.host},{target.host}")
    assert cog_validate(CogValidateArgs(uri=redirecting.url), both).valid
    assert target.requests and all(status in (200, 206) for _, _, status in target.requests)


@pytest.mark.parametrize("tool", ["raster_preview", "zonal_stats", "cog_validate", "vector_rasterize", "raster_info"])
def test_an_allowed_host_redirecting_gdals_own_requests_elsewhere_is_refused_and_the_other_host_sees_nothing(
    tool: str, cog: Path, serve: ServerFactory, make_vector: VectorFactory, tmp_path: Path
) -> None:
    """The allowed server answers the first check (one byte, asked before GDAL reads) honestly, then sends GDAL's
    own requests to a host off the list: GDAL's curl follows redirects by itself, so only the guard stops it."""
    elsewhere = serve(cog)
    allowed = serve(cog, redirect=elsewhere.url, honest=1)
    make_vector("zones.gpkg", [shapely.box(10.5, 46.2, 12.3, 47.9)])
    runs = {
        "raster_preview": lambda ctx: raster_preview(RasterPreviewArgs(uri=allowed.url), ctx),
        "zonal_stats": lambda ctx: zonal_stats(ZonalStatsArgs(uri=allowed.url, zones="zones.gpkg"), ctx),
        "cog_validate": lambda ctx: cog_validate(CogValidateArgs(uri=allowed.url), ctx),
        "vector_rasterize": lambda ctx: vector_rasterize(
            VectorRasterizeArgs(uri="zones.gpkg", output="burnt.tif", burn_value=1, like=allowed.url), ctx
        ),
        "raster_info": lambda ctx: raster_info(RasterInfoArgs(uri=allowed.url), ctx),
    }

    with pytest.raises(JobFailed) as refused:
        runs[tool](remote_ctx(tmp_path, allowed.host))

    field = "like" if tool == "vector_rasterize" else "uri"
    assert (refused.value.code, refused.value.field) == ("remote.not_allowed", field), refused.value.message
    assert elsewhere.host in refused.value.message
    assert elsewhere.requests == []
    assert [status for _, _, status in allowed.requests][:2] == [206, 302]
    assert not (tmp_path / "burnt.tif").exists()


def test_https_reads_go_through_the_guard_and_a_redirect_to_another_https_host_is_refused(
    cog: Path, serve: ServerFactory, tls: ssl.SSLContext, tmp_path: Path
) -> None:
    """curl sends HTTPS through the guard as `CONNECT host:port`: allowed hosts are tunnelled (TLS end to end),
    others refused before any connection."""
    elsewhere = serve(cog, tls=tls)
    allowed = serve(cog, tls=tls, redirect=elsewhere.url, honest=3)
    ctx = remote_ctx(tmp_path, allowed.host)
    readable = serve(cog, tls=tls)

    info = raster_info(RasterInfoArgs(uri=readable.url), remote_ctx(tmp_path, readable.host))
    with pytest.raises(JobFailed) as refused:
        raster_preview(RasterPreviewArgs(uri=allowed.url, max_size=64), ctx)

    assert (info.width, info.height) == (700, 500)
    assert (refused.value.code, refused.value.field) == ("remote.not_allowed", "uri"), refused.value.message
    assert elsewhere.requests == [] and 302 in [status for _, _, status in allowed.requests]


def test_a_server_without_range_support_is_a_clear_error(cog: Path, serve: ServerFactory, tmp_path: Path) -> None:
    served = serve(cog, ranges=False)

    with pytest.raises(JobFailed) as failed:
        cog_validate(CogValidateArgs(uri=served.url), remote_ctx(tmp_path, served.host))

    assert (failed.value.code, failed.value.field) == ("remote.no_range", "uri"), failed.value.message
    assert "range requests" in failed.value.message
    ranged = [(asked, status) for method, asked, status in served.requests if method == "GET"]
    assert ranged and all(asked and status == 200 for asked, status in ranged)  # ranges asked, whole file sent


def test_a_file_that_is_no_geotiff_on_a_range_server_is_not_mistaken_for_no_ranges(
    serve: ServerFactory, tmp_path: Path
) -> None:
    page = tmp_path.parent / f"{tmp_path.name}-page.html"
    page.write_text("<html>" + "not a raster " * 500 + "</html>")
    served = serve(page)

    with pytest.raises(JobFailed) as failed:
        cog_validate(CogValidateArgs(uri=served.url), remote_ctx(tmp_path, served.host))

    assert (failed.value.code, failed.value.field) == ("remote.failed", "uri"), failed.value.message


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    host = f"127.0.0.1:{free_port()}"  # nothing listens there

    with pytest.raises(JobFailed) as failed:
        raster_preview(RasterPreviewArgs(uri=f"http://{host}/dem.tif"), remote_ctx(tmp_path, host))

    assert (failed.value.code, failed.value.field) == ("remote.unreachable", "uri")


def test_outputs_stay_in_the_workspace(
    cog: Path, serve: ServerFactory, make_vector: VectorFactory, tmp_path: Path
) -> None:
    served = serve(cog)
    make_vector("zones.gpkg")

    with pytest.raises(JobFailed) as refused:
        zonal_stats(
            ZonalStatsArgs(uri=served.url, zones="zones.gpkg", output=f"{served.url}.gpkg"),
            remote_ctx(tmp_path, served.host),
        )

    assert refused.value.field == "output" and not list(tmp_path.rglob("*.gpkg.gpkg"))
    assert served.requests == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://tiles.example.org/a.tif", True),
        ("HTTPS://Tiles.Example.ORG:443/a.tif", True),  # scheme and host are case-insensitive; any port for `host`
        ("http://data.example.net:8080/a.tif", True),
        ("http://data.example.net:8081/a.tif", False),  # `host:port` entries allow that port only
        ("http://tiles.example.org@evil.example.com/a.tif", False),  # user info is not the host
        ("http://evil.example.com/#@tiles.example.org/a.tif", False),
        ("http://tiles.example.org.evil.example.com/a.tif", False),
        ("ftp://tiles.example.org/a.tif", False),
        ("http://tiles.example.org/a b.tif", False),
    ],
)
def test_the_allow_list_matches_hosts_not_strings(url: str, allowed: bool) -> None:
    listed = frozenset({"tiles.example.org", "data.example.net:8080"})
    assert (allowed_host(url, listed) is not None) is allowed


def test_the_allow_list_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEOGATE_REMOTE_HOSTS", "tiles.example.org, 127.0.0.1:9")
    settings = Settings(redis_url="redis://unused")

    remote = raster_input("https://tiles.example.org/dem.tif", [tmp_path], settings)

    assert isinstance(remote, RemoteRaster) and remote.allowed == {"tiles.example.org", "127.0.0.1:9"}
    assert remote.gdal_path == "/vsicurl/https://tiles.example.org/dem.tif" and remote.timeout_s == 30
    assert Settings.defaults().remote_hosts == []  # off by default


SIGNATURE = "f3a9c0d1e2b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
SESSION = "IQoJb3JpZ2luX2VjEJr-secret-session-token"


def _everything_stored(store: EventStore) -> bytes:
    """Every stream entry, hash, string, list and set under the store's prefix, as one blob to search."""
    blob = b""
    for key in store.redis.scan_iter(match=f"{store.keys.prefix}:*"):
        kind = store.redis.type(key)
        if kind == b"stream":
            blob += repr(store.redis.xrange(key)).encode()
        elif kind == b"hash":
            blob += repr(store.redis.hgetall(key)).encode()
        elif kind == b"string":
            blob += store.redis.get(key) or b""
        elif kind == b"list":
            blob += b"".join(store.redis.lrange(key, 0, -1))
        elif kind in (b"set", b"zset"):
            blob += repr(store.redis.zrange(key, 0, -1) if kind == b"zset" else store.redis.smembers(key)).encode()
    return blob


def test_a_presigned_url_reaches_the_server_intact_and_no_stream_projection_or_message_holds_its_secrets(
    cog: Path, serve: ServerFactory, real_store: EventStore, tmp_path: Path
) -> None:
    """Redaction masks `X-Amz-Signature=` and `token=` in every event and queue message; the worker must still
    send them. The call goes the real way: published with its queue message on Redis, run from that message."""
    served = serve(cog)
    query = f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={SIGNATURE}&token={SESSION}&X-Amz-Expires=900"
    url = f"{served.url}?{query}"
    settings = Settings(
        redis_url="redis://unused", prefix=real_store.keys.prefix, workspaces=str(tmp_path), remote_hosts=served.host
    )
    load_all()
    call_id, args = new_id(), TOOLS["raster_info"].args(uri=url).model_dump(mode="json")
    event = request_event(TOOLS["raster_info"], args, call_id=call_id, actor="tester")
    effects = request_effects(event, args, real_store.keys, real_store.dedupe_ttl_s)
    real_store.append(event, keys.requested_key(call_id), effects=effects)
    queue = celery_queue_key(event.payload(ToolRequested).queue)
    queued = real_store.redis.lrange(queue, 0, -1)
    real_store.redis.delete(queue)  # taken, as a worker takes it: the session's Redis serves later tests
    waiting = _everything_stored(real_store)

    runner.run_call(real_store, settings, "host:1", envelope_args(json.loads(queued[0]))[0])

    state = real_store.call_state(call_id)
    assert state is not None and state.status == "succeeded", state
    assert served.paths and all(path == f"/{cog.name}?{query}" for path in served.paths)
    assert event.payload(ToolRequested).held_args == ["uri"]
    for secret in (SIGNATURE, SESSION):
        assert secret.encode() not in b"".join(queued)
        assert waiting.count(secret.encode()) == 1  # the held arguments' hash, and nothing else
        assert secret.encode() not in _everything_stored(real_store)  # the hash went with the outcome
    assert not real_store.redis.exists(real_store.keys.held_args(call_id))
