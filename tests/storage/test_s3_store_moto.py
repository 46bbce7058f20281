"""S3Store against moto's S3 server, a stand-in for S3 (no real S3 service
is installable here), run in this process on 127.0.0.1 on a free port.

The fake credentials are handed to the boto3 clients explicitly; the
developer's environment is neither relied on nor changed. Each test gets its
own random prefix in one shared bucket (lifecycle tests their own bucket).
"""

from __future__ import annotations

import hashlib
import io
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import httpx
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from longdoc.config import S3Settings
from longdoc.errors import ConfigError, InvalidObjectKey, ObjectNotFound, StorageError
from longdoc.model import Page
from longdoc.storage import LocalStore, StoreCheckpoint, keys, store_from_url
from longdoc.storage.s3 import S3Store
from tests.storage.test_local_store import BAD_KEYS

BUCKET = "longdoc-moto"
FAKE_KEY_ID = "AKIDMOTOFAKE0000"
FAKE_SECRET = "moto-fake-secret-never-in-messages"
MB = 1 << 20


def _client(endpoint: str, **config):
    session = boto3.session.Session(aws_access_key_id=FAKE_KEY_ID, aws_secret_access_key=FAKE_SECRET,
                                    region_name="us-east-1")
    config = Config(signature_version="s3v4", s3={"addressing_style": "path"}, **config)
    return session.client("s3", endpoint_url=endpoint, config=config)


