"""Files a job writes: their description (`OutputRef`) and the sidecars GDAL writes beside them."""

import glob
import hashlib
from pathlib import Path

from schemas.tools.raster import OutputRef


def file_ref(path: Path, driver: str) -> OutputRef:
    """Describe a written file: URI, path, size and sha256 (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return OutputRef(
        uri=path.as_uri(), path=str(path), size=path.stat().st_size, sha256=digest.hexdigest(), driver=driver
    )


def sidecars(tmp: Path) -> list[Path]:
    """Files GDAL wrote beside the temporary `tmp` (`.dbf`, `.prj`, `.aux.xml`, `.wld`, …), not `tmp` itself."""
    return [p for p in tmp.parent.glob(glob.escape(tmp.stem) + ".*") if p != tmp]


def publish_sidecars(tmp: Path, target: Path) -> None:
    """Rename each sidecar of `tmp` to the matching name beside `target` (before `tmp` itself is renamed)."""
    for side in sidecars(tmp):
        side.replace(target.with_name(target.stem + side.name.removeprefix(tmp.stem)))


def drop_sidecars(tmp: Path) -> None:
    """Remove whatever sidecars of `tmp` are left (after a failure or a cancellation)."""
    for side in sidecars(tmp):
        side.unlink(missing_ok=True)
