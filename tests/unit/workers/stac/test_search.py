"""`stac_search`'s search against a real STAC API (stac-fastapi on pgstac, on a throwaway PostgreSQL cluster) over
the Sentinel-2-like fixture: answers checked against shapely and the fixture's own figures."""

from collections.abc import Iterator

import pytest
import shapely

from geogate.settings import LimitSettings, Settings, StacSettings
from schemas.tools.stac import StacSearchArgs
from tests.stac.catalog import SentinelCatalog, sentinel_catalog
from tests.stac.scenes import BANDS, COLLECTION
from tests.stac.servers import flaky_proxy, redirector
from workers.jobkit.errors import JobFailed
from workers.stac.search import FOOTPRINT_VERTICES, footprint, search

AREA = (16.33, 46.45, 16.42, 46.55)
"""Crosses tiles 0 and 2 (west and south), not tile 1 (east of 16.4073)."""


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelCatalog]:
    with sentinel_catalog(tmp_path_factory.mktemp("stac")) as started:
        yield started


def settings_for(*hosts: str, remote: tuple[str, ...] = (), retries: int = 3, cap: int = 500) -> Settings:
    stac = StacSettings(catalogs=list(hosts), retries=retries, backoff_s=0.01, timeout_s=10)
    return Settings(
        redis_url="redis://unused", stac=stac, remote_hosts=list(remote), limits=LimitSettings(stac_items=cap)
    )


def host(url: str) -> str:
    return url.removeprefix("http://")


def test_bbox_datetime_and_a_cql2_cloud_filter_find_the_scenes_shapely_finds(catalog: SentinelCatalog) -> None:
    args = StacSearchArgs(
        catalog=catalog.api,
        collections=[COLLECTION],
        bbox=list(AREA),
        datetime="2024-06-01/2024-06-10",
        filter={"op": "<", "args": [{"property": "eo:cloud_cover"}, 20]},
    )

    result = search(args, settings_for(host(catalog.api), remote=(catalog.cogs.authority,)))

    box = shapely.box(*AREA)
    expected = {
        s.id for s in catalog.scenes if s.footprint.intersects(box) and "06-05" in s.item["properties"]["datetime"]
    }
    expected = {i for i in expected if next(s for s in catalog.scenes if s.id == i).cloud_cover < 20}
    assert {item.id for item in result.items} == expected and expected
    for item in result.items:
        scene = next(s for s in catalog.scenes if s.id == item.id)
        assert item.cloud_cover == scene.cloud_cover and item.collection == COLLECTION
        assert shapely.geometry.shape(item.footprint).equals_exact(scene.footprint, 1e-6)
        assert set(item.assets) == {*BANDS, "SCL"} and item.assets["SCL"].roles == ["data", "classification"]
        assert item.assets["B04"].href == f"{catalog.cogs.url}/{item.id}/B04.tif"
    assert (result.more, result.retries, result.failed, result.unreadable_hosts) == (False, 0, [], [])


def test_a_text_filter_and_a_query_agree(catalog: SentinelCatalog) -> None:
    settings = settings_for(host(catalog.api))
    text = search(StacSearchArgs(catalog=catalog.api, filter="eo:cloud_cover >= 20"), settings)
    query = search(StacSearchArgs(catalog=catalog.api, query={"eo:cloud_cover": {"gte": 20}}), settings)

    expected = {s.id for s in catalog.scenes if s.cloud_cover >= 20}
    assert {i.id for i in text.items} == {i.id for i in query.items} == expected


def test_a_limit_pages_through_the_sorted_results_and_says_there_are_more(catalog: SentinelCatalog) -> None:
    args = StacSearchArgs(catalog=catalog.api, sortby=["-eo:cloud_cover"], limit=5, page_size=2)

    result = search(args, settings_for(host(catalog.api)))

    expected = [s.id for s in sorted(catalog.scenes, key=lambda s: -s.cloud_cover)][:5]
    assert [item.id for item in result.items] == expected
    assert (result.pages, result.more) == (3, True)


def test_asset_hosts_outside_the_remote_hosts_are_named(catalog: SentinelCatalog) -> None:
    result = search(StacSearchArgs(catalog=catalog.api, limit=1), settings_for(host(catalog.api)))

    assert result.unreadable_hosts == [catalog.cogs.url]


