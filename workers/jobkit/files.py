"""Workspace scoping and atomic outputs: every path a job touches is checked here."""

import contextlib
import ctypes
import glob
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from geogate.objects import SCHEME
from workers.jobkit import digests, objects, uploads
from workers.jobkit.confine import current_reserved
from workers.jobkit.errors import JobFailed

if TYPE_CHECKING:
    from geogate.settings import Settings
    from workers.jobkit.context import Fence


def resolve_in_workspace(uri: str, roots: list[Path], *, field: str = "uri", must_exist: bool = True) -> Path:
    """The real path of `uri` inside one of `roots`.

    Relative paths are taken against each root in turn (the first that has the file wins; for a new file,
    the first root). `..` components, absolute paths outside every root, symlinks that resolve outside and,
    inside a job's confinement, paths in its reserved folders (Geogate's own state) are refused.

    Raises:
        JobFailed: `path.outside_workspace`, `path.not_found` or `path.invalid`, naming `field`.
    """
    if not roots:
        raise JobFailed("path.outside_workspace", "no workspace roots are configured (GEOGATE_WORKSPACES)", field=field)
    raw = objects.local_name(uri, field) if uri.startswith(SCHEME) else uri.removeprefix("file://")
    if "\0" in raw or not raw.strip():
        raise JobFailed("path.invalid", f"{field}: not a usable path", field=field)
    if ".." in PurePath(raw).parts:
        raise JobFailed("path.outside_workspace", f"{field}: '..' is not allowed in workspace paths", field=field)
    candidates = [Path(raw)] if Path(raw).is_absolute() else [root / raw for root in roots]
    try:
        real = _first_inside(candidates, roots, must_exist, uri, field)
    except OSError as exc:  # a name too long, a loop of links: found by fuzzing (issue 14)
        raise JobFailed("path.invalid", f"{field}: not a usable path ({exc.strerror})", field=field) from exc
    if any(real == folder or real.is_relative_to(folder) for folder in current_reserved()):
        raise JobFailed(
            "path.outside_workspace",
            f"{field}: {uri!r} is inside Geogate's own state (its data directory or a root's .geogate folder), "
            "which tools may not read or write",
            field=field,
        )
    if must_exist and objects.take_input(real, field):  # an object: fetched unless read by range requests
        digests.note_object(real, field)
    elif must_exist:
        digests.note(real, field)  # an input: its digest as the job reads it (provenance)
    return real


