"""`make stac-demo`: the Sentinel-2-like catalog and its COG server, running until interrupted, with the settings
that let `geogate dev` search it and read its assets."""

import contextlib
import signal
import tempfile
from pathlib import Path

from tests.stac.catalog import sentinel_catalog


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="geogate-stac-") as folder, sentinel_catalog(Path(folder)) as catalog:
        print(f"STAC API: {catalog.api} (pgstac {catalog.pgstac_version}), COGs: {catalog.cogs.url}")
        print("In another terminal:")
        print(
            f"  GEOGATE_TOOLSETS=all GEOGATE_STAC_CATALOGS={catalog.api.removeprefix('http://')} "
            f"GEOGATE_REMOTE_HOSTS={catalog.cogs.authority} .venv/bin/geogate dev"
        )
        print("Ctrl-C stops the catalog.", flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # a stop by SIGTERM cleans up too
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
