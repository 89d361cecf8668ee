"""The parts of a tiled call whose output is in an object root: objects under the call's prefix,
`s3://bucket/prefix/.geogate/tiles/<call>/`, instead of files in a parts folder every worker reaches.

Each part is put whole by one request (S3 shows an object whole or not at all), under a name derived from its tile,
so a tile run again replaces its own part with the same bytes. The fan-in gets them, the call's end removes the
prefix, and the worker node's retention pass removes what an ended call left there (`workers.tiling.leftovers`).
Parts are NumPy arrays (`.npy`, read with `allow_pickle=False`: nothing in them runs), checked against the window
and dtype the plan gave before they are used.
"""

import io
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from geogate.objects import SCHEME, ObjectRoot, object_store_settings
from workers.jobkit import objects
from workers.jobkit.errors import JobFailed


def is_object(name: str) -> bool:
    """Whether `name` (a plan's staging or parts folder) is an `s3://` URI rather than a local path."""
    return name.startswith(SCHEME)


def folder_uri(folder: Path) -> str | None:
    """The `s3://` URI of a parts folder made in an object root's mirror, None for a folder root's."""
    return objects.uri_of(folder)


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix(SCHEME).partition("/")
    return bucket, key


def put_array(uri: str, array: np.ndarray) -> None:
    """Put `array` whole as object `uri` (replacing what a former run of the same tile put).

    Raises:
        JobFailed: `storage.failed`.
    """
    body = io.BytesIO()
    np.save(body, np.ascontiguousarray(array), allow_pickle=False)
    put_bytes(uri, body.getvalue())


def put_bytes(uri: str, body: bytes) -> None:
    """Put `body` whole as object `uri`.

    Raises:
        JobFailed: `storage.failed`.
    """
    bucket, key = _split(uri)
    with objects.storage_errors("output"):
        objects.store_client(bucket).put_object(Bucket=bucket, Key=key, Body=body)


def get_bytes(uri: str) -> bytes | None:
    """The bytes of object `uri`, None when there is no such object.

    Raises:
        JobFailed: `storage.failed`.
    """
    bucket, key = _split(uri)
    try:
        with objects.storage_errors("output"):
            return objects.store_client(bucket).get_object(Bucket=bucket, Key=key)["Body"].read()
    except JobFailed as exc:
        if exc.__cause__ is not None and _missing(exc.__cause__):
            return None
        raise


def get_array(uri: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Object `uri` as an array of `shape` and `dtype`.

    Raises:
        JobFailed: `tiles.missing` (no such part), `tiles.invalid_part` (not such an array), `storage.failed`.
    """
    body = get_bytes(uri)
    if body is None:
        raise JobFailed("tiles.missing", f"the part {uri!r} of a tile is missing")
    try:
        array = np.load(io.BytesIO(body), allow_pickle=False)
    except ValueError as exc:
        raise JobFailed("tiles.invalid_part", f"the part {uri!r} of a tile is not an array") from exc
    if array.shape != shape or array.dtype != np.dtype(dtype):
        message = f"the part {uri!r} of a tile is {array.dtype}{array.shape}, not {dtype}{shape}"
        raise JobFailed("tiles.invalid_part", message)
    return array


def _missing(cause: BaseException) -> bool:
    response = getattr(cause, "response", None) or {}
    return response.get("Error", {}).get("Code") in ("404", "NoSuchKey")


def _listed(store: Any, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    for page in store.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        yield from page.get("Contents", [])


def remove(uri: str) -> None:
    """Remove every object under folder `uri` (`s3://bucket/…/.geogate/tiles/<call>`); nothing there is fine.

    Raises:
        JobFailed: `storage.failed`.
    """
    bucket, key = _split(uri)
    store = objects.store_client(bucket)
    with objects.storage_errors("output"):
        found = [{"Key": item["Key"]} for item in _listed(store, bucket, key.rstrip("/") + "/")]
        for start in range(0, len(found), 1000):  # DeleteObjects takes at most 1,000 keys
            store.delete_objects(Bucket=bucket, Delete={"Objects": found[start : start + 1000], "Quiet": True})


def call_folders(root: ObjectRoot, parts: Path) -> dict[str, datetime]:
    """The parts folders of tiled calls under object root `root` (`parts`: the folder below a root, `.geogate/
    tiles`): their `s3://` URIs with the time of their newest object."""
    prefix = root.key(PurePosixPath(parts.as_posix())) + "/"
    store = objects.client(object_store_settings())
    newest: dict[str, datetime] = {}
    with objects.storage_errors("workspace"):
        for item in _listed(store, root.bucket, prefix):
            call = item["Key"].removeprefix(prefix).split("/", 1)[0]
            folder = f"{SCHEME}{root.bucket}/{prefix}{call}"
            newest[folder] = max(newest.get(folder, item["LastModified"]), item["LastModified"])
    return newest
