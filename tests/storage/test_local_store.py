"""LocalStore only: what the shared contract (test_store_contract.py) cannot
say about every store. A broken write leaves no temporary file behind, the
store is private whatever the umask, big objects stream in small memory, the
store's own I/O failures are StorageError, ping notices a vanished root, and
a folder has no presigned URLs."""

from __future__ import annotations

import hashlib
import os
import stat
import tracemalloc

import pytest

from longdoc.errors import StorageError
from longdoc.storage import LocalStore
from tests.storage.conftest import ProbingReader


@pytest.fixture
def store(tmp_path):
    return LocalStore(tmp_path / "root")


def test_a_broken_upload_leaves_no_debris(store):
    store.put_bytes("dir/doc", b"old")
    upload = ProbingReader([b"new", b"more"], lambda: None, fail=True)
    with pytest.raises(ConnectionResetError):
        store.put_stream("dir/doc", upload)
    assert os.listdir(store.root / "dir") == ["doc"]  # not even a hidden .tmp- file
    assert store.get_bytes("dir/doc") == b"old"


def test_the_root_objects_and_their_folders_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        store = LocalStore(tmp_path / "root")
        store.put_bytes("tenants/acme/a.json", b"x")
        assert store.put_file("tenants/acme/b.pdf", __file__) > 0
    finally:
        os.umask(old)
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {"root": 0o700, "root/tenants": 0o700, "root/tenants/acme": 0o700,
                     "root/tenants/acme/a.json": 0o600, "root/tenants/acme/b.pdf": 0o600}


def test_fifty_megabytes_stream_in_and_out_in_small_memory(store, tmp_path):
    src = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()
    with open(src, "wb") as f:
        for i in range(50):
            chunk = block[i:] + block[:i]
            f.write(chunk)
            digest.update(chunk)
    tracemalloc.start()
    try:
        with open(src, "rb") as f:
            assert store.put_stream("big/original", f) == 50 << 20
        assert store.put_file("big/copy", src) == 50 << 20
        back = hashlib.sha256()
        with store.open_read("big/original") as f:
            while chunk := f.read(1 << 20):
                back.update(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert back.hexdigest() == digest.hexdigest()
    assert store.size("big/copy") == 50 << 20
    assert peak < 8 << 20, f"peak traced memory {peak / 2**20:.1f} MiB for a 50 MiB object"


def test_io_failures_are_storage_errors(store):
    store.put_bytes("a", b"x")  # a file where a folder would have to be
    with pytest.raises(StorageError) as info:
        store.put_bytes("a/b", b"y")
    assert info.value.retryable and info.value.http_status == 503
    assert store.get_bytes("a") == b"x"


def test_ping_fails_when_the_root_is_gone(store):
    store.ping()
    store.root.rmdir()
    with pytest.raises(StorageError):
        store.ping()


def test_local_store_has_no_presigned_urls(store):
    store.put_bytes("a", b"x")
    assert store.presigned_url("a") is None and store.presigned_url("a", expires_seconds=5) is None
