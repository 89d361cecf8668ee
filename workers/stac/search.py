"""`stac_search`: an item search on an allowed STAC API through pystac-client, paged up to a limit and a cap, each
item summarised (id, datetime, cloud cover, bbox, footprint, assets).

A page that still fails after its retries ends the search: the items read so far are returned with the failed
request named in `failed` (and `more` set); a failure before any page is an error naming the request.
"""

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pystac
import shapely
from pystac_client import Client
from pystac_client.errors import ClientTypeError
from pystac_client.warnings import DoesNotConformTo, PystacClientWarning

from geogate.settings import Settings
from schemas.tools.limits import STAC_ITEMS
from schemas.tools.stac import StacAsset, StacFailure, StacItem, StacSearchArgs, StacSearchResult
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import allowed_host
from workers.jobkit.limits import exceeded
from workers.stac.io import Failure, GuardedStacIO, HostRefused, RequestFailed, host_of

FOOTPRINT_VERTICES = 64
"""A footprint with more vertices is simplified until it has at most this many."""
DEFAULT_PAGE_SIZE = 100


def search(args: StacSearchArgs, settings: Settings) -> StacSearchResult:
    """Search `args.catalog` and summarise up to `args.limit` items.

    Raises:
        JobFailed: `stac.not_allowed` (the catalog, a page link or a redirect is on a host not listed),
            `limit.stac_items`, `stac.unavailable` (the first requests still failing, retryable),
            `stac.refused` (the API refused the search: a 4xx), `stac.not_a_catalog`, `stac.no_item_search`.
    """
    allowed = frozenset(h.lower() for h in settings.stac.catalogs)
    _check_catalog(args.catalog, allowed)
    if args.limit > settings.limits.stac_items:
        raise exceeded(STAC_ITEMS, "limit", f"{args.limit} items asked", settings)
    io = GuardedStacIO(allowed, settings.stac)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PystacClientWarning)
            return _search(args, io, frozenset(h.lower() for h in settings.remote_hosts))
    except HostRefused as exc:
        raise _refused(exc.url) from exc
    except pystac.STACError as exc:  # pystac wraps what the guard raised while it follows the catalog's own links
        if io.refused is None:
            raise JobFailed("stac.not_a_catalog", f"catalog: {args.catalog}: {exc}", field="catalog") from exc
        raise _refused(io.refused) from exc
    except RequestFailed as exc:
        raise _failed(exc.failure) from exc


def _refused(url: str) -> JobFailed:
    message = f"catalog: {url!r} is on a host not in GEOGATE_STAC_CATALOGS; nothing was sent there"
    return JobFailed("stac.not_allowed", message, field="catalog")


def _check_catalog(catalog: str, allowed: frozenset[str]) -> None:
    if not allowed:
        message = "catalog: STAC search is off (no GEOGATE_STAC_CATALOGS configured)"
        raise JobFailed("stac.not_allowed", message, field="catalog")
    if allowed_host(catalog, allowed) is None:
        listed = ", ".join(sorted(allowed))
        message = f"catalog: the host of {catalog!r} is not in GEOGATE_STAC_CATALOGS ({listed})"
        raise JobFailed("stac.not_allowed", message, field="catalog")


def _search(args: StacSearchArgs, io: GuardedStacIO, readable: frozenset[str]) -> StacSearchResult:
    client = _open(args.catalog, io)
    try:
        found = client.search(
            max_items=args.limit + 1,  # one past the limit tells whether there are more
            limit=args.page_size or min(args.limit + 1, DEFAULT_PAGE_SIZE),
            collections=args.collections,
            ids=args.ids,
            bbox=args.bbox,
            intersects=args.intersects,
            datetime=args.datetime,
            filter=args.filter,
            query=args.query,
            sortby=args.sortby,
        )
    except DoesNotConformTo as exc:
        raise JobFailed(
            "stac.no_item_search", f"catalog: {args.catalog} does not offer {exc}", field="catalog"
        ) from exc
    features, pages, matched, failed = _collect(found.pages_as_dicts())
    items = [summarise(feature) for feature in features[: args.limit]]
    return StacSearchResult(
        catalog=args.catalog,
        items=items,
        matched=matched,
        more=len(features) > args.limit or bool(failed) or (matched is not None and matched > len(items)),
        pages=pages,
        retries=io.retries,
        failed=[StacFailure(**vars(f)) for f in failed],
        unreadable_hosts=_unreadable(items, readable),
    )


