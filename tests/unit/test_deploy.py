"""The compose file and the Dockerfile, checked without a container engine (`make compose-test` runs them)."""

import lzma
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from geogate.cli.main import app
from geogate.settings import Settings
from schemas import routes

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
APT_SOURCES = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_every_geogate_service_runs_a_real_command() -> None:
    runner = CliRunner()
    for name, service in compose()["services"].items():
        if service.get("image") != "geogate:latest":
            continue  # redis, prometheus, grafana
        command = service["command"]
        assert runner.invoke(app, [command[0], "--help"]).exit_code == 0, name


def test_worker_services_cover_every_queue_with_known_names() -> None:
    queues: set[str] = set()
    for service in compose()["services"].values():
        command = service.get("command", [])
        if command[:1] == ["worker"]:
            queues |= set(command[command.index("--queues") + 1].split(","))
    assert queues == set(routes.QUEUES)


def test_compose_environment_names_are_settings_geogate_reads() -> None:
    env = compose()["x-geogate"]["environment"]
    known = {f"GEOGATE_{name.upper()}" for name in Settings.model_fields} | {"REDIS_URL"}
    assert set(env) <= known


def test_geogate_roles_run_under_an_init_and_sandbox_workers_may_mount_a_proc_of_their_own() -> None:
    """What the bring-up under a container engine found (issue 34): Python as PID 1 reaps no orphan, and bubblewrap
    cannot mount /proc under the runtime's masks."""
    services = compose()["services"]
    assert compose()["x-geogate"]["init"] is True
    for name in ("worker-gdal", "worker-sandbox"):
        assert {"seccomp=unconfined", "systempaths=unconfined"} <= set(services[name]["security_opt"]), name


def test_the_dockerfile_copies_every_package_the_distribution_installs() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    for package in ("schemas", "geogate", "gateway", "workers"):
        assert f"COPY {package} {package}" in dockerfile


def test_monitoring_is_an_optional_profile_that_scrapes_the_gateways_metrics() -> None:
    services = compose()["services"]
    assert services["prometheus"]["profiles"] == services["grafana"]["profiles"] == ["monitoring"]
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())["scrape_configs"][0]
    assert scrape["metrics_path"] == "/metrics"
    assert scrape["static_configs"][0]["targets"] == ["gateway:8000"]
    mounted = [v.split(":")[0] for v in services["grafana"]["volumes"]]
    assert all((ROOT / m).exists() for m in mounted)


def test_the_grafana_dashboard_queries_only_metrics_the_gateway_exposes() -> None:
    import json
    import re

    from prometheus_client import CollectorRegistry, generate_latest

    from gateway.metrics import Snapshot

    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        Snapshot({"events:tool.succeeded": 1, "failed:x": 1}, {"gdal": 0}, {"calls": 1}, 0, {"hist|p|run|3": 1})
    )
    exposed = {
        line.split("{")[0].split(" ")[0] for line in generate_latest(registry).decode().splitlines() if line[:1] != "#"
    }
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "dashboards" / "geogate.json").read_text())
    queried = {m for p in dashboard["panels"] for t in p["targets"] for m in re.findall(r"geogate_[a-z_]+", t["expr"])}
    assert queried and queried <= exposed, queried - exposed


def base_suite() -> str:
    """The Debian suite of the Dockerfile's base (`ARG BASE=debian:<suite>-slim`)."""
    found = re.search(r"^ARG BASE=debian:([a-z]+)-slim$", DOCKERFILE.read_text(), re.MULTILINE)
    assert found, "deploy/Dockerfile names no `ARG BASE=debian:<suite>-slim`"
    return found[1]


def apt_installs() -> list[str]:
    """Every package an `apt-get install` of the Dockerfile names, in any stage."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    packages = []
    for command in re.findall(r"apt-get install ([^&\n]*)", text):
        packages += [word for word in command.split() if not word.startswith("-")]
    return packages


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses (as deploy/podman/engine.sh finds it), else Debian's redirector."""
    for source in APT_SOURCES:
        lines = (
            [ln for ln in source.read_text().splitlines() if not ln.lstrip().startswith("#")]
            if source.is_file()
            else []
        )
        for found in re.finditer(r"(https?://\S+/debian)/?(\s|$)", "\n".join(lines)):
            return found[1]
    return "http://deb.debian.org/debian"


