"""The compose cluster under podman: Geogate's, Redis' and the S3 server's images built from deploy/Dockerfile on the
local Debian base, docker-compose.yml brought up with its `s3` profile and a test override (tokens, 2 gateways, 2 gdal
workers, loopback ports), and everything it created removed afterwards.

`make compose-test` installs podman and builds the base image first (deploy/podman/engine.sh); this module fails,
naming the reason, when the engine cannot run. Figures (build, up-to-healthy, recoveries) are printed, never asserted.
"""

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import redis

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from tests.cluster.conftest import write_raster
from tests.support import wait_for

pytestmark = pytest.mark.compose

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / "deploy" / "podman" / "containers.conf"
ENGINE = ROOT / "deploy" / "podman" / "engine.sh"
PROJECT = "geogate-compose-test"
IMAGE = "geogate:latest"
REDIS_IMAGE = "geogate-redis:latest"
S3_IMAGE = "geogate-s3:latest"
BUCKET, PREFIX = "geogate", "cluster"
"""The bucket-only cell's workspace root, as docker-compose.yml names it (`s3://geogate/cluster`)."""
S3_KEY_ID, S3_SECRET = "AKIDCOMPOSETEST", "compose-Secret-4e9b2d7a1c8f3e6b"
"""What the test's `geogate_s3` secret holds (moto takes any key: docs/object-storage.md)."""
S3_DB = 1
"""The Redis database of the bucket-only cell (docker-compose.yml's `x-s3-env`)."""
TOKEN = "compose-test-token-0123456789abcdef"
"""The test client's bearer token (scopes read, write and admin: /ops and /metrics too)."""

OVERRIDE = """\
# the test's only changes to docker-compose.yml: two gateways and two gdal workers, ports on loopback only
services:
  redis:
    ports: ["127.0.0.1::6379"]
  gateway:
    scale: 2
    ports: !override ["127.0.0.1::8000"]
  worker-gdal:
    scale: 2
  gateway-s3:
    ports: !override ["127.0.0.1::8000"]
  s3:
    ports: !override ["127.0.0.1::5000"]
"""


def report(name: str, figures: dict[str, object]) -> None:
    print(f"\n[compose] {name}: {json.dumps(figures)}")


def podman(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=engine_env())
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def engine_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def base_image() -> str:
    """The local name of the Debian base engine.sh builds from the suite deploy/Dockerfile names."""
    return subprocess.run([str(ENGINE), "--name"], capture_output=True, text=True, check=True).stdout.strip()


def require_engine() -> None:
    """Fail (never skip) with the reason when podman is missing or cannot start a container."""
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed: `make compose-test` installs it (deploy/podman/engine.sh)")
    info = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
    if info.returncode != 0:
        pytest.fail(f"the container engine cannot start: {info.stderr.strip()}")
    if not _image_exists(base := base_image()):
        pytest.fail(f"the base image {base} is missing: `make compose-test` builds it (deploy/podman/engine.sh)")


def _image_exists(name: str) -> bool:
    return podman("image", "exists", name, check=False).returncode == 0


@dataclass
class Container:
    name: str
    service: str
    hostname: str

    def pid(self) -> int:
        return int(podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout)

    def running(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False).stdout.strip()
        return state == "true"

    def host_port(self, port: int) -> int:
        return int(podman("port", self.name, str(port)).stdout.strip().rsplit(":", 1)[1])

    def healthy(self) -> bool:
        return podman("healthcheck", "run", self.name, check=False).returncode == 0

    def restarts(self) -> int:
        return int(podman("inspect", "--format", "{{.RestartCount}}", self.name).stdout)

    def has_healthcheck(self) -> bool:
        config = podman("inspect", "--format", "{{json .Config.Healthcheck}}", self.name).stdout.strip()
        return config not in ("", "null", "{}")


@dataclass
class Compose:
    """The project as podman-compose runs it, and what the test created around it."""

    workdir: Path
    images_before: set[str]
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def tokens(self) -> Path:
        return self.workdir / "tokens"

    @property
    def s3_secrets(self) -> Path:
        return self.workdir / "s3.secrets"

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        files = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(self.workdir / "override.yml")]
        argv = [str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "podman-compose")]
        argv += ["--in-pod=false", "-p", PROJECT, *files, *args]
        env = engine_env() | {"GEOGATE_TOKENS_FILE": str(self.tokens), "GEOGATE_BASE_IMAGE": base_image()}
        env |= {"GEOGATE_S3_SECRETS_FILE": str(self.s3_secrets), "COMPOSE_PROFILES": "s3"}
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"podman-compose {' '.join(args)} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done

    def containers(self, service: str | None = None) -> list[Container]:
        found = json.loads(podman("ps", "-a", "--filter", f"label=io.podman.compose.project={PROJECT}", "--format",
                                  "json").stdout or "[]")  # fmt: skip
        out = [Container(c["Names"][0], c["Labels"]["com.docker.compose.service"], c["Id"][:12]) for c in found]
        return sorted((c for c in out if service in (None, c.service)), key=lambda c: c.name)

    def gateway_urls(self, path: str = "/mcp", service: str = "gateway") -> list[str]:
        return [f"http://127.0.0.1:{c.host_port(8000)}{path}" for c in self.containers(service) if c.running()]

    def store(self, db: int = 0) -> EventStore:
        port = self.containers("redis")[0].host_port(6379)
        return EventStore(redis.Redis.from_url(f"redis://127.0.0.1:{port}/{db}"), Keys("geogate"))

    def s3(self) -> Any:
        """A boto3 client on the `s3` service's published port, with the keys of the `geogate_s3` secret."""
        endpoint = f"http://127.0.0.1:{self.containers('s3')[0].host_port(5000)}"
        keys = {"aws_access_key_id": S3_KEY_ID, "aws_secret_access_key": S3_SECRET}
        return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)

    def workspace(self) -> Path:
        volume = f"{PROJECT}_workspace"
        return Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip())

    def geogate(self, *args: str, db: int = 0) -> subprocess.CompletedProcess[str]:
        """`geogate ARGS` in a container of its own on the cluster's network, against the cluster's Redis (`db`)."""
        network = f"{PROJECT}_default"
        argv = ["run", "--rm", "--network", network, "-e", f"REDIS_URL=redis://redis:6379/{db}", IMAGE, *args]
        return podman(*argv, check=False)

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label=io.podman.compose.project={PROJECT}"
        return {
            "containers": podman("ps", "-a", "-q", "--filter", label).stdout.split(),
            "volumes": [v for v in podman("volume", "ls", "-q").stdout.split() if v.startswith(PROJECT)],
            "networks": [n for n in podman("network", "ls", "-q").stdout.split() if n.startswith(PROJECT)],
        }


