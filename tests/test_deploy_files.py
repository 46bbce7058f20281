"""The deployment files (deploy/) stay true to the code: the configuration
loads, every longdoc command the compose file and the operator guide
(docs/operations.md) run is accepted by the CLI, every metric prometheus.yml
names is registered, the guide's connection arithmetic holds for the compose
file. What every page of docs/ names (settings, variables, defaults, metrics)
is checked by tests/test_docs.py, against the generated reference."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from longdoc.cli import app
from longdoc.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
GUIDE = ROOT / "docs" / "operations.md"
TOKEN = "t" * 32


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def _longdoc_services() -> dict[str, dict]:
    """Services built from the longdoc image (their command goes to its ENTRYPOINT)."""
    return {name: svc for name, svc in _compose()["services"].items()
            if str(svc.get("image", "")).startswith("longdoc")}


def _has_key(model: type[BaseModel], path: list[str]) -> bool:
    for i, part in enumerate(path):
        field = model.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
        if i < len(path) - 1:
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                return False
            model = annotation
    return True


def _env_key(name: str) -> list[str]:
    """LONGDOC_SECTION__KEY(__SUB) -> [section, key, sub]."""
    return [p.lower() for p in name[len("LONGDOC_"):].split("__")]


# -- the files parse ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["compose.yaml", "longdoc.yaml", "prometheus.yml"])
def test_yaml_files_parse(name: str) -> None:
    assert isinstance(yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8")), dict)


def test_dockerfile_runs_setup_as_documented() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert text.startswith("#") and "FROM python:3.11-slim-bookworm" in text
    assert "scripts/setup.sh" in text and (ROOT / "scripts" / "setup.sh").is_file()
    assert 'ENTRYPOINT [".venv/bin/longdoc"]' in text
    assert 'CMD ["serve", "--config", "/etc/longdoc/longdoc.yaml"]' in text
    assert "/healthz" in text and "USER longdoc" in text
    for copied in re.findall(r"^COPY (\S+)", text, flags=re.M):
        assert (ROOT / copied).exists(), copied


# -- the configuration ----------------------------------------------------------------


def test_fleet_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGDOC_SERVICE__ADMIN_TOKEN", TOKEN)
    settings = load_settings(DEPLOY / "longdoc.yaml")
    assert settings.service.admin_token is not None
    assert settings.service.admin_token.get_secret_value() == TOKEN
    assert settings.service.host == "0.0.0.0"
    assert settings.queue.backend == "celery"
    assert settings.queue.broker_url.startswith("redis://redis:")
    assert settings.database.url.startswith("postgresql+psycopg://")
    assert settings.storage.url == "s3://longdoc/prod"
    assert settings.storage.s3.endpoint_url == "http://minio:9000"
    assert settings.queue.redeliver_after_seconds > settings.queue.lease_seconds
    assert settings.queue.worker_metrics_port is not None


def test_fleet_config_loads_without_the_admin_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LONGDOC_SERVICE__ADMIN_TOKEN", raising=False)
    assert load_settings(DEPLOY / "longdoc.yaml").service.admin_token is None


def test_compose_matches_the_config() -> None:
    config = yaml.safe_load((DEPLOY / "longdoc.yaml").read_text(encoding="utf-8"))
    services = _compose()["services"]
    for needed in ("api", "worker-cpu", "worker-engine", "postgres", "redis", "minio", "minio-init", "prometheus"):
        assert needed in services, needed
    assert "--appendonly yes" in " ".join(services["redis"]["command"])
    bucket = config["storage"]["url"].removeprefix("s3://").split("/")[0]
    assert f"store/{bucket}" in " ".join(services["minio-init"]["command"])
    host = config["queue"]["broker_url"].split("//")[1].split(":")[0]
    assert host in services
    for name, svc in _longdoc_services().items():
        assert "/etc/longdoc/longdoc.yaml" in " ".join(svc["volumes"]), name
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD"} <= set(svc["environment"]), name


def test_compose_environment_names_real_settings() -> None:
    for name, svc in _longdoc_services().items():
        for var in svc["environment"]:
            if var.startswith("LONGDOC_"):
                assert _has_key(Settings, _env_key(var)), f"{name}: {var}"


# -- the commands ---------------------------------------------------------------------


def _commands() -> list[tuple[str, list[str]]]:
    found = [(name, [str(a) for a in svc["command"]]) for name, svc in _longdoc_services().items()]
    text = (DEPLOY / "compose.yaml").read_text(encoding="utf-8") + GUIDE.read_text(encoding="utf-8")
    for line in re.findall(r"docker compose .*? run --rm (?:--no-deps )?api (.+)", text):
        found.append(("run api", shlex.split(line)))
    return found


def test_every_longdoc_service_has_a_command() -> None:
    assert set(_longdoc_services()) >= {"api", "worker-cpu", "worker-engine"}
    assert len([c for c in _commands() if c[0] == "run api"]) >= 2  # compose's comment and the guide


@pytest.mark.parametrize("origin,args", _commands())
def test_command_is_accepted_by_the_cli(origin: str, args: list[str]) -> None:
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, f"{origin}: longdoc {' '.join(args)}\n{result.output}"


def test_worker_queues_exist() -> None:
    from longdoc.jobs.task_repo import QUEUES

    for name, args in _commands():
        if "--queues" in args:
            queues = args[args.index("--queues") + 1].split(",")
            assert set(queues) <= set(QUEUES), name


# -- the guide ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def registered_metrics(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Metric family names of an API container as the fleet runs it
    (queue.backend celery; nothing connects to the broker while it is built),
    on SQLite and a local store. Counters' families lack ``_total``."""
    from longdoc.service.container import Container

    tmp = tmp_path_factory.mktemp("container")
    settings = load_settings(overrides={
        "database": {"url": f"sqlite:///{tmp / 'longdoc.db'}"},
        "storage": {"url": f"file://{tmp / 'store'}"},
        "queue": {"backend": "celery", "broker_url": "redis://127.0.0.1:9/0"},
        "service": {"work_dir": str(tmp / "work"), "rate_limit_storage_url": "memory://"},
    })
    container = Container(settings)
    try:
        return {family.name for family in container.metrics.registry.collect()}
    finally:
        container.stop()


