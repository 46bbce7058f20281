"""Rate limits shared by API replicas through Redis, and what happens when
Redis is not there.

Runs against the real Redis at ``$LONGDOC_TEST_REDIS_URL`` (default
redis://127.0.0.1:6379/0); skipped with the reason when it cannot be reached.
Every test counts under its own key prefix and deletes its keys at the end.
Two :class:`Authenticator` instances over one URL stand for two API replicas.
The TLS tests run a private ``redis-server`` that listens only over TLS
(:mod:`tests.redis_server`, certificates from :mod:`tests.pki`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid

import pytest
import redis

from longdoc.config import Settings
from longdoc.errors import AdminForbidden, ConfigError, RateLimited, Unauthorized
from longdoc.jobs import db
from longdoc.jobs.repo import KeyRepo
from longdoc.service.auth import Authenticator, rate_limit_storage_url
from tests.conftest import free_port
from tests.pki import Pki, pki  # noqa: F401  (fixture)
from tests.redis_server import REDIS_SERVER, Redis

REDIS_URL = os.environ.get("LONGDOC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="module")
def redis_client():
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {REDIS_URL} ({exc}); set LONGDOC_TEST_REDIS_URL to run these tests")
    yield client
    client.close()


@pytest.fixture
def key_prefix(redis_client):
    """A prefix no other test (or Celery) uses; its keys are deleted after."""
    prefix = f"longdoc-test-{uuid.uuid4().hex[:12]}"
    yield prefix
    keys = list(redis_client.scan_iter(match=f"{prefix}:*"))
    if keys:
        redis_client.delete(*keys)


@pytest.fixture
def keys(tmp_path):
    url = f"sqlite:///{tmp_path}/jobs.db"
    db.migrate(url)
    engine = db.make_engine(url)
    yield KeyRepo(db.session_factory(engine))
    engine.dispose()


def replica(keys: KeyRepo, url: str, key_prefix: str, ca_file: str | None = None, **limits: int) -> Authenticator:
    return Authenticator(keys, rate_per_minute=limits.get("rate", 100), failures_per_minute=limits.get("failures", 30),
                         admin_token="a" * 32, storage_url=url, key_prefix=key_prefix, storage_tls_ca_file=ca_file)


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory, pki):
    """A private Redis that speaks TLS only (no plain port)."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    server = Redis(tmp_path_factory.mktemp("redis-tls"), tls=pki)
    server.start()
    yield server
    server.stop()


def bearer(plaintext: str) -> str:
    return f"Bearer {plaintext}"


def test_replicas_share_one_keys_limit(keys, key_prefix, redis_client):
    row, plaintext = keys.create("acme", rate_limit_per_minute=5)
    a, b = (replica(keys, REDIS_URL, key_prefix) for _ in range(2))
    for auth in (a, a, a, b, b):
        assert auth.authenticate(bearer(plaintext), "10.0.0.1").id == row.id
    for auth in (a, b):
        with pytest.raises(RateLimited) as refused:
            auth.authenticate(bearer(plaintext), "10.0.0.1")
        assert 1 <= refused.value.context["retry_after"] <= 61
    assert a.storage_errors == b.storage_errors == 0
    assert list(redis_client.scan_iter(match=f"{key_prefix}:*"))  # counted in Redis, under the prefix


def test_replicas_share_the_failed_auth_throttle(keys, key_prefix):
    _, plaintext = keys.create("acme")
    a, b = (replica(keys, REDIS_URL, key_prefix, failures=3) for _ in range(2))
    for auth in (a, b, a):
        with pytest.raises(Unauthorized):
            auth.authenticate(bearer("ld_wrong"), "10.0.0.2")
    for auth in (a, b):  # three failures in all: a wrong key is refused 429 on both replicas
        with pytest.raises(RateLimited) as refused:
            auth.authenticate(bearer("ld_wrong"), "10.0.0.2")
        assert 1 <= refused.value.context["retry_after"] <= 61
        assert auth.authenticate(bearer(plaintext), "10.0.0.2")  # a good key from that address is served
    with pytest.raises(AdminForbidden):  # the admin token's failures are counted apart
        b.check_admin(bearer("x" * 32), "10.0.0.2")
    assert a.authenticate(bearer(plaintext), "10.0.0.3")  # other addresses are not


def test_a_dead_store_fails_open_fast_and_is_counted(keys, key_prefix, caplog):
    _, plaintext = keys.create("acme", rate_limit_per_minute=1)
    auth = replica(keys, f"redis://127.0.0.1:{free_port()}/0", key_prefix)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="longdoc.auth"):
        for _ in range(5):
            assert auth.authenticate(bearer(plaintext), "10.0.0.4")  # over 1/minute, but nothing counts
    assert time.monotonic() - started < 2.0
    assert auth.storage_errors >= 5
    assert len([r for r in caplog.records if r.name == "longdoc.auth"]) == 1  # one warning, not one per request


def test_a_hanging_store_slows_few_requests(keys, key_prefix):
    """A store that accepts connections and never answers: each call gives
    up after the socket timeout, and the store is left alone for a while."""
    _, plaintext = keys.create("acme")
    with socket.create_server(("127.0.0.1", 0)) as silent:
        auth = replica(keys, f"redis://127.0.0.1:{silent.getsockname()[1]}/0", key_prefix)
        started = time.monotonic()
        for _ in range(5):
            assert auth.authenticate(bearer(plaintext), "10.0.0.5")
        assert time.monotonic() - started < 2.0
        assert auth.storage_errors >= 5


