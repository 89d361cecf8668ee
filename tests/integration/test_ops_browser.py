"""/ops in headless Chromium (Debian's package, driven by Playwright) while calls run through the real stack.

The page must show what the log holds: calls per tool and errors by code, updated live over SSE; a call's page must
list its events in the order the log has them.
"""

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from gateway.ops.figures import callers_error
from geogate.calls.store import EventStore
from schemas.events import ToolFailed, ToolRequested, ToolSucceeded
from schemas.ids import call_aggregate
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium (`make system-deps` installs it); Playwright downloads no browser of its own."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is not installed; `make test` installs it with apt")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


def run_calls(url: str, pings: int, missing: int) -> None:
    """Calls from a client of its own, while the page is open: pings, and raster_info on a missing file (errors)."""

    async def main() -> None:
        async with Client(url) as client:
            batch = [client.call_tool("ping", {"queue": "gdal"}) for _ in range(pings)]
            batch += [client.call_tool("raster_info", {"uri": f"missing-{n}.tif"}) for n in range(missing)]
            await asyncio.gather(*batch)

    asyncio.run(main())


def log_figures(store: EventStore) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """(tool, outcome) and failures by code, counted from the calls stream itself."""
    tools: dict[str, str] = {}
    outcomes: Counter[tuple[str, str]] = Counter()
    codes: Counter[str] = Counter()
    for stored in store.read("calls"):
        data = stored.event.data
        if isinstance(data, ToolRequested):
            tools[data.call_id] = data.tool
        elif isinstance(data, ToolSucceeded):
            outcomes[tools[data.call_id], "succeeded"] += 1
        elif isinstance(data, ToolFailed):  # the caller's errors apart from failures, as the page counts them
            outcomes[tools[data.call_id], "caller_errors" if callers_error(data.code) else "failures"] += 1
            codes[data.code] += 1
    return outcomes, codes


def cell(page: Page, tool: str, field: str) -> Locator:
    return page.locator(f'#tables tr[data-tool="{tool}"] td[data-field="{field}"]')


def test_the_dashboard_shows_the_logs_figures_live_and_a_call_page_its_events_in_order(
    stack: Stack, browser: Browser, tmp_path: Path
) -> None:
    base = stack.url.removesuffix("/mcp")
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{base}/ops?window=all")
    expect(page.locator("#live-state")).to_have_text("live", timeout=10_000)  # the SSE stream is open

    calls = threading.Thread(target=run_calls, args=(stack.url, 24, 6))
    calls.start()
    calls.join(timeout=60)
    assert not calls.is_alive(), "the calls did not finish"

    outcomes, codes = log_figures(stack.store())
    raster_failed = outcomes["raster_info", "caller_errors"] + outcomes["raster_info", "failures"]
    assert outcomes["ping", "succeeded"] >= 24 and raster_failed >= 6
    for (tool, outcome), count in outcomes.items():  # the page catches up by itself (SSE → panels refresh)
        expect(cell(page, tool, outcome)).to_have_text(f"{count:,}", timeout=15_000)
    for code, count in codes.items():
        expect(page.locator(f'#tables tr[data-error="{code}"] td.num')).to_have_text(f"{count:,}")
    expect(page.locator('#tail tr[data-type="tool.failed"]').first).to_be_visible()
    page.screenshot(path=str(tmp_path / "ops.png"), full_page=True)

    failed = next(s.event.data.call_id for s in reversed(stack.store().read("calls")) if s.event.type == "tool.failed")
    page.goto(f"{base}/ops/calls/{failed}")
    shown = page.locator('table.timeline tr[data-own="true"]').evaluate_all("rows => rows.map(r => r.dataset.type)")
    in_log = [e.type for e in stack.store().read_aggregate(call_aggregate(failed))]
    assert shown == in_log == ["tool.requested", "tool.started", "tool.failed"]
    expect(page.locator("#call-status")).to_have_text("failed")
    page.close()
