"""How docs/ops-dashboard.png was made: `geogate dev`, mixed load from concurrent clients, headless Chromium.

Run from the repository with `make run` serving on port 8000 in the same directory:
`.venv/bin/python docs/ops_screenshot.py [--clients 32] [--seconds 60]`. It writes a small raster into the
workspace, drives calls for a while (ping, ping with a result handler, raster_info on a real and on a missing file,
raster_stats), and takes the screenshot while the load runs.
"""

import argparse
import asyncio
import random
import threading
import time
from pathlib import Path

import numpy as np
import rasterio
from mcp import Client
from playwright.sync_api import sync_playwright
from rasterio.transform import from_origin

HERE = Path(__file__).resolve().parent


def write_raster(path: Path) -> None:
    profile = {"driver": "GTiff", "width": 256, "height": 256, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(path, "w", **profile, transform=from_origin(500000, 4100000, 30, 30)) as dst:
        dst.write(np.random.default_rng(1).random((1, 256, 256), dtype="float32"))


async def client_loop(url: str, until: float, seed: int) -> None:
    rng = random.Random(seed)
    async with Client(url) as client:
        while time.monotonic() < until:
            pick = rng.random()
            if pick < 0.45:
                await client.call_tool("ping", {"queue": "gdal", "delay_ms": rng.choice([0, 0, 20, 80, 250])})
            elif pick < 0.57:
                handler = {"language": "jmespath", "script": "worker"}
                await client.call_tool("ping", {"queue": "gdal", "result_handler": handler})
            elif pick < 0.6:
                handler = {"language": "python", "script": "result = tool_output['missing']"}
                await client.call_tool("ping", {"queue": "gdal", "result_handler": handler})
            elif pick < 0.8:
                await client.call_tool("raster_info", {"uri": "ops-demo.tif"})
            elif pick < 0.9:
                await client.call_tool("raster_stats", {"uri": "ops-demo.tif"})
            else:
                await client.call_tool("raster_info", {"uri": f"missing-{rng.randint(1, 9)}.tif"})


def load(url: str, clients: int, seconds: float) -> None:
    until = time.monotonic() + seconds

    async def main() -> None:
        await asyncio.gather(*[client_loop(url, until, n) for n in range(clients)])

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", type=Path, default=HERE / "ops-dashboard.png")
    parser.add_argument("--workspace", type=Path, default=Path("workspace"), help="the folder `make run` serves")
    args = parser.parse_args()
    args.workspace.mkdir(exist_ok=True)
    write_raster(args.workspace / "ops-demo.tif")
    driver = threading.Thread(target=load, args=(f"{args.base}/mcp", args.clients, args.seconds))
    driver.start()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 1200})
        page.goto(f"{args.base}/ops?window=5m")
        page.wait_for_timeout(int(args.seconds * 1000 * 0.8))
        page.screenshot(path=str(args.out), full_page=False)
        browser.close()
    driver.join()


if __name__ == "__main__":
    main()