def _open(catalog: str, io: GuardedStacIO) -> Client:
    try:
        return Client.open(catalog, stac_io=io)
    except (ValueError, KeyError, TypeError, ClientTypeError, pystac.STACError) as exc:
        if io.refused is not None:
            raise HostRefused(io.refused) from exc
        message = f"catalog: {catalog} did not answer with a STAC API landing page ({type(exc).__name__})"
        raise JobFailed("stac.not_a_catalog", message, field="catalog") from exc


def _collect(pages: Iterator[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int | None, list[Failure]]:
    """The features of every page until the end, the limit or a page that still fails (named, after the first)."""
    features: list[dict[str, Any]] = []
    read, matched = 0, None
    while True:
        try:
            page = next(pages)
        except StopIteration:
            return features, read, matched, []
        except RequestFailed as exc:
            if read == 0:
                raise
            return features, read, matched, [exc.failure]
        read += 1
        features.extend(f for f in page.get("features", []) if isinstance(f, dict))
        if matched is None:
            matched = _matched(page)


def _matched(page: dict[str, Any]) -> int | None:
    found = page.get("numberMatched", (page.get("context") or {}).get("matched"))
    return found if isinstance(found, int) else None


def summarise(feature: dict[str, Any]) -> StacItem:
    """One item as the result shows it: the properties a search is judged by, the footprint, the assets."""
    props = feature.get("properties") or {}
    assets = {
        str(key): StacAsset(
            href=str(asset.get("href", "")), type=asset.get("type"), roles=list(asset.get("roles") or [])
        )
        for key, asset in (feature.get("assets") or {}).items()
        if isinstance(asset, dict)
    }
    cloud = props.get("eo:cloud_cover")
    return StacItem(
        id=str(feature.get("id", "")),
        collection=feature.get("collection"),
        datetime=props.get("datetime") or props.get("start_datetime"),
        cloud_cover=float(cloud) if isinstance(cloud, int | float) else None,
        bbox=[round(float(v), 6) for v in feature["bbox"]] if feature.get("bbox") else None,
        footprint=footprint(feature.get("geometry")),
        assets=assets,
    )


def footprint(geometry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The geometry rounded to 6 decimals (about 0.1 m), simplified until it has at most `FOOTPRINT_VERTICES`."""
    if not geometry:
        return None
    shape = shapely.geometry.shape(geometry)
    shape = shapely.transform(shape, lambda xy: np.round(xy, 6))
    tolerance = max(shape.bounds[2] - shape.bounds[0], shape.bounds[3] - shape.bounds[1], 1e-6) / 1000
    while shapely.get_num_coordinates(shape) > FOOTPRINT_VERTICES:
        shape = shapely.simplify(shape, tolerance, preserve_topology=True)
        tolerance *= 2
    return shapely.geometry.mapping(shape)


def _unreadable(items: list[StacItem], readable: frozenset[str]) -> list[str]:
    hosts = {host_of(a.href) for item in items for a in item.assets.values() if allowed_host(a.href, readable) is None}
    return sorted(hosts)


def _failed(failure: Failure) -> JobFailed:
    said = f"{failure.status}" if failure.status is not None else "no answer"
    tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
    details = {"failed": [vars(failure)]}
    if failure.transient:
        message = f"catalog: {failure.url} still failed{tries} ({said}): {failure.reason}"
        return JobFailed("stac.unavailable", message, retryable=True, field="catalog", details=details)
    message = f"the catalog refused {failure.url} ({said}): {failure.reason}"
    return JobFailed("stac.refused", message, details=details)
