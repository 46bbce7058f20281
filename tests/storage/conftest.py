"""Fixtures and helpers shared by the storage tests: moto's S3 server (a
stand-in for S3; no real S3 service is installable here), run in this
process on 127.0.0.1 on a free port, and the probing upload that checks what
readers see halfway through a write.

The fake credentials are handed to the boto3 clients explicitly; the
developer's environment is neither relied on nor changed. Each S3 test gets
its own random prefix in one shared bucket (lifecycle tests their own bucket).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from longdoc.storage.s3 import S3Store

BUCKET = "longdoc-moto"
FAKE_KEY_ID = "AKIDMOTOFAKE0000"
FAKE_SECRET = "moto-fake-secret-never-in-messages"


def s3_client(endpoint: str, **config):
    """A boto3 S3 client for ``endpoint`` with the fake credentials."""
    session = boto3.session.Session(aws_access_key_id=FAKE_KEY_ID, aws_secret_access_key=FAKE_SECRET,
                                    region_name="us-east-1")
    config = Config(signature_version="s3v4", s3={"addressing_style": "path"}, **config)
    return session.client("s3", endpoint_url=endpoint, config=config)


def start_moto() -> tuple[ThreadedMotoServer, str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


@pytest.fixture(scope="session")
def moto_endpoint():
    server, endpoint = start_moto()
    yield endpoint
    server.stop()


@pytest.fixture(scope="session")
def moto_client(moto_endpoint):
    client = s3_client(moto_endpoint)
    client.create_bucket(Bucket=BUCKET)
    return client


def moto_store(client, **kwargs) -> S3Store:
    """An S3Store under a fresh random prefix of the shared bucket (5 MB
    multipart threshold unless told otherwise)."""
    kwargs.setdefault("multipart_threshold_mb", 5)
    return S3Store(BUCKET, f"test-{uuid.uuid4().hex[:12]}", client=client, **kwargs)


@contextmanager
def requests_sent(client) -> Iterator[list[str]]:
    """Names of the operations ``client`` sends within the block."""
    sent: list[str] = []

    def record(model, **_) -> None:
        sent.append(model.name)

    client.meta.events.register("before-call.s3", record)
    try:
        yield sent
    finally:
        client.meta.events.unregister("before-call.s3", record)


class ProbingReader(io.RawIOBase):
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
