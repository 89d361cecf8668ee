"""The compose file and the Dockerfile are checked here, since no Docker engine runs in CI."""

from pathlib import Path

import yaml
from typer.testing import CliRunner

from eventlog.settings import Settings
from gateway.cli import app
from schemas import tasks

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_every_geogate_service_runs_a_real_command() -> None:
    runner = CliRunner()
    for name, service in compose()["services"].items():
        if name == "redis":
            continue
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


def test_the_dockerfile_copies_every_package_the_distribution_installs() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    for package in ("schemas", "eventlog", "gateway", "workers"):
        assert f"COPY {package} {package}" in dockerfile
