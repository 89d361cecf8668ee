"""The compose file and the Dockerfile, checked without a container engine (`make compose-test` runs them)."""

from pathlib import Path

import yaml
from typer.testing import CliRunner

from gateway.cli import app
from geogate.settings import Settings
from schemas import tasks

ROOT = Path(__file__).resolve().parents[2]


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
    assert queues == set(tasks.QUEUES)


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