class Outage:
    """A TCP relay to Redis that can be taken down and brought back on the
    same port, standing for a Redis restart."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._sockets: list[socket.socket] = []
        self._server: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def up(self) -> None:
        self._server = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def down(self) -> None:
        for s in [self._server, *self._sockets]:
            if s is not None:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
        self._server, self._sockets = None, []

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass


def test_counting_resumes_when_the_store_comes_back(keys, key_prefix):
    _, plaintext = keys.create("acme", rate_limit_per_minute=2)
    target = redis.Redis.from_url(REDIS_URL).connection_pool.connection_kwargs
    outage = Outage((target.get("host", "127.0.0.1"), target.get("port", 6379)))
    outage.up()
    try:
        auth = replica(keys, outage.url, key_prefix)
        auth.storage_retry_seconds = 0.2
        assert auth.authenticate(bearer(plaintext), "10.0.0.6")  # 1 of 2, counted
        outage.down()
        for _ in range(3):
            assert auth.authenticate(bearer(plaintext), "10.0.0.6")  # uncounted
        assert auth.storage_errors >= 3
        outage.up()
        time.sleep(0.3)
        errors = auth.storage_errors
        assert auth.authenticate(bearer(plaintext), "10.0.0.6")  # 2 of 2: the first count survived
        with pytest.raises(RateLimited):
            auth.authenticate(bearer(plaintext), "10.0.0.6")
        assert auth.storage_errors == errors
    finally:
        outage.down()


def test_memory_storage_is_the_default_and_counts_per_instance(keys):
    _, plaintext = keys.create("acme", rate_limit_per_minute=1)
    a, b = (Authenticator(keys, rate_per_minute=100, failures_per_minute=30) for _ in range(2))
    assert a.authenticate(bearer(plaintext), "10.0.0.7") and b.authenticate(bearer(plaintext), "10.0.0.7")
    with pytest.raises(RateLimited):
        a.authenticate(bearer(plaintext), "10.0.0.7")


def test_an_unknown_storage_scheme_is_a_config_error(keys):
    with pytest.raises(ConfigError, match="rate_limit_storage_url"):
        Authenticator(keys, rate_per_minute=1, failures_per_minute=1, storage_url="nosuch://x")


def test_an_asyncio_storage_is_a_config_error(keys):
    """The authenticator counts synchronously: an ``async+`` store would count nothing."""
    with pytest.raises(ConfigError, match=r"async\+memory:// is an asyncio store"):
        Authenticator(keys, rate_per_minute=1, failures_per_minute=1, storage_url="async+memory://")


@pytest.mark.parametrize(("queue", "service", "expected"), [
    ({}, {}, "memory://"),
    ({"backend": "celery", "broker_url": "redis://broker:6379/0"}, {}, "redis://broker:6379/0"),
    ({"backend": "celery", "broker_url": "rediss://:pw@broker:6380/2"}, {}, "rediss://:pw@broker:6380/2"),
    ({"backend": "celery", "broker_url": "amqp://guest:guest@mq:5672//"},
     {"rate_limit_storage_url": "redis://counts:6379/1"}, "redis://counts:6379/1"),
    ({}, {"rate_limit_storage_url": "redis://counts:6379/1"}, "redis://counts:6379/1"),
])
def test_storage_url_follows_the_queue_backend(queue, service, expected):
    assert rate_limit_storage_url(Settings(queue=queue, service=service)) == expected


def test_celery_on_amqp_needs_an_explicit_storage_url():
    settings = Settings(queue={"backend": "celery", "broker_url": "amqp://guest:guest@mq:5672//"})
    with pytest.raises(ConfigError) as refused:
        rate_limit_storage_url(settings)
    assert "service.rate_limit_storage_url" in refused.value.hint


# --- over TLS (rediss:// and queue.tls_ca_file) ----------------------------------------


def test_replicas_count_over_tls_with_the_ca_file(keys, tls_redis, pki):
    row, plaintext = keys.create("acme", rate_limit_per_minute=3)
    settings = Settings(queue={"backend": "celery", "broker_url": tls_redis.url, "tls_ca_file": str(pki.ca)})
    url = rate_limit_storage_url(settings)  # the broker's Redis, over TLS
    assert url == tls_redis.url and url.startswith("rediss://")
    a, b = (replica(keys, url, "longdoc-tls", settings.queue.tls_ca_file) for _ in range(2))
    for auth in (a, b, a):
        assert auth.authenticate(bearer(plaintext), "10.0.1.1").id == row.id
    with pytest.raises(RateLimited):
        b.authenticate(bearer(plaintext), "10.0.1.1")
    assert a.storage_errors == b.storage_errors == 0
    counted = redis.Redis.from_url(tls_redis.url, ssl_ca_certs=str(pki.ca))
    assert list(counted.scan_iter(match="longdoc-tls:*"))  # the counts live in the TLS Redis
    counted.close()


@pytest.mark.parametrize("ca", ["other", "system"])
def test_a_tls_store_whose_certificate_is_not_trusted_is_not_used(keys, tls_redis, pki, ca):
    """The server's certificate is checked: against another CA (or the
    system's, which never signed it) the store fails, open, like a dead one."""
    _, plaintext = keys.create("acme", rate_limit_per_minute=1)
    auth = replica(keys, tls_redis.url, "longdoc-tls-untrusted", str(pki.other_ca) if ca == "other" else None)
    for _ in range(3):
        assert auth.authenticate(bearer(plaintext), "10.0.1.2")  # over 1/minute, but nothing could count
    assert auth.storage_errors >= 3


def test_an_unreadable_tls_ca_file_is_a_config_error(keys, tmp_path):
    with pytest.raises(ConfigError, match="queue.tls_ca_file"):
        replica(keys, "rediss://127.0.0.1:6380/0", "x", str(tmp_path / "missing.pem"))
    assert replica(keys, REDIS_URL, "x", str(tmp_path / "missing.pem"))  # not read for plain redis://