def _guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def test_prometheus_comment_metrics_are_registered(registered_metrics: set[str]) -> None:
    text = (DEPLOY / "prometheus.yml").read_text(encoding="utf-8")
    for name in set(re.findall(r"\blongdoc_[a-z0-9_]*[a-z0-9]", text)):
        assert re.sub(r"_total$", "", name) in registered_metrics, name


def test_guide_database_arithmetic() -> None:
    """The guide's per-process connection figure is pool_size + max_overflow,
    and compose's PostgreSQL has room for every longdoc process of the file."""
    from longdoc.config import DatabaseSettings

    per_process = DatabaseSettings().pool_size + DatabaseSettings().max_overflow
    assert f"× {per_process} below `max_connections`" in _guide()
    services = _compose()["services"]
    processes = services["api"]["deploy"]["replicas"] + sum(
        int(args[args.index("--concurrency") + 1]) for name, args in _commands()
        if name.startswith("worker") and "--concurrency" in args)
    max_connections = int(next(a.split("=", 1)[1] for a in services["postgres"]["command"]
                               if a.startswith("max_connections=")))
    assert processes * per_process <= max_connections
    assert f"need at most {processes * per_process} of its {max_connections}" in _guide()


# -- worker metrics ---------------------------------------------------------------------


def _worker_scrape_ports(job: dict) -> dict[str, set[int]]:
    ports: dict[str, set[int]] = {}
    for sd in job.get("dns_sd_configs", []):
        for name in sd["names"]:
            ports.setdefault(name, set()).add(int(sd["port"]))
    for static in job.get("static_configs", []):
        for target in static["targets"]:
            host, _, port = target.rpartition(":")
            ports.setdefault(host, set()).add(int(port))
    return ports


def test_prometheus_scrapes_every_worker_process() -> None:
    """Each longdoc worker service is scraped on queue.worker_metrics_port
    (deploy/longdoc.yaml, or the service's own override) + every pool index
    0 .. --concurrency - 1, and on nothing else."""
    config = yaml.safe_load((DEPLOY / "longdoc.yaml").read_text(encoding="utf-8"))
    base = config["queue"]["worker_metrics_port"]
    assert isinstance(base, int)
    prometheus = yaml.safe_load((DEPLOY / "prometheus.yml").read_text(encoding="utf-8"))
    scraped: dict[str, set[int]] = {}
    for job in prometheus["scrape_configs"]:
        for host, ports in _worker_scrape_ports(job).items():
            scraped.setdefault(host, set()).update(ports)
    workers = {name: svc for name, svc in _longdoc_services().items() if svc["command"][0] == "worker"}
    assert set(workers) >= {"worker-cpu", "worker-engine"}
    for name, svc in workers.items():
        args = [str(a) for a in svc["command"]]
        concurrency = int(args[args.index("--concurrency") + 1]) if "--concurrency" in args else 1
        port = int(svc["environment"].get("LONGDOC_QUEUE__WORKER_METRICS_PORT", base))
        assert scraped.get(name) == set(range(port, port + concurrency)), name
    api_port = config["service"]["port"]
    assert scraped.get("api") == {api_port}


def test_worker_metrics_are_not_published() -> None:
    for name, svc in _longdoc_services().items():
        if svc["command"][0] == "worker":
            assert "ports" not in svc, f"{name} publishes ports"


def test_a_worker_process_serves_the_counters_of_its_work() -> None:
    """What a worker process serves on queue.worker_metrics_port (the same
    Metrics the worker runtime builds) holds the counters only workers move
    on the fleet."""
    from longdoc.runner.metrics import Metrics

    families = {family.name for family in Metrics().registry.collect()}
    for name in ("longdoc_pages", "longdoc_stage_seconds", "longdoc_jobs_finished", "longdoc_webhook_attempts"):
        assert name in families
    assert any(f.startswith("process_") for f in families)
