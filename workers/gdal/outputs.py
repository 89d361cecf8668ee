"""Files a job writes: their description (`OutputRef`)."""

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
