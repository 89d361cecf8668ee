"""Opening workspace files as they were checked: folders pinned by descriptor, VRT sources held to the roots.

`workers.jobkit.files.resolve_in_workspace` checks a path; GDAL opens it later, by name. A folder swapped for a symbolic
link in between would send GDAL outside the workspace. So a job hands GDAL `/proc/self/fd/<N>/<name>`, where N is
a descriptor of the file's folder opened component by component from `/` with `O_NOFOLLOW`: the kernel resolves
that path in the very folder that was checked, whatever is renamed or swapped afterwards. The file itself must not
have turned into a link either. The descriptors live as long as the job (`confinement`, entered by `workers.jobs`).

A VRT (raster or vector) names other files GDAL will read: each must be a plain file inside the roots (no `/vsi…`,
no `driver:` or `vrt://` strings), and nested VRTs are checked the same way. Python pixel functions stay disabled.

GDAL also reads files beside the one it opens (overviews, masks, `.aux.xml`, world files, a Shapefile's `.dbf`,
a GeoPackage's `-wal`): before a file is handed to GDAL, every file of its folder sharing its stem must resolve
inside the roots (a link to elsewhere is refused) and, if it is a VRT, have its sources checked; after a raster
opens, every file GDAL says it uses is checked again (`check_files`). Paths are resolved by the kernel
(`os.path.realpath` follows `/proc/self/fd/N` to the real folder); nothing that resolves under `/proc` is accepted.
Reserved folders (the data directory, each root's `.geogate`) are refused like the outside.
"""

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, parse

from workers.jobkit import objects
from workers.jobkit.errors import JobFailed

