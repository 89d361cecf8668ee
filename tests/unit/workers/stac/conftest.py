"""The STAC API the composite and series tests share: stac-fastapi on pgstac over the Sentinel-2-like fixture
(`tests.stac.catalog`), started once for the package (`test_search.py` starts its own)."""

from collections.abc import Iterator

import pytest

from tests.stac.catalog import SentinelCatalog, sentinel_catalog


@pytest.fixture(scope="package")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelCatalog]:
    with sentinel_catalog(tmp_path_factory.mktemp("stac")) as started:
        yield started
