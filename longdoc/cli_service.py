"""Service commands: ``longdoc serve``, ``longdoc submit``, ``longdoc worker``, ``longdoc keys``,
``longdoc audit``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from longdoc.config import Settings, load_settings
from longdoc.durations import format_duration, parse_duration
from longdoc.errors import EXIT_PARTIAL, InvalidOption, KeyNotFound, Unauthorized
from longdoc.export.formats import FILE_NAMES

if TYPE_CHECKING:  # imported where used: the commands that need no database start without SQLAlchemy
    from sqlalchemy.orm import Session, sessionmaker

    from longdoc.jobs.repo import KeyRepo

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config file (DESIGN §6 shape).")]
keys_app = typer.Typer(no_args_is_help=True, help="Manage API keys (admin; talks to the database directly).")
audit_app = typer.Typer(no_args_is_help=True, help="Read the access audit trail (admin; talks to the database "
                        "directly).")


def serve(
    config: ConfigOpt = None,
    host: Annotated[str | None, typer.Option("--host")] = None,
    port: Annotated[int | None, typer.Option("--port")] = None,
) -> None:
    """Run the HTTP service (API, embedded queue and workers) until SIGTERM/Ctrl-C: HTTPS with
    service.tls_certfile, /admin on a listener of its own with service.admin_port.
    On SIGTERM it stops intake and checkpoints running jobs; they resume on the next start."""
    import os

    from longdoc.runtime import procs
    from longdoc.service import listeners
    from longdoc.service.app import create_app
    from longdoc.service.connections import ConnectionPolicy
    from longdoc.service.logs import configure_logging

    settings = load_settings(config, overrides={"service": {"host": host, "port": port}})
    os.umask(0o077)  # the store, the database (webhook secrets) and the work folder are the service's alone
    configure_logging(settings.service.log_json)
    policy = ConnectionPolicy.from_settings(settings.service, procs.raise_open_files_limit())
    listeners.serve(settings, create_app(settings), policy)


def worker(
    config: ConfigOpt = None,
    queues: Annotated[str, typer.Option("--queues", help="Queues to take tasks from: cpu (ingest, render, "
                                        "assemble), engine (page groups), short (short documents, run whole).")]
    = "cpu,engine,short",
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Worker processes (each runs one "
                                             "task at a time).")] = 1,
    name: Annotated[str | None, typer.Option("--name", help="Node name (default: worker@<host>).")] = None,
) -> None:
    """Run a fleet worker (queue.backend: celery) until SIGTERM: it takes page groups and the
    other tasks of jobs from the broker. SIGTERM lets running tasks finish first (warm shutdown);
    a worker killed outright loses nothing (its tasks are taken back when their lease runs out)."""
    import os
    import socket

    from longdoc.errors import ConfigError
    from longdoc.jobs import db
    from longdoc.jobs.task_repo import QUEUES
    from longdoc.runner.celery_app import configure_worker, make_app
    from longdoc.service.logs import configure_logging

    settings = load_settings(config)
    if settings.queue.backend != "celery":
        raise ConfigError("longdoc worker needs queue.backend: celery (with queue.broker_url).",
                          hint="The embedded backend runs jobs inside `longdoc serve`; no worker is needed.")
    wanted = [q.strip() for q in queues.split(",") if q.strip()]
    unknown = sorted(set(wanted) - set(QUEUES))
    if not wanted or unknown:
        raise ConfigError(f"Unknown queue(s) {', '.join(unknown) or '(none)'}; use {', '.join(QUEUES)}.")
    os.umask(0o077)
    configure_logging(settings.service.log_json)
    engine = db.make_engine(settings.database.url)
    db.migrate(engine)   # idempotent and serialized: workers may start before the API
    engine.dispose()     # no connection crosses the fork into worker processes
    configure_worker(settings)
    app = make_app(settings)
    app.worker_main(["worker", "--queues", ",".join(wanted), "--concurrency", str(concurrency),
                     "--pool", "prefork", "--hostname", name or f"worker@{socket.gethostname()}",
                     "--without-gossip", "--without-mingle", "--loglevel", "INFO"])


def submit(
    files: Annotated[list[Path], typer.Argument(help="Documents to submit.", show_default=False)],
    wait: Annotated[bool, typer.Option("--wait", help="Wait for each job and download its results.")] = False,
    out: Annotated[Path, typer.Option("-o", "--out", help="Where --wait writes results.")] = Path("out"),
    format: Annotated[str, typer.Option("--format")] = "md,json,txt",
    pages: Annotated[str | None, typer.Option("--pages")] = None,
    ocr: Annotated[str | None, typer.Option("--ocr")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Server URL (client.url).")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="API key (client.api_key).")] = None,
    ca_file: Annotated[Path | None, typer.Option("--ca-file", help="CA the https server's certificate is "
                                                    "checked against (client.ca_file).")] = None,
    config: ConfigOpt = None,
) -> None:
    """Submit documents to a running service; with --wait, write OUT/<stem>.<fmt>. Over https the
    server's certificate is checked against client.ca_file; client.cert_file and client.key_file are
    sent to a server that asks for a client certificate."""
    from longdoc.client import LongdocClient

    settings = load_settings(config, overrides={"client": {"url": url, "api_key": api_key,
                                                           "ca_file": str(ca_file) if ca_file else None}})
    key = settings.client.api_key.get_secret_value() if settings.client.api_key else None
    if not key:
        raise Unauthorized("No API key: pass --api-key or set LONGDOC_CLIENT__API_KEY.")
    formats = [f.strip() for f in format.split(",") if f.strip()]
    options = {"formats": formats, **({"pages": pages} if pages else {}), **({"ocr": ocr} if ocr else {})}
    worst = 0
    to = settings.client
    with LongdocClient(to.url, key, ca_file=to.ca_file, cert_file=to.cert_file, key_file=to.key_file) as client:
        for path in files:
            job = client.submit(path, options=options)
            typer.echo(f"{path}: job {job['id']} {job['state']}")
            if not wait:
                continue
            job = client.wait(job["id"])
            typer.echo(f"{path}: {job['state']} ({job.get('pages_done')}/{job.get('pages_total')} pages)")
            if job["state"] in ("succeeded", "partial"):
                out.mkdir(parents=True, exist_ok=True)
                for fmt in formats:
                    dest = out / f"{path.stem}{FILE_NAMES[fmt]}"
                    client.result(job["id"], format=fmt, dest=dest)
                    typer.echo(f"{fmt}: {dest}")
            if job["state"] != "succeeded":
                worst = EXIT_PARTIAL
                if job.get("error"):
                    typer.echo(f"  [{job['error'].get('code')}] {job['error'].get('message')}", err=True)
    if worst:
        raise typer.Exit(worst)


def _sessions(config: Path | None) -> tuple[Settings, sessionmaker[Session]]:
    """The settings and a session factory on their database (migrated)."""
    from longdoc.jobs import db

    settings = load_settings(config)
    engine = db.make_engine(settings.database.url)
    db.migrate(engine)
    return settings, db.session_factory(engine)


def _repo(config: Path | None) -> tuple[Settings, KeyRepo]:
    """The settings and a KeyRepo on their database (migrated)."""
    from longdoc.jobs.repo import KeyRepo

    settings, sessions = _sessions(config)
    return settings, KeyRepo(sessions)


def _when(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "never"


ExpiresInOpt = Annotated[str | None, typer.Option(
    "--expires-in", help="The key stops working this long from now: 90d, 12h, 30m, 45s, 1d12h.")]


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant the key belongs to.")],
    rate_limit: Annotated[int | None, typer.Option("--rate-limit", help="Requests per minute.")] = None,
    expires_in: ExpiresInOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a key. The key is printed alone on the last line (shown once)."""
    lifetime = parse_duration(expires_in, what="--expires-in") if expires_in is not None else None
    _, keys = _repo(config)
    key, plaintext = keys.create(tenant, rate_limit_per_minute=rate_limit, expires_in=lifetime)
    typer.echo(f"id: {key.id}\ntenant: {key.tenant}\nexpires_at: {_when(key.expires_at)}\n"
               f"webhook_secret: {key.webhook_secret}")
    typer.echo(plaintext)


