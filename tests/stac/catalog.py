"""pgstac on a throwaway PostgreSQL cluster (initdb, Debian's PostgreSQL 15 and PostGIS), migrated and loaded with
pypgstac, behind stac-fastapi's pgstac backend in a uvicorn process: each started on a free port, stopped after.

PostgreSQL refuses to run as root, so under root the cluster belongs to the `postgres` user (its folder is made in
/tmp, which that user can reach, not under pytest's private tmp_path).
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pypgstac.db import PgstacDB
from pypgstac.load import Loader, Methods
from pypgstac.migrate import Migrate
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from geogate.cli.dev import free_port
from geogate.process.lifetime import dies_with_this_process
from tests.stac.scenes import Layout, Scene, collection, write_scenes
from tests.stac.servers import Served, range_server

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DATABASE = "stac"


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """A fresh PostgreSQL cluster on a free loopback port, trust authentication; yields its DSN (database `stac`).

    Raises:
        RuntimeError: PostgreSQL 15's binaries are not installed (`make system-deps` installs them with apt).
    """
    if not (PG_BIN / "initdb").exists():
        raise RuntimeError(f"{PG_BIN}/initdb is missing; `make system-deps` installs postgresql-15-postgis-3")
    as_user = _cluster_user()
    folder = Path(tempfile.mkdtemp(prefix="geogate-pg-"))
    try:
        if as_user is not None:
            os.chown(folder, as_user.pw_uid, as_user.pw_gid)
        with _postgres(folder, as_user) as dsn:
            yield dsn
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cluster_user() -> pwd.struct_passwd | None:
    return pwd.getpwnam("postgres") if os.geteuid() == 0 else None


@contextmanager
def _postgres(folder: Path, as_user: pwd.struct_passwd | None) -> Iterator[str]:
    user = {"user": as_user.pw_uid, "group": as_user.pw_gid, "extra_groups": []} if as_user else {}
    data = folder / "data"
    initdb = [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]
    subprocess.run([*initdb, "--no-sync"], check=True, capture_output=True, **user)
    port = free_port()
    argv = [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-k", str(folder)]
    settings = ["listen_addresses=127.0.0.1", "fsync=off", "synchronous_commit=off", "full_page_writes=off"]
    argv += [arg for setting in settings for arg in ("-c", setting)]
    log = (folder / "postgres.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=log, preexec_fn=dies_with_this_process(15), **user)
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        _until(lambda: _accepts(dsn), what=f"postgres on port {port}", timeout_s=30)
        _sql(dsn, f"CREATE DATABASE {DATABASE}")
        yield dsn.rsplit("/", 1)[0] + f"/{DATABASE}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _accepts(dsn: str) -> bool:
    return subprocess.run([str(PG_BIN / "pg_isready"), "-d", dsn, "-q"], check=False).returncode == 0


def _sql(dsn: str, statement: str) -> None:
    subprocess.run([str(PG_BIN / "psql"), dsn, "-q", "-c", statement], check=True, capture_output=True)


def load_pgstac(dsn: str, collection: dict[str, Any], items: list[dict[str, Any]], folder: Path) -> str:
    """Install pgstac's schema by pypgstac's migrations and load one collection and its items; the pgstac version."""
    with PgstacDB(dsn=dsn) as db:
        version = Migrate(db).run_migration()
    load_collection(dsn, collection, items, folder)
    return str(version)


def load_collection(dsn: str, collection: dict[str, Any], items: list[dict[str, Any]], folder: Path) -> None:
    """Load one more collection and its items by pypgstac's loader (its files written in `folder` on the way)."""
    with PgstacDB(dsn=dsn) as db:
        loader = Loader(db)
        (folder / "collection.json").write_text(json.dumps(collection))
        (folder / "items.ndjson").write_text("".join(json.dumps(item) + "\n" for item in items))
        loader.load_collections(str(folder / "collection.json"), Methods.insert)
        loader.load_items(str(folder / "items.ndjson"), Methods.insert)


@contextmanager
def stac_api(dsn: str) -> Iterator[str]:
    """stac-fastapi's pgstac app in uvicorn on a free port, on the database `dsn` names; yields its root URL."""
    url = httpx.URL(dsn)
    port = free_port()
    env = {
        **os.environ,
        "PGUSER": url.username or "postgres",
        "PGPASSWORD": "unused",
        "PGHOST": url.host,
        "PGPORT": str(url.port),
        "PGDATABASE": url.path.strip("/"),
        "STAC_FASTAPI_TITLE": "Geogate test catalog",
        "STAC_FASTAPI_DESCRIPTION": "Sentinel-2-like scenes for the tests",
        "STAC_FASTAPI_LANDING_ID": "geogate-test",
        "STAC_FASTAPI_VERSION": "1.0.0",
    }
    argv = [sys.executable, "-m", "uvicorn", "stac_fastapi.pgstac.app:create_app", "--factory"]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    argv += ["--log-level", "warning"]
    proc = subprocess.Popen(argv, env=env, preexec_fn=dies_with_this_process(15))
    root = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _answers(proc, f"{root}/_mgmt/ping"), what=f"stac-fastapi on port {port}", timeout_s=60)
        yield root
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _answers(proc: subprocess.Popen[bytes], url: str) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(f"stac-fastapi exited with status {proc.returncode} before answering")
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class SentinelCatalog:
    """The Sentinel-2-like scenes as COGs behind `cogs`, their items in pgstac behind the STAC API at `api`."""

    api: str
    cogs: Served
    cogs_root: Path
    scenes: list[Scene]
    pgstac_version: str
    dsn: str
    """pgstac's database, to load more collections into (`load_collection`)."""


@contextmanager
def sentinel_catalog(workdir: Path, layout: Layout | None = None) -> Iterator[SentinelCatalog]:
    """Everything the STAC tests (and the demo) search: COG server, fixture, PostgreSQL, pgstac, stac-fastapi. The
    scenes are the tests' unless a `layout` sizes them."""
    (workdir / "cogs").mkdir(parents=True, exist_ok=True)
    with range_server(workdir / "cogs") as cogs, postgres_cluster() as dsn:
        scenes = write_scenes(workdir / "cogs", cogs.url, layout or Layout())
        described = collection(scenes) if layout else collection()
        version = load_pgstac(dsn, described, [scene.item for scene in scenes], workdir)
        with stac_api(dsn) as api:
            yield SentinelCatalog(api, cogs, workdir / "cogs", scenes, version, dsn)


def _until(condition: Any, *, what: str, timeout_s: float) -> None:
    """Poll `condition` until true (a server listening: there is no event to wait on); raise naming `what`."""
    retrying = Retrying(
        stop=stop_after_delay(timeout_s), wait=wait_fixed(0.05), retry=retry_if_result(lambda ok: not ok)
    )
    try:
        retrying(condition)
    except RetryError as exc:
        raise TimeoutError(f"timed out waiting for {what}") from exc
