"""Object-storage workspace roots inside a job: each `s3://bucket/prefix` root of `GEOGATE_WORKSPACES` stands in
`ctx.roots` as a folder of the job's own (its mirror), so every tool resolves, checks and writes paths as it does
for a folder, and the few places that touch the bytes ask this module what is different:

- an input is looked up with a HEAD request; a GeoTIFF (`.tif`, `.tiff`) is read where it is, by range requests
  through GDAL's `/vsis3/` (`gdal_env`: credentials as GDAL config options for the block, never in `os.environ`);
  anything else is fetched (with the files of its stem beside it: a Shapefile's `.dbf`) into the mirror;
- an output is written in the mirror as in a folder (`workers.jobkit.files.atomic_output`) and then published by a
  multipart upload completed last (`workers.jobkit.uploads`): the object appears whole or not at all;
- the mirror is removed when the job ends.

The client is boto3: the same client moto, the tests' stand-in store, is built on; it exposes the multipart steps
(create, parts, complete with `If-None-Match`, abort) that a publish needs one by one, and rasterio's `AWSSession`
takes its session for GDAL.
"""

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from geogate.objects import SCHEME, ObjectRoot, ObjectStoreSettings, object_store_settings, split_workspaces
from workers.jobkit.errors import JobFailed

RANGE_READ = frozenset({".tif", ".tiff"})
"""Inputs read where they are, through `/vsis3/` (as GeoTIFF only: a VRT could name files anywhere)."""


@dataclass
class Mount:
    """One object root in one job: where its mirror is, and what the job learnt of its objects."""

    root: ObjectRoot
    local: Path
    client: Any
    settings: ObjectStoreSettings
    heads: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """HEAD answers by key (None: no such object), so a job asks once per key."""
    overwrite: dict[Path, bool] = field(default_factory=dict)
    """The outputs `output_path` let through, and whether each may replace an object."""
    sizes: dict[str, int] = field(default_factory=dict)
    """Object sizes by key, as a listing (`walk`) gave them."""

    def key(self, path: Path) -> str:
        return self.root.key(PurePosixPath(path.relative_to(self.local).as_posix()))

    def head(self, key: str) -> dict[str, Any] | None:
        if key not in self.heads:
            self.heads[key] = _head(self.client, self.root.bucket, key)
        return self.heads[key]


_MOUNTS: ContextVar[tuple[Mount, ...]] = ContextVar("geogate_object_mounts", default=())
_TOUCHED: ContextVar[list[bool] | None] = ContextVar("geogate_object_touched", default=None)


def client(settings: ObjectStoreSettings) -> Any:
    """A boto3 S3 client on the configured endpoint, region and credentials (path-style addressing)."""
    import boto3
    from botocore.config import Config

    found = settings.credentials()
    keys = {"aws_access_key_id": found[0], "aws_secret_access_key": found[1]} if found else {}
    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"})
    return boto3.client("s3", endpoint_url=settings.endpoint_url, region_name=settings.region, config=config, **keys)


def store_client(bucket: str) -> Any:
    """A client of the store for `bucket`: the job's own when one of its roots is there, else a new one."""
    mount = next((m for m in _MOUNTS.get() if m.root.bucket == bucket), None)
    return mount.client if mount is not None else client(object_store_settings())


@contextlib.contextmanager
def mounted(workspaces: str, folders: list[Path]) -> Iterator[list[Path]]:
    """The job's roots for `GEOGATE_WORKSPACES` (`workspaces`) in its order: the resolved `folders`, and a fresh
    mirror folder for each `s3://` root, removed after the block. Without `s3://` roots, `folders` as they are."""
    objects = [e for e in split_workspaces(workspaces) if isinstance(e, ObjectRoot)]
    if not objects:
        yield folders
        return
    scratch = Path(tempfile.mkdtemp(prefix="geogate-s3-")).resolve()
    settings = object_store_settings()
    mounts = tuple(_mount(scratch, root, settings) for root in objects)
    tokens = (_MOUNTS.set(mounts), _TOUCHED.set([]))
    try:
        yield _ordered(workspaces, folders, mounts)
    finally:
        _MOUNTS.reset(tokens[0])
        _TOUCHED.reset(tokens[1])
        shutil.rmtree(scratch, ignore_errors=True)


def _mount(scratch: Path, root: ObjectRoot, settings: ObjectStoreSettings) -> Mount:
    local = scratch / root.bucket / root.prefix if root.prefix else scratch / root.bucket
    local.mkdir(parents=True, exist_ok=True)
    return Mount(root, local, client(settings), settings)