@keys_app.command("rotate")
def keys_rotate(
    key_id: Annotated[str, typer.Argument(help="The key to replace (its id, from `longdoc keys list`).")],
    grace: Annotated[str | None, typer.Option(
        "--grace", help="How long the old key keeps working: 7d, 12h, 0s (stops now). "
        "Default: service.key_rotation_grace.")] = None,
    expires_in: Annotated[str | None, typer.Option(
        "--expires-in", help="The new key's lifetime. Default: as long as the old key was made to last.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Replace a key: a new key for the same tenant, rate limit and webhook
    secret, printed alone on the last line (shown once); the old key keeps
    working until the end of the grace period, then gets 401 key_expired."""
    settings, keys = _repo(config)
    period = (parse_duration(grace, what="--grace", allow_zero=True) if grace is not None
              else settings.service.key_rotation_grace_delta)
    lifetime = parse_duration(expires_in, what="--expires-in") if expires_in is not None else None
    made = keys.rotate(key_id, grace=period, expires_in=lifetime)
    typer.echo(f"id: {made.key.id}\ntenant: {made.key.tenant}\nexpires_at: {_when(made.key.expires_at)}\n"
               f"replaces: {made.old.id}\ngrace: {format_duration(period)}\n"
               f"old_key_expires_at: {_when(made.old.expires_at)}\n"
               f"webhook_secret: {made.key.webhook_secret}")
    typer.echo(made.plaintext)


@keys_app.command("list")
def keys_list(tenant: Annotated[str | None, typer.Option("--tenant")] = None, config: ConfigOpt = None) -> None:
    """List keys, one JSON object a line (prefix only, never the key); state: active, expired or revoked."""
    from longdoc.jobs.repo import key_state

    _, keys = _repo(config)
    now = keys.now()
    for k in keys.list(tenant):
        typer.echo(json.dumps({"id": k.id, "tenant": k.tenant, "prefix": k.key_prefix,
                               "state": key_state(k, now).value, "revoked": k.revoked_at is not None,
                               "expires_at": k.expires_at.isoformat() if k.expires_at else None,
                               "replaced_by": k.replaced_by, "rate_limit_per_minute": k.rate_limit_per_minute,
                               "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None}))


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument()], config: ConfigOpt = None) -> None:
    """Revoke a key by id; requests with it get 401 from then on."""
    _, keys = _repo(config)
    if not keys.revoke(key_id):
        raise KeyNotFound(f"No key {key_id!r}.")
    typer.echo(f"revoked {key_id}")


@audit_app.command("list")
def audit_list(
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant's records.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only records at or after this ISO 8601 date "
                                                 "or time (no zone = UTC).")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many records (1 … 1000).")] = 100,
    config: ConfigOpt = None,
) -> None:
    """List audit records, newest first, one JSON object a line (who, from where, what, how it ended;
    never the key or document contents)."""
    from longdoc.audit.trail import MAX_LIST_LIMIT, AuditRepo, audit_public
    from longdoc.jobs.models import parse_utc

    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidOption(f"--limit must be 1 … {MAX_LIST_LIMIT}, not {limit}.",
                            hint="See `longdoc audit list --help`.")
    after = parse_utc(since) if since is not None else None
    _, sessions = _sessions(config)
    for event in AuditRepo(sessions).list(tenant, after, limit):
        typer.echo(json.dumps(audit_public(event)))
