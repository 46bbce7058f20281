"""S3Store only: what the shared contract (test_store_contract.py) cannot
say about every store, against moto's S3 server (conftest.py). Large objects
go up in parts, a broken multipart upload leaves nothing behind, stores see
only their own prefix, an object may share its name with a folder, deletes
page through more than 1000 objects, a missing bucket or stopped server is a
StorageError, presigned URLs, lifecycle retention, the s3:// factory, and an
https endpoint under a private CA (``storage.s3.ca_file``).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import threading
import time
import uuid

import httpx
import pytest
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from longdoc.config import S3Settings
from longdoc.errors import ConfigError, InvalidObjectKey, StorageError
from longdoc.storage import store_from_url
from longdoc.storage.s3 import S3Store
from tests.pki import pki  # noqa: F401  (fixture)
from tests.storage.conftest import (
    BUCKET,
    FAKE_KEY_ID,
    FAKE_SECRET,
    ProbingReader,
    moto_store,
    requests_sent,
    s3_client,
    start_moto,
)

MB = 1 << 20


@pytest.fixture
def store(moto_client):
    return moto_store(moto_client, presign_seconds=60)


# -- uploads and buckets -------------------------------------------------------------


def test_moto_s3_objects_live_under_the_store_prefix_in_the_bucket(store, moto_client, tmp_path):
    src = tmp_path / "upload.pdf"
    src.write_bytes(b"%PDF-1.7 fake")
    store.put_bytes("tenants/acme/a.json", b'{"x": 1}')
    store.put_bytes("unicodé/ключ", b"")
    assert store.put_file("k/original", src) == 13
    listed = moto_client.list_objects_v2(Bucket=BUCKET, Prefix=f"{store.prefix}/")["Contents"]
    assert sorted(o["Key"][len(store.prefix) + 1:] for o in listed) == list(store.list()) == [
        "k/original", "tenants/acme/a.json", "unicodé/ключ"]
    body = moto_client.get_object(Bucket=BUCKET, Key=f"{store.prefix}/k/original")["Body"].read()
    assert body == b"%PDF-1.7 fake"


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


def test_moto_s3_a_missing_bucket_is_a_storage_error_not_a_missing_object(moto_client):
    store = S3Store("longdoc-moto-no-such-bucket", "p", client=moto_client)
    with pytest.raises(StorageError, match="NoSuchBucket"):
        store.put_bytes("a", b"x")
    with pytest.raises(StorageError, match="NoSuchBucket"):
        store.get_bytes("a")


# -- broken multipart uploads --------------------------------------------------------


def test_moto_s3_a_broken_multipart_upload_keeps_the_old_object_and_no_parts(store, moto_client):
    store.put_bytes("dir/doc", b"old")
    upload = ProbingReader([b"n" * (6 * MB), b"more"], lambda: None, fail=True)  # past the 5 MB threshold
    with pytest.raises(ConnectionResetError):  # the caller's error, not a storage error
        store.put_stream("dir/doc", upload)
    assert store.get_bytes("dir/doc") == b"old" and list(store.list()) == ["dir/doc"]
    uploads = moto_client.list_multipart_uploads(Bucket=BUCKET, Prefix=f"{store.prefix}/").get("Uploads", [])
    assert uploads == []  # aborted, not left to collect parts


# -- prefixes and deletes ------------------------------------------------------------


def test_moto_s3_an_object_may_share_its_name_with_a_folder(store):
    # impossible in a local folder; on S3 the prefix matches the object of its exact name too
    for key in ["a/b", "a/b/c", "a/b/d/e", "a/bc", "a/b-c", "a/a"]:
        store.put_bytes(key, b"x")
    assert list(store.list("a/b")) == ["a/b", "a/b/c", "a/b/d/e"]  # never a/bc or a/b-c
    assert list(store.list("a/b/")) == ["a/b", "a/b/c", "a/b/d/e"]
    assert list(store.list("a")) == ["a/a", "a/b", "a/b-c", "a/b/c", "a/b/d/e", "a/bc"]  # whole-key order
    assert store.get_bytes("a/b") == b"x" and store.size("a/b") == 1
    assert store.delete_prefix("a/b") == 3
    assert list(store.list()) == ["a/a", "a/b-c", "a/bc"]


def test_moto_s3_stores_see_only_their_own_prefix(store, moto_client):
    other = moto_store(moto_client)
    store.put_bytes("x", b"mine")
    other.put_bytes("x", b"theirs")
    assert list(store.list()) == ["x"] and store.get_bytes("x") == b"mine"
    assert store.delete_prefix("x") == 1 and other.get_bytes("x") == b"theirs"


def test_moto_s3_delete_prefix_pages_through_more_than_1000_objects(store, moto_client):
    job = "tenants/acme/jobs/0123456789abcdef0123456789abcdef"
    backend = _moto_s3_backend()
    for n in range(1, 1206):  # straight into moto's in-process backend: 1205 PUTs over HTTP take ~9 s
        backend.put_object(BUCKET, f"{store.prefix}/{job}/checkpoint/pages/{n:06d}.json", b"{}")
    store.put_bytes("tenants/acme/jobs/0123456789abcdef0123456789abcdefX", b"neighbour")
    assert sum(1 for _ in store.list(job)) == 1205
    with requests_sent(moto_client) as sent:
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


# -- the store's prefix --------------------------------------------------------------


def test_moto_s3_store_prefix_follows_the_key_rules(moto_client):
    for prefix in ("../x", "/abs", "a//b", ".hidden"):
        with pytest.raises(InvalidObjectKey):
            S3Store(BUCKET, prefix, client=moto_client)
    assert S3Store(BUCKET, "p/", client=moto_client).prefix == "p"


# -- health, presigning, retention ---------------------------------------------------


def test_moto_s3_ping_checks_the_bucket_is_writable(store, moto_client):
    with requests_sent(moto_client) as sent:
        store.ping()
    assert sent == ["HeadBucket", "PutObject", "DeleteObject"]
    assert list(store.list()) == []  # the probe object is gone
    with pytest.raises(StorageError):
        S3Store("longdoc-moto-no-such-bucket", "", client=moto_client).ping()


def test_moto_s3_ping_against_a_stopped_server_fails_fast():
    server, endpoint = start_moto()
    server.stop()
    client = s3_client(endpoint, connect_timeout=0.5, read_timeout=1, retries={"mode": "standard", "max_attempts": 1})
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
    assert moto_store(moto_client).presigned_url("x") is None  # presigning not configured


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


# -- factory -------------------------------------------------------------------------


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


# -- an https endpoint under a private CA (storage.s3.ca_file) ----------------------------


@pytest.fixture(scope="module")
def https_moto(pki):
    """moto's S3 app behind https, with the server certificate of tests.pki."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    server = make_server("127.0.0.1", 0, DomainDispatcherApplication(create_backend_app), threaded=True,
                         request_handler=MotoRequestHandler, ssl_context=context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def test_an_https_endpoint_is_checked_against_storage_s3_ca_file(https_moto, pki, monkeypatch, tmp_path):
    for name, value in (("AWS_ACCESS_KEY_ID", FAKE_KEY_ID), ("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)):
        monkeypatch.setenv(name, value)
    url = "s3://longdoc-https/tls"

    def store(**s3):
        return store_from_url(url, S3Settings(endpoint_url=https_moto, region="us-east-1", **s3))

    trusting = store(ca_file=str(pki.ca))
    trusting.client.create_bucket(Bucket="longdoc-https")
    trusting.put_bytes("tenants/acme/a.json", b'{"x": 1}')
    assert trusting.get_bytes("tenants/acme/a.json") == b'{"x": 1}'
    trusting.ping()
    for s3 in ({}, {"ca_file": str(pki.other_ca)}):  # botocore's CA bundle; another CA
        with pytest.raises(StorageError):
            store(**s3).get_bytes("tenants/acme/a.json")
    with pytest.raises(ConfigError, match=r"storage\.s3\.ca_file"):
        store(ca_file=str(tmp_path / "missing.pem"))