def _ordered(workspaces: str, folders: list[Path], mounts: tuple[Mount, ...]) -> list[Path]:
    by_root = {m.root: m.local for m in mounts}
    ordered: list[Path] = []
    for entry in split_workspaces(workspaces):
        path = by_root[entry] if isinstance(entry, ObjectRoot) else Path(entry).expanduser().resolve()
        if path not in ordered and (isinstance(entry, ObjectRoot) or path in folders):
            ordered.append(path)
    return ordered


def mount_of(path: Path) -> Mount | None:
    """The object root whose mirror holds `path`, None for a path of a folder root (or outside a job)."""
    mount = next((m for m in _MOUNTS.get() if path == m.local or path.is_relative_to(m.local)), None)
    marks = _TOUCHED.get()
    if mount is not None and marks is not None and not marks:
        marks.append(True)
    return mount


def touched() -> bool:
    """Whether this job has looked at a path in an object root (a tool whose tiles need a parts folder every worker
    reaches then runs whole: `workers.tiling.grid.worth_tiling`)."""
    return bool(_TOUCHED.get())


def local_name(uri: str, field: str) -> str:
    """The mirror path of `s3://bucket/key` (to be checked as any path is), when an object root holds it.

    Raises:
        JobFailed: `path.outside_workspace`: another bucket, or a key outside every root's prefix.
    """
    bucket, _, key = uri.removeprefix(SCHEME).partition("/")
    for mount in _MOUNTS.get():
        prefix = mount.root.prefix
        if mount.root.bucket == bucket and (not prefix or key == prefix or key.startswith(prefix + "/")):
            return str(mount.local / key.removeprefix(prefix).lstrip("/"))
    shown = ", ".join(m.root.uri for m in _MOUNTS.get()) or "none"
    message = f"{field}: {uri!r} is outside the object-storage workspace roots ({shown})"
    raise JobFailed("path.outside_workspace", message, field=field)


def readable(path: str) -> str:
    """Where a job opens a file it wrote and names by `path` (an `OutputRef.path`): an `s3://` object of this job's
    roots in its mirror, where the output stays until the job ends; any other path as it is."""
    if not path.startswith(SCHEME) or not _MOUNTS.get():
        return path
    try:
        return local_name(path, "output")
    except JobFailed:
        return path


def uri_of(path: Path) -> str | None:
    """`s3://bucket/key` of a mirror path, None for any other path."""
    mount = mount_of(path)
    return None if mount is None else f"{SCHEME}{mount.root.bucket}/{mount.key(path)}"


def shown(path: object) -> str:
    """How a user knows `path` (a `Path`, or a remote raster): its `s3://` URI in an object root, else as it is."""
    return (uri_of(path) if isinstance(path, Path) else None) or str(path)


def exists(path: Path) -> bool:
    """Whether `path` exists: in the mirror, or as an object (a HEAD request, once per job and key)."""
    mount = mount_of(path)
    if mount is None or path.exists():
        return path.exists()
    return mount.head(mount.key(path)) is not None or is_folder(path)


def is_folder(path: Path) -> bool:
    """Whether `path` is a folder: in the mirror, or a prefix some object's key starts with (`path/`)."""
    mount = mount_of(path)
    if mount is None or path.is_dir():
        return path.is_dir()
    folder = mount.key(path)
    with storage_errors("uri"):
        found = mount.client.list_objects_v2(Bucket=mount.root.bucket, Prefix=f"{folder}/" if folder else "", MaxKeys=1)
    return bool(found.get("KeyCount"))


def size(path: Path) -> int:
    """The size of file `path`: in the mirror, else of its object (as listed, else by a HEAD request)."""
    mount = mount_of(path)
    if mount is None or path.exists():
        return path.stat().st_size
    key = mount.key(path)
    return mount.sizes[key] if key in mount.sizes else int((mount.head(key) or {}).get("ContentLength", 0))


def walk(start: Path, include_hidden: bool) -> Iterator[Path]:
    """The objects under mirror folder `start`, as mirror paths in key order, skipping names (of folders or
    files) that start with `.` unless asked."""
    mount = mount_of(start)
    assert mount is not None
    prefix = mount.key(start)
    pages = mount.client.get_paginator("list_objects_v2").paginate(
        Bucket=mount.root.bucket, Prefix=f"{prefix}/" if prefix else ""
    )
    with storage_errors("subpath"):
        for page in pages:
            for item in page.get("Contents", []):
                relative = PurePosixPath(item["Key"].removeprefix(mount.root.prefix).lstrip("/"))
                if item["Key"].endswith("/") or not (
                    include_hidden or not any(p.startswith(".") for p in relative.parts)
                ):
                    continue
                mount.sizes[item["Key"]] = int(item["Size"])
                yield mount.local / relative


