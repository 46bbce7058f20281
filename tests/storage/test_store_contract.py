"""The ObjectStore contract (longdoc/storage/base.py), written once and run on
every store: the local folder (LocalStore) and S3 (S3Store against moto's S3
server, see conftest.py). Objects round trip, missing objects are
ObjectNotFound, listings are sorted and bounded by folder, deletes remove
exactly what they name, writes are atomic, hostile keys are refused by every
method before anything is touched, and the checkpoint works on top.

What only one store has (local: the temporary files, memory use, I/O
failures; S3: multipart parts, paging, presigned URLs, lifecycle rules, an
object named like a folder) is tested in test_local_store.py and
test_s3_store_moto.py.
"""

from __future__ import annotations

import io
from contextlib import contextmanager

import pytest

from longdoc.errors import InvalidObjectKey, ObjectNotFound, StorageError
from longdoc.model import Page
from longdoc.storage import LocalStore, StoreCheckpoint, keys
from tests.storage.conftest import ProbingReader, moto_store, requests_sent

BAD_KEYS = [
    "", "/etc/passwd", "../outside", "a/../../outside", "a//b", "a/", ".hidden", "a/./b", "a/..",
    "a\\..\\b", "nul\x00byte", "line\nbreak", "x" * 256, "/".join(["a"] * 600),
]


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    """A fresh, empty store of each kind (moto starts only for "s3")."""
    if request.param == "local":
        return LocalStore(tmp_path / "root")
    return moto_store(request.getfixturevalue("moto_client"), presign_seconds=60)


@contextmanager
def _nothing_touched(store, tmp_path):
    """The block leaves no trace underneath: no file created anywhere in the
    test's folder (local), no request sent at all (S3)."""
    if isinstance(store, LocalStore):
        before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        yield
        assert before == ["root"]
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    else:
        with requests_sent(store.client) as sent:
            yield
        assert sent == []


# -- keys ----------------------------------------------------------------------------


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
        lambda: store.presigned_url(key),
    ]
    if key != "a/":  # a folder prefix may end with one "/"
        calls.append(lambda: store.delete_prefix(key))
        if key != "":  # list("") lists everything
            calls.append(lambda: list(store.list(key)))
    with _nothing_touched(store, tmp_path):
        for call in calls:
            with pytest.raises(InvalidObjectKey):
                call()
    assert list(store.list()) == []


# -- round trips ---------------------------------------------------------------------


def test_objects_round_trip(store):
    store.put_bytes("tenants/acme/a.json", b'{"x": 1}')
    assert store.get_bytes("tenants/acme/a.json") == b'{"x": 1}'
    assert store.exists("tenants/acme/a.json") and store.size("tenants/acme/a.json") == 8
    with store.open_read("tenants/acme/a.json") as f:
        assert f.read() == b'{"x": 1}'
    store.put_bytes("tenants/acme/a.json", b"new")
    assert store.get_bytes("tenants/acme/a.json") == b"new" and store.size("tenants/acme/a.json") == 3
    store.put_bytes("unicodé/ключ", b"")
    assert store.get_bytes("unicodé/ключ") == b"" and store.size("unicodé/ключ") == 0
    assert store.put_stream("k/stream", io.BytesIO(b"streamed")) == 8
    assert store.get_bytes("k/stream") == b"streamed"
    assert list(store.list()) == ["k/stream", "tenants/acme/a.json", "unicodé/ключ"]


def test_put_file_copies_and_reports_the_size(store, tmp_path):
    src = tmp_path / "upload.pdf"
    src.write_bytes(b"%PDF-1.7 fake")
    assert store.put_file("k/original", src) == 13
    src.write_bytes(b"changed")
    assert store.get_bytes("k/original") == b"%PDF-1.7 fake" and store.size("k/original") == 13


def test_an_unreadable_upload_file_is_a_storage_error(store, tmp_path):
    for path in (tmp_path / "missing.pdf", tmp_path):
        with pytest.raises(StorageError, match="Cannot read"):
            store.put_file("k/original", path)
    assert list(store.list()) == []


def test_missing_objects_raise_object_not_found(store):
    store.put_bytes("a/b", b"x")
    for call in (lambda: store.get_bytes("a/c"), lambda: store.open_read("a/c"), lambda: store.size("a/c"),
                 lambda: store.get_bytes("a"), lambda: store.size("a"), lambda: store.get_bytes("a/b/c")):
        with pytest.raises(ObjectNotFound) as info:
            call()
        assert info.value.http_status == 404
    assert not store.exists("a") and not store.exists("a/c")
    assert store.delete("a/c") is False