def test_every_stage_builds_on_the_one_debian_base_and_compose_passes_the_same_default() -> None:
    """A stage on another base would bring packages from elsewhere; compose's default must be the Dockerfile's."""
    stages = re.findall(r"^FROM (\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert stages and set(stages) == {"${BASE}"}, stages
    for name, service in compose()["services"].items():
        if "build" in service:
            assert service["build"]["args"]["BASE"] == f"${{GEOGATE_BASE_IMAGE:-debian:{base_suite()}-slim}}", name


def test_the_local_base_never_takes_an_official_name() -> None:
    """make compose-test builds the base from packages: under an official name it would pass for what Docker pulls."""
    name = subprocess.run([ROOT / "deploy" / "podman" / "engine.sh", "--name"], capture_output=True, text=True)
    assert name.returncode == 0, name.stderr
    assert name.stdout.strip() == f"localhost/geogate-base:{base_suite()}"


def test_every_package_the_dockerfile_installs_is_in_its_base_suites_package_index() -> None:
    """Against the suite's index on the Debian mirror this machine uses: a base that moves to a new suite fails
    here, not at a user's `docker compose up --build`."""
    if shutil.which("dpkg") is None:
        pytest.fail("dpkg is needed to name this machine's architecture in the Debian index")
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    url = f"{debian_mirror()}/dists/{base_suite()}/main/binary-{arch}/Packages.xz"
    index = httpx.get(url, timeout=120, follow_redirects=True)
    assert index.status_code == 200, f"{url}: HTTP {index.status_code}"
    names = set(re.findall(r"^Package: (\S+)$", lzma.decompress(index.content).decode(), re.MULTILINE))

    installed = apt_installs()

    assert {"python3", "python3-venv", "bubblewrap", "redis-server"} <= set(installed)
    assert sorted(set(installed) - names) == [], f"not in {base_suite()}'s index at {url}"


def test_the_bucket_only_cell_mounts_no_volume_and_shares_no_queue_with_the_volumes_cell() -> None:
    """The `s3` profile (docs/compose.md): its gateway and worker know the bucket alone, mount nothing but secrets,
    read the store's keys from a secret file, and keep their log and queues in a Redis database of their own (the
    Celery queues are not prefixed, so one database would let a volume worker take a bucket call)."""
    services = compose()["services"]
    cell = {name: services[name] for name in ("s3", "gateway-s3", "worker-gdal-s3")}
    assert all(service["profiles"] == ["s3"] for service in cell.values())
    for name in ("gateway-s3", "worker-gdal-s3"):
        env = cell[name]["environment"]
        assert cell[name]["volumes"] == [] and env["GEOGATE_WORKSPACES"].startswith("s3://"), name
        assert env["REDIS_URL"] != services["gateway"]["environment"]["REDIS_URL"], name
        assert not {"GEOGATE_S3_ACCESS_KEY_ID", "GEOGATE_S3_SECRET_ACCESS_KEY"} & set(env), name
    worker = cell["worker-gdal-s3"]
    assert worker["environment"]["GEOGATE_S3_SECRETS_FILE"] == "/run/secrets/geogate_s3"
    assert worker["secrets"] == ["geogate_s3"] and "geogate_s3" in compose()["secrets"]
    assert worker["environment"]["GEOGATE_S3_ENDPOINT_URL"] == "http://s3:5000"


def test_the_s3_server_image_installs_the_moto_the_test_extra_names() -> None:
    """moto in its own stage (Geogate's image carries no test-only package), at the test extra's version range."""
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    spec = next(d for d in extra if d.startswith("moto"))
    stages = re.split(r"^FROM ", DOCKERFILE.read_text(), flags=re.MULTILINE)
    s3_stage = next(s for s in stages if s.startswith("${BASE} AS s3"))
    assert f'"{spec}"' in s3_stage
    assert "moto" not in stages[-1]