def image_ids() -> set[str]:
    return set(podman("images", "-a", "-q", "--no-trunc").stdout.split())


def build_images() -> dict[str, float]:
    """Geogate's image, Redis' and the S3 server's from deploy/Dockerfile on the local base, as `docker compose
    build` would with GEOGATE_BASE_IMAGE set to it; Geogate's again from the layer cache."""
    figures = {}
    builds = [("build_s", [], IMAGE), ("rebuild_cached_s", [], IMAGE)]
    builds += [("redis_build_s", ["--target", "redis"], REDIS_IMAGE), ("s3_build_s", ["--target", "s3"], S3_IMAGE)]
    for label, target, tag in builds:
        start = time.monotonic()
        args = ["--pull=never", "--build-arg", f"BASE={base_image()}", *target, "-t", tag]
        podman("build", *args, "-f", str(ROOT / "deploy" / "Dockerfile"), str(ROOT), timeout=1800)
        figures[label] = round(time.monotonic() - start, 1)
    return figures


def wait_healthy(compose: Compose) -> None:
    """Every container running, every compose healthcheck passing (run here: podman 4.3 runs none without
    systemd), every gateway answering /health and every worker node holding its lease."""
    wait_for(lambda: all(c.running() for c in compose.containers()), what="every container to run", timeout_s=120)
    checked = [c for c in compose.containers() if c.has_healthcheck()]
    assert {c.service for c in checked} == {"redis", "gateway", "s3", "gateway-s3"}
    wait_for(lambda: all(c.healthy() for c in checked), what="every healthcheck", timeout_s=180, interval_s=1)
    workers = [c for c in compose.containers() if c.service.startswith("worker-")]
    wait_for(lambda: leased(compose) >= {w.hostname for w in workers}, what="every worker's lease", timeout_s=120)


def leased(compose: Compose) -> set[str]:
    """Hosts (container hostnames) holding a worker lease now, in either cell's Redis database."""
    keys = [k for db in (0, S3_DB) for k in compose.store(db).redis.scan_iter(match="geogate:lease:*")]
    return {k.decode().split(":")[2] for k in keys}


def seed_workspace(compose: Compose) -> None:
    """The test rasters, written into the workspace volume as an operator would (readable by the image's user)."""
    workspace = compose.workspace()
    for name, px in (("dem.tif", 256), ("big.tif", 2048)):
        write_raster(workspace / name, px)
        (workspace / name).chmod(0o644)


def remove_created(compose: Compose) -> None:
    compose.run("down", "-v", "--timeout", "60")
    for image in sorted(image_ids() - compose.images_before):
        podman("rmi", "-f", image, check=False)


@pytest.fixture(scope="session")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    require_engine()
    workdir = tmp_path_factory.mktemp("compose")
    (workdir / "override.yml").write_text(OVERRIDE)
    built = Compose(workdir, image_ids())
    built.tokens.write_text(f"tester {TOKEN} read,write,admin\n")
    built.tokens.chmod(0o644)  # a bind-mounted secret keeps its mode: the image's user must read it
    built.s3_secrets.write_text(f"access_key_id={S3_KEY_ID}\nsecret_access_key={S3_SECRET}\n")
    built.s3_secrets.chmod(0o644)
    try:
        built.figures |= build_images()
        start = time.monotonic()
        built.run("up", "-d")
        wait_healthy(built)
        built.figures["up_to_healthy_s"] = round(time.monotonic() - start, 1)
        # podman 4.3 ignores `condition: service_healthy`: every role rides out a Redis still starting by itself
        built.figures["restarts_during_up"] = sum(c.restarts() for c in built.containers())
        seed_workspace(built)
        report("bring-up", built.figures)
        yield built
    finally:
        remove_created(built)


def http(timeout: float = 30) -> httpx.Client:
    return httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {TOKEN}"})