def remote(path: Path) -> bool:
    """Whether `path` is an object not fetched into the mirror (read by range requests)."""
    return mount_of(path) is not None and not path.exists() and exists(path)


def fetch(path: Path, field: str) -> None:
    """Download object `path`, with the objects of its stem beside it (`x.shp` brings `x.dbf`, `x.prj`), into
    the mirror, unless it is there already.

    Raises:
        JobFailed: `path.not_found` (no such object), `storage.failed` (the store refused or failed).
    """
    mount = mount_of(path)
    if mount is None or path.exists():
        return
    if mount.head(mount.key(path)) is None:
        raise JobFailed("path.not_found", f"{field}: {shown(path)!r} does not exist", field=field)
    stem = path.name.split(".", 1)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    with storage_errors(field):
        for key in _keys_with_prefix(mount, mount.key(path.with_name(stem))):
            name = PurePosixPath(key).name
            if name == path.name or (name.startswith(stem) and name[len(stem) : len(stem) + 1] in (".", "_")):
                mount.client.download_file(mount.root.bucket, key, str(path.with_name(name)))


def _keys_with_prefix(mount: Mount, prefix: str) -> Iterator[str]:
    pages = mount.client.get_paginator("list_objects_v2").paginate(Bucket=mount.root.bucket, Prefix=prefix)
    for page in pages:
        for item in page.get("Contents", []):
            if "/" not in item["Key"].removeprefix(prefix):
                yield item["Key"]


def gdal_name(path: Path) -> str:
    """The `/vsis3/` name GDAL reads object `path` by."""
    mount = mount_of(path)
    assert mount is not None
    return f"/vsis3/{mount.root.bucket}/{mount.key(path)}"


def gdal_env(path: Path) -> tuple[dict[str, Any], str]:
    """`rasterio.Env` keywords for reading object `path`: an `AWSSession` (credentials as GDAL config options, for
    the block only), the endpoint, no directory listing, and no cache across jobs (an object may be replaced); and
    the `host:port` GDAL will ask (the endpoint's, else AWS's for the region)."""
    from rasterio.session import AWSSession

    mount = mount_of(path)
    assert mount is not None
    found = mount.settings.credentials()
    keys = {"aws_access_key_id": found[0], "aws_secret_access_key": found[1]} if found else {}
    endpoint = urlsplit(mount.settings.endpoint_url or f"https://s3.{mount.settings.region}.amazonaws.com")
    env: dict[str, Any] = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR", "AWS_VIRTUAL_HOSTING": "FALSE"}
    env |= {"CPL_VSIL_CURL_NON_CACHED": f"/vsis3/{mount.root.bucket}/", "AWS_HTTPS": "NO"}
    if endpoint.scheme == "https":
        env["AWS_HTTPS"] = "YES"
    session = AWSSession(region_name=mount.settings.region, endpoint_url=endpoint.netloc, **keys)
    return env | {"session": session}, endpoint.netloc.lower()


@contextlib.contextmanager
def storage_errors(field: str) -> Iterator[None]:
    """Turn the store's errors inside the block into `JobFailed` naming `field`, with the store's error code and
    never a credential.

    Raises:
        JobFailed: `storage.failed` (retryable when the store could not be reached or answered 5xx).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = f"{field}: the object store refused the request ({error.get('Code', status)})"
        raise JobFailed("storage.failed", message, field=field, retryable=status >= 500) from exc
    except BotoCoreError as exc:
        message = f"{field}: the object store could not be reached ({type(exc).__name__})"
        raise JobFailed("storage.failed", message, field=field, retryable=True) from exc


def _head(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        with storage_errors("uri"):
            return s3.head_object(Bucket=bucket, Key=key)
    except JobFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, ClientError) and cause.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
            return None
        raise


def take_input(path: Path, field: str) -> bool:
    """For an input in an object root: fetch it into the mirror unless it is read by range requests
    (`RANGE_READ`) or is a folder; True then. False for a path of a folder root.

    Raises:
        JobFailed: as `fetch`.
    """
    if mount_of(path) is None:
        return False
    if path.suffix.lower() not in RANGE_READ and not is_folder(path):
        fetch(path, field)
    return True


def ensure_local(path: Path, field: str) -> None:
    """Fetch object `path` into the mirror before something opens it by name (a range-read input that a tool
    opens as a file after all); outputs and paths of folder roots are left alone.

    Raises:
        JobFailed: as `fetch`.
    """
    mount = mount_of(path)
    if mount is not None and path not in mount.overwrite and remote(path):
        fetch(path, field)
