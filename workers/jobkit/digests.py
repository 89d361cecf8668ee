"""What a job read, for provenance: each input file's sha256 when the job opened it, digested once per version.

`resolve_in_workspace` and `raster_input` note every existing file a job names as an input (`note`); the digest is
taken there, before GDAL opens the file, so it is the content the job read. Digests are kept per process by
(path, size, mtime_ns, inode, ctime_ns): an unchanged input is not hashed again by the next call or the next tile on
this worker, and a file rewritten in place (which moves mtime and ctime) is.
"""

import hashlib
import os
from collections import OrderedDict
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from schemas.events import FileDigest
from workers.jobkit import objects
from workers.jobkit.confine import note_input, noted_inputs, wants_input

CACHE_ENTRIES = 4096
"""How many file versions a process remembers the digest of."""

_Stamp = tuple[str, int, int, int, int]
_DIGESTS: "OrderedDict[_Stamp, str]" = OrderedDict()


def _stamp(path: Path, st: os.stat_result) -> _Stamp:
    return (str(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def sha256_of(path: Path) -> tuple[str, int]:
    """The sha256 of the file at `path` and its size, from the cache when the file is unchanged.

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("rb") as handle:
        st = os.fstat(handle.fileno())
        stamp = _stamp(path, st)
        known = _DIGESTS.get(stamp)
        if known is not None:
            _DIGESTS.move_to_end(stamp)
            return known, st.st_size
        digest = _hash(handle)
    _DIGESTS[stamp] = digest
    while len(_DIGESTS) > CACHE_ENTRIES:
        _DIGESTS.popitem(last=False)
    return digest, st.st_size


def _hash(handle: BinaryIO) -> str:
    """Read in chunks, never memory-mapped: a file cut short while it is mapped would kill the process (SIGBUS)."""
    return hashlib.file_digest(handle, "sha256").hexdigest()


def current_digest(path: str) -> str | None:
    """The sha256 of `path` now, None when it no longer exists or cannot be read (drift checks)."""
    try:
        return sha256_of(Path(path))[0]
    except OSError:
        return None


def note(real: Path, role: str) -> None:
    """Note the existing file `real` (a checked workspace path) as an input of the job, with its digest now.

    Outside a job's confinement, and for a folder or a file noted already, nothing is done.
    """
    if not wants_input(str(real)) or not real.is_file():
        return
    try:
        digest, size = sha256_of(real)
    except OSError:
        return  # unreadable: the open that follows reports it
    note_input(str(real), FileDigest(path=str(real), sha256=digest, size=size, role=role))


def note_object(path: Path, role: str) -> None:
    """Note `path` of an object-storage root (`workers.jobkit.objects`) as an input: its URI, size, and the
    sha256 Geogate recorded when it published it (none for an object written by anything else)."""
    mount, uri = objects.mount_of(path), objects.uri_of(path)
    if mount is None or uri is None or not wants_input(uri):
        return
    head = mount.head(mount.key(path)) or {}
    sha256 = (head.get("Metadata") or {}).get("sha256")
    note_input(uri, FileDigest(path=uri, sha256=sha256, size=head.get("ContentLength"), role=role))


def note_remote(url: str, role: str) -> None:
    """Note a remote input (read by range requests: no digest)."""
    if wants_input(url):
        note_input(url, FileDigest(path=url, role=role))


def inputs_read() -> list[FileDigest]:
    """The inputs noted in the confinement in force, in the order the job named them."""
    return [item for item in noted_inputs() if isinstance(item, FileDigest)]


@cache
def versions() -> dict[str, str]:
    """The software a job runs with, read once per process: Geogate, GDAL, PROJ and the Python bindings."""
    import pyproj
    import rasterio

    found = {"gdal": rasterio.__gdal_version__, "proj": pyproj.proj_version_str}
    for name in ("geogate", "rasterio", "pyogrio", "shapely", "pyproj"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return dict(sorted(found.items()))


def outputs_of(output: object, role: str = "") -> list[FileDigest]:
    """The files a job's result (as JSON) says it wrote: every object with a `file://` (or `s3://`) `uri`, a
    `path`, a `size` and a `sha256` (`schemas.tools.raster.OutputRef`), named by the field that holds it."""
    if isinstance(output, list):
        return [ref for item in output for ref in outputs_of(item, role)]
    if not isinstance(output, dict):
        return []
    path, sha256, size, uri = output.get("path"), output.get("sha256"), output.get("size"), output.get("uri")
    written = isinstance(uri, str) and uri.startswith(("file://", "s3://"))
    if written and isinstance(path, str) and isinstance(sha256, str) and isinstance(size, int):
        return [FileDigest(path=path, sha256=sha256, size=size, role=role)]
    return [ref for key, value in output.items() for ref in outputs_of(value, str(key))]
