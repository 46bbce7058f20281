"""LocalStore: keys cannot escape the root, writes are atomic, big objects
stream, prefixes delete exactly their folder."""

from __future__ import annotations

import hashlib
import io
import os
import tracemalloc

import pytest

from longdoc.errors import InvalidObjectKey, ObjectNotFound, StorageError
from longdoc.storage import LocalStore

BAD_KEYS = [
    "", "/etc/passwd", "../outside", "a/../../outside", "a//b", "a/", ".hidden", "a/./b", "a/..",
    "a\\..\\b", "nul\x00byte", "line\nbreak", "x" * 256, "/".join(["a"] * 600),
]


@pytest.fixture
def store(tmp_path):
    return LocalStore(tmp_path / "root")


@pytest.mark.parametrize("key", BAD_KEYS)
def test_hostile_keys_are_refused_by_every_method(store, tmp_path, key):
    calls = [
        lambda: store.put_bytes(key, b"x"),
        lambda: store.put_stream(key, io.BytesIO(b"x")),
        lambda: store.put_file(key, __file__),
        lambda: store.get_bytes(key),
        lambda: store.open_read(key),
        lambda: store.exists(key),
        lambda: store.size(key),
        lambda: store.delete(key),
    ]
    if key != "a/":  # a folder prefix may end with one "/"
        calls.append(lambda: store.delete_prefix(key))
        if key != "":  # list("") lists everything
            calls.append(lambda: list(store.list(key)))
    for call in calls:
        with pytest.raises(InvalidObjectKey):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root"]
    assert list(store.list()) == []


def test_objects_round_trip(store):
    store.put_bytes("tenants/acme/a.json", b'{"x": 1}')
    assert store.get_bytes("tenants/acme/a.json") == b'{"x": 1}'
    assert store.exists("tenants/acme/a.json") and store.size("tenants/acme/a.json") == 8
    with store.open_read("tenants/acme/a.json") as f:
        assert f.read() == b'{"x": 1}'
    store.put_bytes("tenants/acme/a.json", b"new")
    assert store.get_bytes("tenants/acme/a.json") == b"new"
    store.put_bytes("unicodé/ключ", b"")
    assert store.get_bytes("unicodé/ключ") == b""


def test_put_file_copies_and_reports_the_size(store, tmp_path):
    src = tmp_path / "upload.pdf"
    src.write_bytes(b"%PDF-1.7 fake")
    assert store.put_file("k/original", src) == 13
    src.write_bytes(b"changed")
    assert store.get_bytes("k/original") == b"%PDF-1.7 fake"


def test_missing_objects_raise_object_not_found(store):
    store.put_bytes("a/b", b"x")
    for call in (lambda: store.get_bytes("a/c"), lambda: store.open_read("a/c"), lambda: store.size("a/c"),
                 lambda: store.get_bytes("a"), lambda: store.size("a"), lambda: store.get_bytes("a/b/c")):
        with pytest.raises(ObjectNotFound) as info:
            call()
        assert info.value.http_status == 404
    assert not store.exists("a") and not store.exists("a/c")
    assert store.delete("a/c") is False


def test_list_is_sorted_and_bounded_by_folder(store):
    for key in ["t/j1/b", "t/j1/a", "t/j1/sub/c", "t/j10/x", "u/y"]:
        store.put_bytes(key, b"")
    assert list(store.list("t/j1")) == ["t/j1/a", "t/j1/b", "t/j1/sub/c"]
    assert list(store.list("t/j1/")) == ["t/j1/a", "t/j1/b", "t/j1/sub/c"]
    assert list(store.list()) == ["t/j1/a", "t/j1/b", "t/j1/sub/c", "t/j10/x", "u/y"]
    assert list(store.list("t/j1/a")) == ["t/j1/a"]
    assert list(store.list("nothing/here")) == []
    store.put_bytes("s/a/x", b"")
    store.put_bytes("s/a-b", b"")
    assert list(store.list("s")) == ["s/a-b", "s/a/x"]  # whole-key order, as S3 lists


def test_delete_prefix_removes_exactly_that_folder(store):
    for key in ["t/j1/a", "t/j1/sub/b", "t/j10/c", "t/j1x"]:
        store.put_bytes(key, b"x")
    assert store.delete_prefix("t/j1") == 2
    assert list(store.list()) == ["t/j10/c", "t/j1x"]
    assert store.delete_prefix("t/j1") == 0
    assert store.delete_prefix("t/j1x") == 1
    with pytest.raises(InvalidObjectKey):
        store.delete_prefix("")
    assert list(store.list()) == ["t/j10/c"]


def test_delete_removes_one_object(store):
    store.put_bytes("a/b", b"x")
    store.put_bytes("a/c", b"y")
    assert store.delete("a/b") is True
    assert list(store.list()) == ["a/c"]


class _ProbingReader(io.RawIOBase):
    """An upload that, halfway through, checks what a reader of the store
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


def test_readers_see_the_old_object_until_the_new_one_is_complete(store):
    store.put_bytes("doc", b"old")
    seen = []
    upload = _ProbingReader([b"new-part-1", b"new-part-2"], lambda: seen.append((store.get_bytes("doc"), list(store.list()))))
    assert store.put_stream("doc", upload) == 20
    assert seen == [(b"old", ["doc"])]
    assert store.get_bytes("doc") == b"new-part-1new-part-2"


def test_a_new_key_does_not_exist_until_its_write_completes(store):
    seen = []
    upload = _ProbingReader([b"a", b"b"], lambda: seen.append(store.exists("fresh")))
    store.put_stream("fresh", upload)
    assert seen == [False] and store.get_bytes("fresh") == b"ab"


def test_a_broken_upload_leaves_the_old_object_and_no_debris(store):
    store.put_bytes("dir/doc", b"old")
    upload = _ProbingReader([b"new", b"more"], lambda: None, fail=True)
    with pytest.raises(ConnectionResetError):  # the caller's error, not a storage error
        store.put_stream("dir/doc", upload)
    assert store.get_bytes("dir/doc") == b"old"
    assert os.listdir(store.root / "dir") == ["doc"]


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