# -- prefixes ------------------------------------------------------------------------


def test_list_is_sorted_and_bounded_by_folder(store):
    for key in ["t/j1/b", "t/j1/a", "t/j1/sub/c", "t/j10/x", "u/y",
                "a/b/c", "a/b/d/e", "a/bc", "a/b-c", "a/a", "s/a/x", "s/a-b"]:
        store.put_bytes(key, b"x")
    assert list(store.list("t/j1")) == ["t/j1/a", "t/j1/b", "t/j1/sub/c"]  # never t/j10
    assert list(store.list("t/j1/")) == ["t/j1/a", "t/j1/b", "t/j1/sub/c"]
    assert list(store.list("a/b")) == ["a/b/c", "a/b/d/e"]  # never a/bc or a/b-c
    assert list(store.list("a/b/")) == ["a/b/c", "a/b/d/e"]
    assert list(store.list("t/j1/a")) == ["t/j1/a"]  # an object's own name
    assert list(store.list("a/b/c")) == ["a/b/c"]
    assert list(store.list("nothing/here")) == []
    assert list(store.list()) == ["a/a", "a/b-c", "a/b/c", "a/b/d/e", "a/bc", "s/a-b", "s/a/x",
                                  "t/j1/a", "t/j1/b", "t/j1/sub/c", "t/j10/x", "u/y"]
    assert list(store.list("a")) == ["a/a", "a/b-c", "a/b/c", "a/b/d/e", "a/bc"]  # whole-key order, as S3 lists
    assert list(store.list("s")) == ["s/a-b", "s/a/x"]


def test_delete_prefix_removes_exactly_that_folder(store):
    for key in ["t/j1/a", "t/j1/sub/b", "t/j10/c", "t/j1x", "a/b/c", "a/b/d/e", "a/bc", "a/b-c"]:
        store.put_bytes(key, b"x")
    assert store.delete_prefix("t/j1") == 2
    assert store.delete_prefix("a/b/") == 2
    assert list(store.list()) == ["a/b-c", "a/bc", "t/j10/c", "t/j1x"]
    assert store.delete_prefix("t/j1") == 0 and store.delete_prefix("a/b") == 0
    assert store.delete_prefix("t/j1x") == 1  # an object's own name
    assert store.delete_prefix("a/bc/") == 1
    with pytest.raises(InvalidObjectKey):
        store.delete_prefix("")
    assert list(store.list()) == ["a/b-c", "t/j10/c"]


def test_delete_removes_one_object(store):
    store.put_bytes("a/b", b"x")
    store.put_bytes("a/c", b"y")
    assert store.delete("a/b") is True
    assert store.delete("a/b") is False
    assert list(store.list()) == ["a/c"] and not store.exists("a/b") and store.get_bytes("a/c") == b"y"


# -- atomic writes -------------------------------------------------------------------


def test_readers_see_the_old_object_until_the_new_one_is_complete(store):
    store.put_bytes("doc", b"old")
    seen = []
    upload = ProbingReader([b"new-part-1", b"new-part-2"],
                           lambda: seen.append((store.get_bytes("doc"), list(store.list()))))
    assert store.put_stream("doc", upload) == 20
    assert seen == [(b"old", ["doc"])]
    assert store.get_bytes("doc") == b"new-part-1new-part-2"


def test_a_new_key_does_not_exist_until_its_write_completes(store):
    seen = []
    upload = ProbingReader([b"a", b"b"], lambda: seen.append((store.exists("fresh"), list(store.list()))))
    assert store.put_stream("fresh", upload) == 2
    assert seen == [(False, [])] and store.get_bytes("fresh") == b"ab"


def test_a_broken_upload_raises_the_callers_error_and_keeps_the_old_object(store):
    store.put_bytes("dir/doc", b"old")
    upload = ProbingReader([b"new", b"more"], lambda: None, fail=True)
    with pytest.raises(ConnectionResetError):  # the caller's error, not a storage error
        store.put_stream("dir/doc", upload)
    assert store.get_bytes("dir/doc") == b"old" and list(store.list()) == ["dir/doc"]


# -- on top of the store -------------------------------------------------------------


def test_store_checkpoint_saves_a_group_and_loads_its_pages(store):
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