def _start_moto() -> tuple[ThreadedMotoServer, str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


@pytest.fixture(scope="session")
def moto_endpoint():
    server, endpoint = _start_moto()
    yield endpoint
    server.stop()


@pytest.fixture(scope="session")
def moto_client(moto_endpoint):
    client = _client(moto_endpoint)
    client.create_bucket(Bucket=BUCKET)
    return client


def _store(client, **kwargs) -> S3Store:
    kwargs.setdefault("multipart_threshold_mb", 5)
    return S3Store(BUCKET, f"test-{uuid.uuid4().hex[:12]}", client=client, **kwargs)


@pytest.fixture
def store(moto_client):
    return _store(moto_client, presign_seconds=60)


@contextmanager
def _requests_sent(client) -> Iterator[list[str]]:
    """Names of the operations ``client`` sends within the block."""
    sent: list[str] = []

    def record(model, **_) -> None:
        sent.append(model.name)

    client.meta.events.register("before-call.s3", record)
    try:
        yield sent
    finally:
        client.meta.events.unregister("before-call.s3", record)


# -- round trips -----------------------------------------------------------------


def test_moto_s3_objects_round_trip(store, moto_client, tmp_path):
    store.put_bytes("tenants/acme/a.json", b'{"x": 1}')
    assert store.get_bytes("tenants/acme/a.json") == b'{"x": 1}'
    assert store.exists("tenants/acme/a.json") and store.size("tenants/acme/a.json") == 8
    with store.open_read("tenants/acme/a.json") as f:
        assert f.read() == b'{"x": 1}'
    store.put_bytes("tenants/acme/a.json", b"new")
    assert store.get_bytes("tenants/acme/a.json") == b"new"
    store.put_bytes("unicodé/ключ", b"")
    assert store.get_bytes("unicodé/ключ") == b"" and store.size("unicodé/ключ") == 0
    src = tmp_path / "upload.pdf"
    src.write_bytes(b"%PDF-1.7 fake")
    assert store.put_file("k/original", src) == 13
    assert store.put_stream("k/stream", io.BytesIO(b"streamed")) == 8
    assert store.get_bytes("k/original") == b"%PDF-1.7 fake" and store.get_bytes("k/stream") == b"streamed"
    # the objects live under the store's prefix in the bucket
    listed = moto_client.list_objects_v2(Bucket=BUCKET, Prefix=f"{store.prefix}/")["Contents"]
    assert sorted(o["Key"][len(store.prefix) + 1:] for o in listed) == list(store.list())


def test_moto_s3_large_file_goes_up_in_parts_and_streams_back(store, moto_client, tmp_path):
    src = tmp_path / "big.pdf"
    data = os.urandom(12 * MB + 12345)
    src.write_bytes(data)
    assert store.put_file("big/original", src) == len(data)
    with open(src, "rb") as f:
        assert store.put_stream("big/stream", _NonSeekable(f)) == len(data)
    for key in ("big/original", "big/stream"):
        etag = moto_client.head_object(Bucket=BUCKET, Key=f"{store.prefix}/{key}")["ETag"]
        assert etag.strip('"').endswith("-3"), f"{key}: ETag {etag} is not a 3-part multipart upload's"
        assert store.size(key) == len(data)
        back, chunks = hashlib.sha256(), 0
        with store.open_read(key) as f:
            while chunk := f.read(MB):
                assert len(chunk) <= MB
                back.update(chunk)
                chunks += 1
        assert chunks >= 12 and back.hexdigest() == hashlib.sha256(data).hexdigest()


class _NonSeekable:
    """A stream that can only be read (like an HTTP request body)."""

    def __init__(self, f) -> None:
        self._f = f

    def read(self, n: int = -1) -> bytes:
        return self._f.read(n)


def test_moto_s3_missing_objects_raise_object_not_found(store):
    store.put_bytes("a/b", b"x")
    for call in (lambda: store.get_bytes("a/c"), lambda: store.open_read("a/c"), lambda: store.size("a/c"),
                 lambda: store.get_bytes("a"), lambda: store.size("a"), lambda: store.get_bytes("a/b/c")):
        with pytest.raises(ObjectNotFound) as info:
            call()
        assert info.value.http_status == 404
    assert not store.exists("a") and not store.exists("a/c")
    assert store.delete("a/c") is False


def test_moto_s3_an_unreadable_upload_file_is_a_storage_error(store, tmp_path):
    for path in (tmp_path / "missing.pdf", tmp_path):
        with pytest.raises(StorageError, match="Cannot read"):
            store.put_file("k/original", path)
    assert list(store.list()) == []


def test_moto_s3_a_missing_bucket_is_a_storage_error_not_a_missing_object(moto_client):
    store = S3Store("longdoc-moto-no-such-bucket", "p", client=moto_client)
    with pytest.raises(StorageError, match="NoSuchBucket"):
        store.put_bytes("a", b"x")
    with pytest.raises(StorageError, match="NoSuchBucket"):
        store.get_bytes("a")


# -- readers and broken uploads ----------------------------------------------------


class _ProbingReader(io.RawIOBase):
    """An upload that, at its second read, checks what a reader of the store
    sees, then optionally breaks (a client that went away)."""

    def __init__(self, chunks: list[bytes], probe, fail: bool = False) -> None:
        self.chunks, self.probe, self.fail, self.calls = list(chunks), probe, fail, 0

    def read(self, n: int = -1) -> bytes:
        self.calls += 1
        if self.calls == 2:
            self.probe()
            if self.fail:
                raise ConnectionResetError("client went away")
        return self.chunks.pop(0) if self.chunks else b""


def test_moto_s3_readers_see_the_old_object_until_the_new_one_is_complete(store):
    store.put_bytes("doc", b"old")
    seen = []
    upload = _ProbingReader([b"new-part-1", b"new-part-2"],
                            lambda: seen.append((store.get_bytes("doc"), list(store.list()))))
    assert store.put_stream("doc", upload) == 20
    assert seen == [(b"old", ["doc"])]
    assert store.get_bytes("doc") == b"new-part-1new-part-2"


@pytest.mark.parametrize("first_chunk_bytes", [3, 6 * MB], ids=["single-part", "multipart"])
def test_moto_s3_a_broken_upload_raises_the_callers_error_and_keeps_the_old_object(store, first_chunk_bytes):
    store.put_bytes("dir/doc", b"old")
    upload = _ProbingReader([b"n" * first_chunk_bytes, b"more"], lambda: None, fail=True)
    with pytest.raises(ConnectionResetError):  # the caller's error, not a storage error
        store.put_stream("dir/doc", upload)
    assert store.get_bytes("dir/doc") == b"old" and list(store.list()) == ["dir/doc"]


# -- prefixes ------------------------------------------------------------------------


def test_moto_s3_list_is_sorted_and_bounded_by_folder(store):
    for key in ["a/b", "a/b/c", "a/b/d/e", "a/bc", "a/b-c", "a/a", "t/j1/a", "t/j10/x"]:
        store.put_bytes(key, b"x")
    assert list(store.list("a/b")) == ["a/b", "a/b/c", "a/b/d/e"]  # never a/bc or a/b-c
    assert list(store.list("a/b/")) == ["a/b", "a/b/c", "a/b/d/e"]
    assert list(store.list("t/j1")) == ["t/j1/a"]
    assert list(store.list("a/b/c")) == ["a/b/c"]
    assert list(store.list("nothing/here")) == []
    everything = list(store.list())
    assert everything == sorted(everything) and len(everything) == 8
    assert list(store.list("a")) == ["a/a", "a/b", "a/b-c", "a/b/c", "a/b/d/e", "a/bc"]  # whole-key order


def test_moto_s3_stores_see_only_their_own_prefix(store, moto_client):
    other = _store(moto_client)
    store.put_bytes("x", b"mine")
    other.put_bytes("x", b"theirs")
    assert list(store.list()) == ["x"] and store.get_bytes("x") == b"mine"
    assert store.delete_prefix("x") == 1 and other.get_bytes("x") == b"theirs"


def test_moto_s3_delete_prefix_removes_exactly_that_folder(store):
    for key in ["a/b", "a/b/c", "a/b/d/e", "a/bc", "a/b-c"]:
        store.put_bytes(key, b"x")
    assert store.delete_prefix("a/b") == 3
    assert list(store.list()) == ["a/b-c", "a/bc"]
    assert store.delete_prefix("a/b") == 0
    assert store.delete_prefix("a/bc/") == 1
    with pytest.raises(InvalidObjectKey):
        store.delete_prefix("")
    assert list(store.list()) == ["a/b-c"]


def test_moto_s3_delete_removes_one_object(store):
    store.put_bytes("a/b", b"x")
    store.put_bytes("a/c", b"y")
    assert store.delete("a/b") is True
    assert store.delete("a/b") is False
    assert list(store.list()) == ["a/c"]


def test_moto_s3_delete_prefix_pages_through_more_than_1000_objects(store, moto_client):
    job = "tenants/acme/jobs/0123456789abcdef0123456789abcdef"
    backend = _moto_s3_backend()
    for n in range(1, 1206):  # straight into moto's in-process backend: 1205 PUTs over HTTP take ~9 s
        backend.put_object(BUCKET, f"{store.prefix}/{job}/checkpoint/pages/{n:06d}.json", b"{}")
    store.put_bytes("tenants/acme/jobs/0123456789abcdef0123456789abcdefX", b"neighbour")
    assert sum(1 for _ in store.list(job)) == 1205
    with _requests_sent(moto_client) as sent:
        assert store.delete_prefix(job) == 1205
    assert sent.count("DeleteObjects") == 2 and sent.count("ListObjectsV2") >= 2
    assert list(store.list()) == ["tenants/acme/jobs/0123456789abcdef0123456789abcdefX"]


def _moto_s3_backend():
    """moto's S3 backend behind the server (same process, default account)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    assert BUCKET in backend.buckets
    return backend


# -- keys ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", BAD_KEYS)
def test_moto_s3_hostile_keys_are_refused_before_any_request(moto_client, key):
    store = _store(moto_client, presign_seconds=60)
    calls = [
        lambda: store.put_bytes(key, b"x"),
        lambda: store.put_stream(key, io.BytesIO(b"x")),
        lambda: store.put_file(key, __file__),
        lambda: store.get_bytes(key),
        lambda: store.open_read(key),
        lambda: store.exists(key),
        lambda: store.size(key),
        lambda: store.delete(key),
        lambda: store.presigned_url(key),
    ]
    if key != "a/":  # a folder prefix may end with one "/"
        calls.append(lambda: store.delete_prefix(key))
        if key != "":  # list("") lists everything
            calls.append(lambda: list(store.list(key)))
    with _requests_sent(moto_client) as sent:
        for call in calls:
            with pytest.raises(InvalidObjectKey):
                call()
    assert sent == []


def test_moto_s3_store_prefix_follows_the_key_rules(moto_client):
    for prefix in ("../x", "/abs", "a//b", ".hidden"):
        with pytest.raises(InvalidObjectKey):
            S3Store(BUCKET, prefix, client=moto_client)
    assert S3Store(BUCKET, "p/", client=moto_client).prefix == "p"


# -- health, presigning, retention ---------------------------------------------------


def test_moto_s3_ping_checks_the_bucket_is_writable(store, moto_client):
    with _requests_sent(moto_client) as sent:
        store.ping()
    assert sent == ["HeadBucket", "PutObject", "DeleteObject"]
    assert list(store.list()) == []  # the probe object is gone
    with pytest.raises(StorageError):
        S3Store("longdoc-moto-no-such-bucket", "", client=moto_client).ping()


def test_moto_s3_ping_against_a_stopped_server_fails_fast():
    server, endpoint = _start_moto()
    server.stop()
    client = _client(endpoint, connect_timeout=0.5, read_timeout=1, retries={"mode": "standard", "max_attempts": 1})
    store = S3Store(BUCKET, "p", client=client)
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        store.ping()
    assert time.monotonic() - started < 5
    assert info.value.retryable and info.value.http_status == 503
    assert FAKE_SECRET not in str(info.value) and FAKE_SECRET not in repr(info.value.to_dict())
    with pytest.raises(StorageError):
        store.get_bytes("a")


def test_moto_s3_presigned_url_downloads_with_plain_http(store, moto_client):
    store.put_bytes("tenants/acme/exports/result.md", b"# Title\n")
    url = store.presigned_url("tenants/acme/exports/result.md")
    assert url and "X-Amz-Signature=" in url and "X-Amz-Expires=60" in url
    reply = httpx.get(url)
    assert reply.status_code == 200 and reply.content == b"# Title\n"
    assert "X-Amz-Expires=5" in store.presigned_url("tenants/acme/exports/result.md", expires_seconds=5)
    assert _store(moto_client).presigned_url("x") is None  # presigning not configured


def test_local_store_has_no_presigned_urls(tmp_path):
    store = LocalStore(tmp_path)
    store.put_bytes("a", b"x")
    assert store.presigned_url("a") is None and store.presigned_url("a", expires_seconds=5) is None


def test_moto_s3_apply_retention_adds_its_rule_and_keeps_the_others(moto_client):
    bucket = f"longdoc-moto-lifecycle-{uuid.uuid4().hex[:8]}"
    moto_client.create_bucket(Bucket=bucket)
    store = S3Store(bucket, "svc", client=moto_client)
    store.apply_retention(7)  # no lifecycle configuration yet
    assert _rules(moto_client, bucket) == {"longdoc-retention": ("svc/tenants/", 7)}
    other = {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 30}}
    moto_client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [other]})
    store.apply_retention(7)
    store.apply_retention(3)  # replaces its own rule, never duplicates it
    assert _rules(moto_client, bucket) == {"logs": ("logs/", 30), "longdoc-retention": ("svc/tenants/", 3)}
    with pytest.raises(ValueError):
        store.apply_retention(0)


def _rules(client, bucket: str) -> dict[str, tuple[str, int]]:
    rules = client.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    return {r["ID"]: (r["Filter"]["Prefix"], r["Expiration"]["Days"]) for r in rules if r["Status"] == "Enabled"}


# -- factory and checkpoint ----------------------------------------------------------


def test_moto_s3_factory_refuses_a_malformed_endpoint_url():
    with pytest.raises(ConfigError, match="Invalid endpoint"):
        store_from_url("s3://longdoc-moto/p", S3Settings(endpoint_url="not a url"))


def test_moto_s3_factory_builds_the_store_from_the_url_and_settings(moto_endpoint):
    settings = S3Settings(endpoint_url=moto_endpoint, region="eu-west-3", multipart_threshold_mb=8, presign_seconds=30)
    store = store_from_url("s3://longdoc-moto/some/prefix", settings)
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix, store.presign_seconds) == ("longdoc-moto", "some/prefix", 30)
    assert store.client.meta.endpoint_url == moto_endpoint and store.client.meta.region_name == "eu-west-3"
    assert store.multipart_threshold_mb == 8
    assert store_from_url("s3://longdoc-moto", settings).prefix == ""
    assert store_from_url("S3://longdoc-moto/p/", settings).prefix == "p"


@pytest.mark.parametrize("url", ["s3://", "s3:///prefix", "s3://Bad_Bucket/p", "s3://ab", "s3://a..b/p",
                                 "s3://bucket/a//b", "s3://bucket/../x", "s3://bucket/.hidden"])
def test_moto_s3_factory_refuses_urls_without_a_valid_bucket_or_prefix(url):
    with pytest.raises(ConfigError) as info:
        store_from_url(url, S3Settings())
    assert "s3://bucket" in info.value.hint


def test_moto_s3_store_checkpoint_saves_a_group_and_loads_its_pages(store):
    prefix = keys.checkpoint_prefix("acme", "0123456789abcdef0123456789abcdef")
    ck = StoreCheckpoint(store, prefix)
    ck.begin("fp1")
    ck.save_group(0, [Page(number=1, width=1, height=1), Page(number=2, width=1, height=1)], complete=True)
    ck.save_group(1, [Page(number=3, width=1, height=1)], complete=False)
    again = StoreCheckpoint(store, prefix)
    again.begin("fp1")
    assert again.group_done(0) and not again.group_done(1)
    assert again.load_page(2).number == 2 and again.load_page(4) is None
    assert again.done_pages() == [1, 2, 3]
    StoreCheckpoint(store, prefix).begin("fp2")  # another fingerprint wipes the checkpoint
    assert list(store.list(prefix)) == [f"{prefix}/manifest.json"]