def test_a_limit_over_the_cap_is_refused_naming_the_setting(catalog: SentinelCatalog) -> None:
    with pytest.raises(JobFailed) as failed:
        search(StacSearchArgs(catalog=catalog.api, limit=11), settings_for(host(catalog.api), cap=10))

    assert (failed.value.code, failed.value.field) == ("limit.stac_items", "limit")
    assert "GEOGATE_LIMIT_STAC_ITEMS" in failed.value.message


def test_a_catalog_off_the_list_is_refused_before_any_request(catalog: SentinelCatalog) -> None:
    with flaky_proxy(catalog.api, failures=0) as proxy, pytest.raises(JobFailed) as failed:
        search(StacSearchArgs(catalog=proxy.url), settings_for(host(catalog.api)))

    assert (failed.value.code, failed.value.field) == ("stac.not_allowed", "catalog")
    assert "GEOGATE_STAC_CATALOGS" in failed.value.message
    assert proxy.passed == proxy.failed == []


def test_a_catalog_answering_503_twice_still_answers_after_retries(catalog: SentinelCatalog) -> None:
    with flaky_proxy(catalog.api, failures=2) as proxy:
        result = search(StacSearchArgs(catalog=proxy.url, limit=3), settings_for(proxy.authority))

    assert len(proxy.failed) == 2 and result.retries == 2
    assert len(result.items) == 3 and result.failed == []


def test_a_catalog_still_failing_is_an_error_naming_the_request_and_its_attempts(catalog: SentinelCatalog) -> None:
    with flaky_proxy(catalog.api, failures=100) as proxy, pytest.raises(JobFailed) as failed:
        search(StacSearchArgs(catalog=proxy.url), settings_for(proxy.authority, retries=2))

    assert (failed.value.code, failed.value.retryable) == ("stac.unavailable", True)
    assert proxy.url in failed.value.message and "3 attempts" in failed.value.message
    reason = '{"detail": "try again"}'
    assert failed.value.details == {"failed": [{"url": proxy.url, "status": 503, "attempts": 3, "reason": reason}]}
    assert len(proxy.failed) == 3


def test_a_page_that_still_fails_ends_the_search_with_the_pages_read_and_the_failure_named(
    catalog: SentinelCatalog,
) -> None:
    with flaky_proxy(catalog.api, failures=0, fail_from=3) as proxy:  # pystac-client reads the landing page twice
        args = StacSearchArgs(catalog=proxy.url, limit=6, page_size=2)
        result = search(args, settings_for(proxy.authority, retries=1))

    assert len(result.items) == 2 and result.more
    assert [(f.status, f.attempts) for f in result.failed] == [(503, 2)]
    assert result.failed[0].url == f"{proxy.url}/search" and len(proxy.failed) == 2


def test_a_next_link_to_a_host_off_the_list_is_refused(catalog: SentinelCatalog) -> None:
    with flaky_proxy(catalog.api, failures=0, own_links=False) as proxy, pytest.raises(JobFailed) as failed:
        search(StacSearchArgs(catalog=proxy.url, limit=4, page_size=2), settings_for(proxy.authority))

    assert failed.value.code == "stac.not_allowed" and host(catalog.api) in failed.value.message


def test_a_redirect_to_a_host_off_the_list_is_refused_before_it_is_followed(catalog: SentinelCatalog) -> None:
    with (
        flaky_proxy(catalog.api, failures=0) as elsewhere,
        redirector(elsewhere.url) as listed,
        pytest.raises(JobFailed) as failed,
    ):
        search(StacSearchArgs(catalog=listed.url), settings_for(listed.authority))

    assert failed.value.code == "stac.not_allowed" and elsewhere.authority in failed.value.message
    assert listed.requests == ["/"] and elsewhere.passed == elsewhere.failed == []


def test_a_detailed_footprint_is_simplified_within_its_vertex_budget() -> None:
    circle = shapely.Point(16.4, 46.5).buffer(0.1, quad_segs=128)

    simplified = shapely.geometry.shape(footprint(shapely.geometry.mapping(circle)))

    assert shapely.get_num_coordinates(simplified) <= FOOTPRINT_VERTICES
    assert simplified.hausdorff_distance(circle) < 0.002
