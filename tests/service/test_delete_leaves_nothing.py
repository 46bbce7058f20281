"""What a document leaves on the served machine's disk: after ``DELETE``
nothing, and while it is uploaded one copy, in the work folder.

A real ``longdoc serve`` process with its own ``TMPDIR``; "on disk" is every
regular file under the server's folder (config, log, database, store, work
folder), under its ``TMPDIR``, and every file its processes (the server,
its sandbox children) hold open, a deleted or anonymous one included (a
spool Python's ``tempfile`` makes has no name). Each document carries a
random word in its text and random bytes after its ``%%EOF``: found in a
file, that file holds the document's text or bytes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import string
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fpdf import FPDF

from longdoc.storage.local import LocalStore
from tests.service.helpers import accepted, submit, wait_for, wait_terminal

#: no OCR and no region model: the text layer is read (the test needs no model)
OPTIONS = {"formats": ["md", "json", "txt", "chunks"], "ocr": "off", "regions": False}
MIB = 2**20
#: how long a deleted job is watched for late writes (a task under way when it was cancelled)
SETTLE_S = 3.0


class Marked:
    """A text-layer PDF whose text holds ``word`` on every page and whose
    bytes hold ``tail`` (after ``%%EOF``, then the trailer again: readers
    read the last one). Its page streams are compressed, so ``word`` is
    not in its bytes: a file holding ``word`` holds text read from it."""

    def __init__(self, folder: Path, pages: int = 2, padding_bytes: int = 0) -> None:
        self.word = "".join(secrets.choice(string.ascii_lowercase) for _ in range(20))
        self.tail = b"%longdoc-test-" + secrets.token_hex(16).encode()
        pdf = FPDF()
        pdf.set_font("helvetica", size=12)
        for n in range(1, pages + 1):
            pdf.add_page()
            pdf.multi_cell(0, 8, f"Page {n}. The inspection code is {self.word} and it is printed on every page.")
        raw = bytes(pdf.output())
        assert self.word.encode() not in raw, "the page streams are not compressed"
        trailer = raw[raw.rindex(b"startxref"):]
        self.path = folder / f"doc-{secrets.token_hex(4)}.pdf"
        self.path.write_bytes(raw + self.tail + b"\n" + os.urandom(padding_bytes) + b"\n" + trailer)

    def found(self, places: list[Path], session: int) -> dict[str, list[str]]:
        """Where the document's text (``word``) and bytes (``tail``) are on disk."""
        needles = {"text": self.word.encode(), "bytes": self.tail}
        hits: dict[str, list[str]] = {"text": [], "bytes": []}
        for name, data in _files(places, session):
            for what, needle in needles.items():
                if needle in data:
                    hits[what].append(name)
        return hits


def _files(places: list[Path], session: int) -> Iterator[tuple[str, bytes]]:
    """(name, content) of every regular file under ``places`` and every one
    that a process of ``session`` holds open (each file once)."""
    seen: set[tuple[int, int]] = set()

    def read(path: str, name: str) -> Iterator[tuple[str, bytes]]:
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            with open(path, "rb") as f:
                yield name, f.read()
        except (FileNotFoundError, PermissionError):
            return  # removed meanwhile (a temporary file), or not ours

    for root in places:
        for path in sorted(root.rglob("*")):
            yield from read(str(path), str(path))
    for fd, target in _open_files(session):
        yield from read(fd, f"{target} (held open)")