@dataclass(frozen=True)
class RemoteRaster:
    """An allowed `http(s)://` raster, read by HTTP range requests through GDAL's `/vsicurl/` (never written)."""

    url: str
    allowed: frozenset[str]
    """The allow-list it was checked against (`name` or `name:port` entries): redirects are checked against it."""
    timeout_s: int = 30
    max_retry: int = 2

    @property
    def gdal_path(self) -> str:
        return f"/vsicurl/{self.url}"

    @property
    def name(self) -> str:
        return self.url

    def __str__(self) -> str:
        return self.url

    def gdal_env(self) -> dict[str, str | int]:
        """GDAL options of a read: bounded waits and retries, no directory listing or sidecar probes."""
        return {
            "GDAL_HTTP_TIMEOUT": self.timeout_s,
            "GDAL_HTTP_CONNECTTIMEOUT": max(1, self.timeout_s // 3),
            "GDAL_HTTP_MAX_RETRY": self.max_retry,
            "GDAL_HTTP_RETRY_DELAY": 1,
            "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
            "GDAL_HTTP_MULTIPLEX": "NO",
        }


def allowed_host(url: str, allowed: frozenset[str]) -> str | None:
    """The `host` or `host:port` of `url` when `allowed` lists it (an http(s) URL without spaces), else None."""
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host or any(c in url for c in " \0\n\r\t"):
        return None
    for entry in (f"{host}:{port}", host):
        if entry in allowed:
            return entry
    return None


def raster_input(
    uri: str, roots: list[Path], settings: "Settings | None", *, field: str = "uri"
) -> "Path | RemoteRaster":
    """Where a tool reads a raster from: an `http(s)://` URL on an allowed host (`Settings.remote_hosts`), checked
    here before anything is requested, or a workspace path (`resolve_in_workspace`). Either is noted as an input.

    Raises:
        JobFailed: `remote.not_allowed` (remote reads are off, or the host is not listed), or what
            `resolve_in_workspace` raises.
    """
    scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
    if scheme not in ("http", "https"):
        return resolve_in_workspace(uri, roots, field=field)
    allowed = frozenset(h.lower() for h in settings.remote_hosts) if settings is not None else frozenset()
    if not allowed:
        raise JobFailed(
            "remote.not_allowed", f"{field}: remote reads are off (no GEOGATE_REMOTE_HOSTS configured)", field=field
        )
    if allowed_host(uri, allowed) is None:
        raise JobFailed(
            "remote.not_allowed",
            f"{field}: the host of {uri!r} is not in GEOGATE_REMOTE_HOSTS ({', '.join(sorted(allowed))})",
            field=field,
        )
    digests.note_remote(uri, field)
    if settings is None:
        return RemoteRaster(uri, allowed)
    return RemoteRaster(uri, allowed, settings.remote_timeout_s, settings.remote_max_retry)


def _first_inside(candidates: list[Path], roots: list[Path], must_exist: bool, uri: str, field: str) -> Path:
    for candidate in candidates:
        real = candidate.resolve()
        if not _inside(real, roots):
            continue
        if not must_exist or objects.exists(real):
            return real
    shown = ", ".join(objects.shown(r) for r in roots)
    if any(_inside(c.resolve(), roots) for c in candidates):
        raise JobFailed("path.not_found", f"{field}: {uri!r} does not exist in the workspace ({shown})", field=field)
    raise JobFailed("path.outside_workspace", f"{field}: {uri!r} is outside the workspace roots ({shown})", field=field)


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def output_path(uri: str, roots: list[Path], *, overwrite: bool, field: str = "output") -> Path:
    """Where an output may be written: inside the workspace, not replacing unasked. Missing folders on the way
    are created (`make_folders`), inside the root only.

    Raises:
        JobFailed: the path is outside the workspace or a URL, a folder on the way is a file or a link, or the
            output exists and `overwrite` is false.
    """
    scheme = urlsplit(uri).scheme.lower() if "://" in uri else ""
    if scheme and scheme not in ("file", "s3"):  # never a local folder named `https:`
        message = f"{field}: outputs are written in the workspace, not to a URL ({uri!r})"
        raise JobFailed("path.outside_workspace", message, field=field)
    path = resolve_in_workspace(uri, roots, field=field, must_exist=False)
    try:
        if not path.parent.is_dir():
            make_folders(path.parent, roots, field)
        if objects.exists(path) and not overwrite:
            raise JobFailed("output.exists", f"{field}: {uri!r} exists; pass overwrite=true to replace it", field=field)
        uploads.note_output(path, overwrite)
        return path
    except OSError as exc:  # a name too long for the filesystem: found by fuzzing (issue 14)
        raise JobFailed("path.invalid", f"{field}: not a usable path ({exc.strerror})", field=field) from exc


def make_folders(folder: Path, roots: list[Path], field: str = "output") -> None:
    """Create what is missing of `folder` (a resolved path inside one of `roots`), one level at a time down from
    its root, each level opened without following links: a level that is, or meanwhile becomes, a link or a file
    stops it, so no folder is made outside the root.

    Raises:
        JobFailed: `path.invalid` (a level is a file or a link), naming `field`.
    """
    root = max((r for r in roots if folder.is_relative_to(r)), key=lambda r: len(r.parts))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    parts = folder.relative_to(root).parts
    try:
        for depth, name in enumerate(parts, 1):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=fd)
            try:
                level = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:  # ENOTDIR: a file; ELOOP: a link
                shown = str(root.joinpath(*parts[:depth]))
                message = f"{field}: {shown!r} is in the way of the output's folder (a file or a link, not a folder)"
                raise JobFailed("path.invalid", message, field=field) from exc
            os.close(fd)
            fd = level
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_output(target: Path, fence: "Fence | None" = None) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it (and its sidecars) into place only if the block succeeds.

    A crash, an error or a cancellation leaves no file at `target`. Each attempt writes its own temporary name
    (`.<stem>.geogate.<attempt>.partial<suffix>`, keeping the suffix so GDAL drivers recognise the format), and a
    new attempt first removes what earlier attempts left: a SIGKILLed one's leftovers, or the file of a paused one
    whose call was re-dispatched. With a `fence`, the rename happens only while this attempt is the call's current
    one, so a paused attempt that wakes after losing its lease never replaces the output of the attempt that won.

    Raises:
        JobSuperseded: the fence says another attempt is current; nothing of this attempt is left.
    """
    attempt = fence.attempt if fence is not None else "local"
    if fence is not None:
        fence.check()  # a superseded attempt touches no file, not even the current one's temporary
    for stale in target.parent.glob(glob.escape(f".{target.stem}.geogate.") + f"*.partial{glob.escape(target.suffix)}"):
        _discard(stale)
    tmp = target.with_name(f".{target.stem}.geogate.{attempt}.partial{target.suffix}")
    try:
        yield tmp
        if fence is not None:
            fence.check()
        sides = sidecars(tmp)  # a Shapefile's .shx/.dbf/.prj, a PNG's .aux.xml and .wld
        moved = [target.with_name(target.stem + side.name.removeprefix(tmp.stem)) for side in sides]
        for side, name in zip(sides, moved, strict=True):
            side.replace(name)
        replace_file(tmp, target)
        uploads.publish(_real(target), [_real(side) for side in moved], fence)  # an object root's output
    finally:
        _discard(tmp)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))  # `/proc/self/fd/N/name` (`confine.pinned`) as the folder's real path


def _renameat2() -> "Callable[[int, bytes, int, bytes, int], int] | None":
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28+
    except AttributeError:
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_RENAMEAT2 = _renameat2()
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def replace_file(tmp: Path, target: Path) -> None:
    """`os.replace(tmp, target)`: readers of `target` see the old file or the new one, never neither.

    A regular file already at `target` is swapped with `tmp` (`renameat2(RENAME_EXCHANGE)`) and then unlinked,
    instead of being renamed over: ext4 (`auto_da_alloc`) allocates and starts writing out every block of a file
    renamed over another one inside the rename, 8-11 ms for an 18 MB GeoTIFF, where the swap takes 0.5 ms. So
    an overwrite costs what a new output costs (and is as durable: neither is synced). Anything else at `target`
    (nothing, a link, a folder) and filesystems without the swap go through `os.replace`.
    """
    if _RENAMEAT2 is None or not _is_file(target):
        os.replace(tmp, target)
        return
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE) != 0:
        os.replace(tmp, target)  # EINVAL: no RENAME_EXCHANGE here; ENOENT: the target went away meanwhile
        return
    if not _is_file(tmp):  # what was swapped out is not the file checked a moment ago: put it back
        _RENAMEAT2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE)
        os.replace(tmp, target)
        return
    tmp.unlink()


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def sidecars(tmp: Path) -> list[Path]:
    """Files GDAL wrote beside the temporary `tmp` (`.dbf`, `.prj`, `.aux.xml`, `.wld`, …), not `tmp` itself."""
    return [p for p in tmp.parent.glob(glob.escape(tmp.stem) + ".*") if p != tmp]


def _discard(tmp: Path) -> None:
    for path in [*sidecars(tmp), tmp]:
        with contextlib.suppress(IsADirectoryError):  # a folder at a temporary's name was put there, not written
            path.unlink(missing_ok=True)