VRT_MARKERS = (b"<VRTDataset", b"<OGRVRTDataSource")
SNIFF_BYTES = 4096
MAX_VRT_DEPTH = 8
SOURCE_TAGS = frozenset({"SourceFilename", "SrcDataSource", "SourceDataset"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_+.\-]*:")
PROC = Path("/proc")
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Pins:
    roots: list[Path]
    reserved: list[Path]
    folders: dict[Path, int] = field(default_factory=dict)
    neighbours: dict[str, "Neighbours"] = field(default_factory=dict)
    """The names of each folder (by real path) looked at in this job, indexed by stem."""
    checked: set[tuple[str, str]] = field(default_factory=set)
    """(real folder, stem) pairs whose neighbours passed in this job."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """The input files the job named, by real path: what `workers.jobkit.digests` noted of each."""


_PINS: ContextVar[_Pins | None] = ContextVar("geogate_pins", default=None)


@contextlib.contextmanager
def confinement(roots: list[Path], reserved: list[Path] | None = None) -> Iterator[None]:
    """Pin the folders of the files opened inside the block; close the descriptors after it. Paths inside
    `reserved` folders are refused inside the block as if outside the roots."""
    pins = _Pins(list(roots), list(reserved or []))
    token = _PINS.set(pins)
    try:
        yield
    finally:
        _PINS.reset(token)
        for fd in pins.folders.values():
            os.close(fd)


def pinned(real: Path, field: str = "uri") -> str:
    """The name GDAL should open `real` (a checked, resolved workspace path) by.

    Outside a `confinement` this is `real` itself. A VRT is returned as its real path once its sources are
    checked, so GDAL resolves relative sources as written.

    Raises:
        JobFailed: `path.outside_workspace` when a folder or the file became a link after the check, or a VRT
            reads a source outside the roots.
    """
    objects.ensure_local(real, field)  # an object fetched into its mirror, to be opened as a file
    pins = _PINS.get()
    if pins is None:
        return str(real)
    folder = pins.folders.get(real.parent)
    if folder is None:
        folder = pins.folders[real.parent] = _open_folder(real.parent, field)
    _refuse_link(folder, real, field)
    check_neighbours(f"/proc/self/fd/{folder}", real.name, pins.roots, field, pins.reserved)
    name = f"/proc/self/fd/{folder}/{real.name}"
    if is_vrt(Path(name)):
        check_vrt(real, pins.roots, field)
        return str(real)
    return name


_PINNED_NAME = re.compile(r"/proc/self/fd/(\d+)/([^\s'\"`,;:()]*)")
_TEMPORARY = re.compile(r"^\.(.+?)\.geogate\.[^./]+\.partial")
"""An output's temporary name, `.<stem>.geogate.<attempt>.partial<suffix>` (`workers.jobkit.files.atomic_output`)."""


def shown_paths(text: str) -> str:
    """`text` (a GDAL or OS message) with every `/proc/self/fd/<N>/<name>` written as the name a user knows: the
    file's path relative to its workspace root, and an output's temporary name as the output's own."""
    pins = _PINS.get()
    folders = {fd: folder for folder, fd in pins.folders.items()} if pins is not None else {}

    def user_name(match: re.Match[str]) -> str:
        name = _TEMPORARY.sub(r"\1", match[2])
        folder = folders.get(int(match[1]))
        if folder is None or pins is None:
            return name
        path = folder / name
        root = next((r for r in pins.roots if path.is_relative_to(r)), None)
        return str(path.relative_to(root)) if root is not None else name

    return _PINNED_NAME.sub(user_name, text)


def _swapped(field: str, what: Path) -> JobFailed:
    return JobFailed(
        "path.outside_workspace",
        f"{field}: {str(what)!r} was replaced by a symbolic link after it was checked; refusing to follow it",
        field=field,
    )


def _open_folder(folder: Path, field: str) -> int:
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in folder.parts[1:]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError as exc:
                raise _missing(field, folder) from exc
            except OSError as exc:  # ENOTDIR or ELOOP: a component is a link (or a file) now
                raise _swapped(field, folder) from exc
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _missing(field: str, folder: Path) -> JobFailed:
    return JobFailed("path.not_found", f"{field}: folder {str(folder)!r} does not exist", field=field)


def _refuse_link(folder: int, real: Path, field: str) -> None:
    try:
        mode = os.stat(real.name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return  # an output not written yet
    except OSError as exc:
        raise JobFailed("path.invalid", f"{field}: not a usable path ({exc.strerror})", field=field) from exc
    if stat.S_ISLNK(mode):
        raise _swapped(field, real)


def is_vrt(path: Path) -> bool:
    """Whether GDAL would read `path` as a VRT (it goes by content, not by suffix)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    return any(marker in head for marker in VRT_MARKERS)


def check_vrt(
    path: Path, roots: list[Path], field: str = "uri", depth: int = 0, reserved: list[Path] | None = None
) -> None:
    """Refuse a VRT unless every file it names is a plain file inside `roots` (nested VRTs too), whose neighbours
    pass `check_neighbours`.

    Raises:
        JobFailed: `path.outside_workspace` (a source outside or in a reserved folder, a `/vsi…` or `driver:`
            string, too deep a nesting) or `gdal.corrupt` (the XML cannot be read safely).
    """
    if depth > MAX_VRT_DEPTH:
        raise _refused(field, path, f"VRTs nested more than {MAX_VRT_DEPTH} deep")
    reserved = current_reserved() if reserved is None else reserved
    for number, (text, relative) in enumerate(_sources(path, field), start=1):
        source = _source_path(path, number, text, relative, (roots, reserved), field)
        check_neighbours(str(source.parent), source.name, roots, field, reserved, depth + 1)
        if is_vrt(source):
            check_vrt(source, roots, field, depth + 1, reserved)


def _refused(field: str, vrt: Path, why: str) -> JobFailed:
    return JobFailed("path.outside_workspace", f"{field}: the VRT {vrt.name!r} is refused: {why}", field=field)


def _sources(path: Path, field: str) -> Iterator[tuple[str, bool]]:
    try:
        tree = parse(path)
    except (ParseError, DefusedXmlException, OSError) as exc:
        raise JobFailed(
            "gdal.corrupt", f"{field}: {path.name!r} is not a VRT that can be read safely", field=field
        ) from exc
    for element in tree.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag == "PixelFunctionLanguage" and (element.text or "").strip().lower() == "python":
            raise _refused(field, path, "it runs Python pixel functions")
        if tag in SOURCE_TAGS:
            flags = {k.lower(): v for k, v in element.attrib.items()}
            yield (element.text or "").strip(), flags.get("relativetovrt", "0").strip() == "1"


Places = tuple[list[Path], list[Path]]
"""Workspace roots, and the reserved folders inside them."""


def _source_path(vrt: Path, number: int, text: str, relative: bool, places: Places, field: str) -> Path:
    if not text or text.startswith("/vsi") or _SCHEME.match(text) or "\0" in text:
        raise _refused(field, vrt, f"its source #{number} is not a plain file in the workspace")
    source = Path(os.path.realpath(vrt.parent / text if relative else text))
    if not allowed(source, *places):
        raise _refused(field, vrt, f"its source #{number} is outside the workspace roots")
    return source


def allowed(real: Path, roots: list[Path], reserved: list[Path]) -> bool:
    """Whether the resolved path `real` is inside a root, not under `/proc`, and not in a reserved folder."""
    if real == PROC or real.is_relative_to(PROC):
        return False
    inside = any(real == root or real.is_relative_to(root) for root in roots)
    return inside and not any(real == folder or real.is_relative_to(folder) for folder in reserved)


def _stem(name: str) -> str:
    return name.split(".", 1)[0].casefold()


def check_neighbours(
    folder: str, name: str, roots: list[Path], field: str = "uri", reserved: list[Path] | None = None, depth: int = 0
) -> None:
    """Refuse to open `name` in `folder` (a real path or a pinned `/proc/self/fd/N`) when a file beside it that GDAL
    may read with it (same stem, then `.` or `_`: `x.tif.ovr`, `x.tfw`, `x_rpc.txt`, `x.dbf`, `x.gpkg-wal`)
    resolves outside the roots or is a VRT reading outside them.

    Raises:
        JobFailed: `path.outside_workspace`, naming the neighbour by its name in the folder.
    """
    reserved = current_reserved() if reserved is None else reserved
    pins, stem, real_folder = _PINS.get(), _stem(name), os.path.realpath(folder)
    if pins is not None and (real_folder, stem) in pins.checked:
        return
    for entry in _neighbours(folder, real_folder, pins).get(stem, []):
        if entry == name:
            continue
        real = Path(os.path.realpath(os.path.join(folder, entry)))
        if not allowed(real, roots, reserved):
            raise JobFailed(
                "path.outside_workspace",
                f"{field}: {name!r} is refused: {entry!r} beside it leads outside the workspace",
                field=field,
            )
        if real.is_file() and is_vrt(real):
            check_vrt(real, roots, field, depth + 1, reserved)
    if pins is not None:
        pins.checked.add((real_folder, stem))


Neighbours = dict[str, list[str]]
"""A folder's names by every prefix that ends before a `.` or `_` in them (case-folded): `x_rpc.txt` is under `x`
and `x_rpc`, so the files beside a stem are one lookup, not a pass over the folder."""


def _neighbours(folder: str, real_folder: str, pins: _Pins | None) -> Neighbours:
    if pins is not None and real_folder in pins.neighbours:
        return pins.neighbours[real_folder]
    index: Neighbours = {}
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        names = []  # the open that follows reports the missing folder
    for entry in names:
        lowered = entry.casefold()
        for prefix in {lowered[:i] for i, char in enumerate(lowered) if char in "._"}:
            index.setdefault(prefix, []).append(entry)
    if pins is not None:
        pins.neighbours[real_folder] = index
    return index


def check_files(files: list[str], roots: list[Path], reserved: list[Path] | None = None) -> str | None:
    """The first file GDAL reports for an open dataset (as GDAL names it) that resolves outside the roots (or under
    `/proc`, or in a reserved folder), None when all are inside."""
    reserved = current_reserved() if reserved is None else reserved
    for name in files:
        if not allowed(Path(os.path.realpath(name)), roots, reserved):
            return name
    return None


def wants_input(path: str) -> bool:
    """Whether input `path` is still to be noted: inside a confinement, and not noted in it yet."""
    pins = _PINS.get()
    return pins is not None and path not in pins.inputs


def note_input(path: str, what: Any) -> None:
    """Keep `what` as the record of input `path` in the confinement in force (nothing outside one)."""
    pins = _PINS.get()
    if pins is not None:
        pins.inputs[path] = what


def noted_inputs() -> list[Any]:
    """The records of the inputs noted in the confinement in force, in the order they were noted."""
    pins = _PINS.get()
    return list(pins.inputs.values()) if pins is not None else []


def current_roots() -> list[Path] | None:
    """The roots of the confinement in force, None outside one."""
    pins = _PINS.get()
    return pins.roots if pins is not None else None


def current_reserved() -> list[Path]:
    """The reserved folders of the confinement in force (none outside one)."""
    pins = _PINS.get()
    return pins.reserved if pins is not None else []