def _open_files(session: int) -> list[tuple[str, str]]:
    """``(/proc/PID/fd/N, what it points to)`` for the processes of ``session``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) != session:
                continue
            for fd in (proc / "fd").iterdir():
                out.append((str(fd), os.readlink(fd)))
        except (FileNotFoundError, PermissionError, ProcessLookupError, IndexError):
            continue
    return out


@pytest.fixture
def own_tmpdir(monkeypatch) -> Iterator[Path]:
    """A TMPDIR of its own for the servers this test starts: short, as the
    forkserver's socket lives there and a Unix socket's path has at most
    107 bytes (a pytest folder under xdist is longer)."""
    tmp = Path(tempfile.mkdtemp(prefix="ld-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def served(start_server, own_tmpdir):
    """A server whose processes have their own TMPDIR (``srv.tmp``)."""
    tmp = own_tmpdir
    srv = start_server()
    srv.tmp = tmp
    srv.places = [srv.root, tmp]
    return srv


def test_a_deleted_job_leaves_nothing_of_its_document_on_disk(served, tmp_path):
    doc = Marked(tmp_path)
    key = served.create_key("erase")
    with served.http(key) as http:
        job = accepted(submit(http, doc.path, OPTIONS, name="contract.pdf"))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        assert doc.word in http.get(f"/v1/jobs/{job['id']}/result", params={"format": "md"}).text
        image = http.get(f"/v1/jobs/{job['id']}/pages/2/image", params={"dpi": 50})
        assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"

        # what the grep sees before the delete: the original (in the store and
        # the viewer's copy), the text in the exports and checkpoints
        before = doc.found(served.places, served.proc.pid)
        assert any("/store/" in p for p in before["bytes"]), before
        assert any("viewer-originals" in p for p in before["bytes"]), before
        assert any("/store/" in p for p in before["text"]), before

        assert http.delete(f"/v1/jobs/{job['id']}").status_code == 204
        assert http.get(f"/v1/jobs/{job['id']}").status_code == 404
        assert doc.found(served.places, served.proc.pid) == {"text": [], "bytes": []}
        # the viewer has let go of it too: the page is not served from a copy
        assert http.get(f"/v1/jobs/{job['id']}/pages/2/image").status_code == 404
    assert served.proc.poll() is None


def test_an_expired_job_leaves_nothing_of_its_document_on_disk(start_server, own_tmpdir, tmp_path):
    """Retention ends a job as a delete does: its store data, and its copies
    in the work folder (the page viewer's) too."""
    tmp = own_tmpdir
    srv = start_server(service={"retention_hours": 0.002})  # 7.2 s; the retention pass runs every 1 s
    places = [srv.root, tmp]
    doc = Marked(tmp_path)
    key = srv.create_key("expire")
    with srv.http(key) as http:
        job = accepted(submit(http, doc.path, OPTIONS))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        assert http.get(f"/v1/jobs/{job['id']}/pages/1/image", params={"dpi": 50}).status_code == 200
        assert any("viewer-originals" in p for p in doc.found(places, srv.proc.pid)["bytes"])
        deadline = time.monotonic() + 60
        while http.get(f"/v1/jobs/{job['id']}").json()["state"] != "expired":
            assert time.monotonic() < deadline, "the job did not expire"
            time.sleep(0.5)
        time.sleep(2)  # the pass that expired it removes its files right after
        assert doc.found(places, srv.proc.pid) == {"text": [], "bytes": []}


def test_a_job_deleted_while_it_runs_leaves_nothing_once_it_has_stopped(served, tmp_path):
    doc = Marked(tmp_path, pages=300)
    key = served.create_key("erase-running")
    with served.http(key) as http:
        job = accepted(submit(http, doc.path, OPTIONS))
        running = wait_for(http, job["id"], lambda j: j["state"] == "running" and j["pages_done"] > 0)
        assert running["state"] == "running", running
        assert http.get(f"/v1/jobs/{job['id']}/pages/1/image", params={"dpi": 50}).status_code == 200
        r = http.delete(f"/v1/jobs/{job['id']}")
        assert r.status_code == 202 and r.json()["id"] == job["id"]
        assert wait_terminal(http, job["id"])["state"] == "cancelled"
        assert http.delete(f"/v1/jobs/{job['id']}").status_code == 204
        assert http.get(f"/v1/jobs/{job['id']}").status_code == 404
        assert doc.found(served.places, served.proc.pid) == {"text": [], "bytes": []}
        time.sleep(SETTLE_S)  # and no task of it still under way writes anything afterwards
        assert doc.found(served.places, served.proc.pid) == {"text": [], "bytes": []}


def test_an_upload_is_written_once_in_the_work_folder_and_never_in_tmpdir(served, tmp_path):
    doc = Marked(tmp_path, padding_bytes=6 * MIB)
    body = doc.path.read_bytes()
    boundary = secrets.token_hex(12)
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode()
    end = f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"options\"\r\n\r\n".encode() \
        + f'{{"formats": ["txt"], "ocr": "off", "regions": false}}\r\n--{boundary}--\r\n'.encode()
    work = served.data / "work"
    during: list[dict[str, list[str]]] = []

    def in_tmpdir() -> set[str]:
        """Files in the server's TMPDIR, and those its processes hold open there."""
        return ({str(p) for p in served.tmp.rglob("*") if p.is_file()}
                | {target for _, target in _open_files(served.proc.pid) if target.startswith(str(served.tmp))})

    already = in_tmpdir()  # onnxruntime leaves a session id file (.ses) there at start-up

    def chunks() -> Iterator[bytes]:
        yield head
        half = len(body) // 2
        for i in range(0, half, 256 * 1024):
            yield body[i:min(i + 256 * 1024, half)]
        # half of the document is sent: see where the server has put it so far
        deadline = time.monotonic() + 20
        while not (found := doc.found(served.places, served.proc.pid))["bytes"] and time.monotonic() < deadline:
            time.sleep(0.2)
        during.append(found | {"tmpdir": sorted(in_tmpdir() - already)})
        for i in range(half, len(body), 256 * 1024):
            yield body[i:i + 256 * 1024]
        yield end

    key = served.create_key("uploads")
    with served.http(key, timeout=120) as http:
        r = http.post("/v1/jobs", content=chunks(), headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(len(head) + len(body) + len(end))})
        job = accepted(r)
        assert job["size_bytes"] == len(body)

        seen = during[0]
        assert seen["tmpdir"] == [], f"the upload was spooled in TMPDIR: {seen}"
        assert len(seen["bytes"]) == 1 and seen["bytes"][0].startswith(f"{work}/upload-"), seen

        # accepted: the store has it, no upload folder keeps a copy (the job's
        # task may have made its own in WORK/originals by now), TMPDIR never had one
        after = doc.found(served.places, served.proc.pid)["bytes"]
        assert [p for p in after if "/store/" in p], after
        assert [p for p in after if "/store/" not in p and f"{work}/originals/" not in p] == [], after
        assert [p for p in work.iterdir() if p.name.startswith("upload-")] == []
        assert wait_terminal(http, job["id"])["state"] == "succeeded"


def test_a_jobs_folder_in_the_store_goes_whole_while_its_tasks_delete_in_it(tmp_path):
    """The race behind a deleted job's checkpoint left in the store: the
    job's tasks remove their own prefix (``work/``) as it is deleted, and
    the delete stopped at the first file gone meanwhile, keeping the rest."""
    for trial in range(5):
        store = LocalStore(tmp_path / f"store-{trial}")
        job = store.root / "tenants" / "t" / "jobs" / "j"
        for sub in [f"work/{g}" for g in range(7)] + ["checkpoint/pages"]:
            (job / sub).mkdir(parents=True)
            for n in range(300):
                (job / sub / f"{n:06d}").write_bytes(b"page")
        task = threading.Thread(target=store.delete_prefix, args=("tenants/t/jobs/j/work",))
        task.start()
        store.delete_prefix("tenants/t/jobs/j")
        task.join()
        assert [p for p in store.root.rglob("*") if p.is_file()] == [], f"trial {trial}"
