"""The optional second page engine: the ``tesseract`` command-line program.

Each page is piped to ``tesseract stdin stdout … tsv`` (Debian package
``tesseract-ocr`` plus one ``tesseract-ocr-<lang>`` package per language)
with ``OMP_THREAD_LIMIT`` set, and the TSV's words are grouped into lines by
their (block, paragraph, line) numbers. Pages run in parallel on a thread pool
of ``workers`` threads; the work itself happens in the subprocesses.

Per page, never an exception: a page whose run fails, exits non-zero or
exceeds ``page_timeout_seconds`` (the subprocess is killed) comes back with
``error.code == "engine_failed"``; the pages behind it are unaffected.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from types import TracebackType

from PIL import Image

from longdoc.engines.base import EngineCapabilities, PageImage, RecognizedPage
from longdoc.engines.results import check_image, confidence, failed_page, px_box
from longdoc.engines.window import Slot, in_order
from longdoc.errors import EngineUnavailable
from longdoc.model import BBox, Line

#: Peak RSS of one ``tesseract`` run besides its image, measured with
#: ``eng+chi_sim`` on A4 pages at 200 and 300 dpi (142 MB and 200 MB peak:
#: ≈ 96 MB + 4 × image bytes; ``eng`` alone needs ~45 MB less).
PROCESS_BYTES = 96 * 1024 * 1024
#: Image copies while a page is in flight: the caller's array, the encoded
#: BMP piped to tesseract, and ~4 × inside tesseract (32-bit, grey, binary).
IMAGE_COPIES = 6

_TSV_FIELDS = 12  # level page block par line word left top width height conf text
_WORD_LEVEL = "5"


def _apt_package(language: str) -> str:
    return "tesseract-ocr-" + language.lower().replace("_", "-")


@dataclass(frozen=True)
class TesseractInstall:
    """What ``tesseract --version`` / ``--list-langs`` report."""

    path: str
    version: str
    languages: frozenset[str]


@lru_cache(maxsize=8)
def probe(binary: str = "tesseract") -> TesseractInstall:
    """Find ``binary`` on PATH and read its version and installed languages.

    Raises :class:`EngineUnavailable` (with the Debian packages to install)
    if it is missing or does not run.
    """
    hint = "Install it with `apt-get install tesseract-ocr tesseract-ocr-chi-sim`, or choose the rapidocr engine."
    path = shutil.which(binary)
    if path is None:
        raise EngineUnavailable(f"The `{binary}` program is not on PATH.", hint=hint)
    try:
        version_out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        langs_out = subprocess.run([path, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EngineUnavailable(f"`{path}` did not run: {exc}", hint=hint) from exc
    first = (version_out.stdout or version_out.stderr).strip().splitlines()
    version = first[0].split()[-1] if first else "unknown"
    # "List of available languages in …:" then one code per line (no spaces)
    listed = (langs_out.stdout + "\n" + langs_out.stderr).splitlines()
    languages = frozenset(l.strip() for l in listed if l.strip() and " " not in l.strip())
    return TesseractInstall(path=path, version=version, languages=languages)


class TesseractEngine:
    """Tesseract over ``workers`` parallel subprocesses.

    ``languages`` is Tesseract's ``-l`` value (``"eng+chi_sim"``); ``psm`` its
    page segmentation mode (3: automatic, the best for whole pages);
    ``threads_per_worker`` becomes ``OMP_THREAD_LIMIT``. ``max_in_flight``
    (default ``2 × workers``) bounds pages pulled and not yet returned.
    """

    name = "tesseract"

    def __init__(
        self,
        workers: int,
        languages: str = "eng+chi_sim",
        threads_per_worker: int = 1,
        page_timeout_seconds: float = 300.0,
        *,
        psm: int = 3,
        binary: str = "tesseract",
        max_in_flight: int | None = None,
    ) -> None:
        if page_timeout_seconds <= 0:
            raise ValueError("page_timeout_seconds must be positive")
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.workers = max(1, workers)
        self.languages = languages
        self.threads_per_worker = max(1, threads_per_worker)
        self.page_timeout_seconds = page_timeout_seconds
        self.psm = psm
        self.binary = binary
        self.max_in_flight = max_in_flight or 2 * self.workers
        self.capabilities = EngineCapabilities(languages=tuple(languages.split("+")))
        self._install: TesseractInstall | None = None
        self._threads: ThreadPoolExecutor | None = None

    @property
    def version(self) -> str:
        """``tesseract-<version>/<languages>``, once the program has been found."""
        try:
            install = self._install or probe(self.binary)
        except EngineUnavailable:
            return f"tesseract-unavailable/{self.languages}"
        return f"tesseract-{install.version}/{self.languages}"

    def load(self) -> None:
        """Check the program and every requested language; start the threads.

        Idempotent. Raises :class:`EngineUnavailable` naming the Debian
        packages to install.
        """
        if self._threads is not None:
            return
        install = probe(self.binary)
        missing = [l for l in self.languages.split("+") if l not in install.languages]
        if missing:
            packages = " ".join(_apt_package(l) for l in missing)
            raise EngineUnavailable(
                f"Tesseract language data missing: {', '.join(missing)} "
                f"(installed: {', '.join(sorted(install.languages)) or 'none'}).",
                hint=f"Install it with `apt-get install tesseract-ocr {packages}`, or choose other languages.",
            )
        self._install = install
        self._threads = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tesseract")

    def close(self) -> None:
        """Stop the threads (running pages finish first). Idempotent."""
        if self._threads is not None:
            threads, self._threads = self._threads, None
            threads.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> TesseractEngine:
        self.load()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def recognize(
        self, pages: Iterable[PageImage], max_in_flight: int | None = None
    ) -> Iterator[RecognizedPage]:
        """Recognize ``pages`` lazily (≤ ``max_in_flight`` pulled and not yet
        yielded), one :class:`RecognizedPage` per page, in input order.

        Loads on first use (may raise :class:`EngineUnavailable`).
        """
        self.load()
        with closing(in_order(pages, self._submit, _window(self.max_in_flight, max_in_flight))) as window:
            for head, _rest in window:
                yield head.future.result()  # _recognize_page never raises

    def workspace_bytes(self, page: PageImage) -> int:
        """Image copies in flight plus one tesseract process's own memory."""
        return IMAGE_COPIES * page.nbytes + PROCESS_BYTES

    def _submit(self, page: PageImage) -> Slot:
        assert self._threads is not None, "engine not loaded"
        return Slot(page=page, future=self._threads.submit(self._recognize_page, page))

    def _recognize_page(self, page: PageImage) -> RecognizedPage:
        t0 = time.perf_counter()
        try:
            tsv = self._run(page)
        except Exception as exc:  # timeouts, non-zero exits, bad images
            message = _describe(exc, self.page_timeout_seconds)
            return failed_page(page, message, engine=self.name, version=self.version, seconds=time.perf_counter() - t0)
        return RecognizedPage(
            page=page.page,
            width_pt=page.width_pt,
            height_pt=page.height_pt,
            lines=parse_tsv(tsv, page),
            seconds=time.perf_counter() - t0,
            engine=self.name,
            engine_version=self.version,
        )

    def _run(self, page: PageImage) -> str:
        """Run tesseract on one page; its TSV output (raises on failure)."""
        assert self._install is not None, "engine not loaded"
        check_image(page.image)
        encoded = io.BytesIO()
        Image.fromarray(page.image).save(encoded, format="BMP")
        command = [
            self._install.path, "stdin", "stdout",
            "--dpi", str(round(page.dpi)), "--psm", str(self.psm), "-l", self.languages, "tsv",
        ]  # fmt: skip
        env = {**os.environ, "OMP_THREAD_LIMIT": str(self.threads_per_worker)}
        done = subprocess.run(
            command, input=encoded.getvalue(), capture_output=True, env=env, timeout=self.page_timeout_seconds
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"tesseract exited with status {done.returncode}: "
                + done.stderr.decode("utf-8", "replace").strip()[-300:]
            )
        return done.stdout.decode("utf-8", "replace")


def parse_tsv(tsv: str, page: PageImage) -> list[Line]:
    """Tesseract TSV → lines: words grouped by (block, paragraph, line) in
    output order; line box = union of its word boxes (points); confidence =
    mean word confidence / 100. Words are joined by a space except between
    two CJK characters (Tesseract reports each Chinese character as a word).
    """
    groups: dict[tuple[str, str, str], list[tuple[str, BBox, float]]] = {}
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < _TSV_FIELDS or cols[0] != _WORD_LEVEL:
            continue
        text = "\t".join(cols[11:]).strip()
        if not text:
            continue
        left, top, width, height = (float(c) for c in cols[6:10])
        box = px_box(page, left, top, left + width, top + height)
        groups.setdefault((cols[2], cols[3], cols[4]), []).append((text, box, float(cols[10])))
    lines = []
    for words in groups.values():
        text = words[0][0]
        for prev, (word, _, _) in zip(words, words[1:]):
            text += word if _is_cjk(prev[0][-1]) and _is_cjk(word[0]) else " " + word
        conf = sum(max(c, 0.0) for _, _, c in words) / len(words) / 100.0
        box = BBox.enclosing([b for _, b, _ in words])
        lines.append(Line(text=text, bbox=box, confidence=confidence(conf), page=page.page))
    return lines


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3000 <= code <= 0x303F  # CJK punctuation
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x20000 <= code <= 0x2FA1F
    )


def _describe(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"Tesseract did not finish the page within {timeout_s:g} s."
    text = str(exc).strip()
    return f"Tesseract failed on this page: {type(exc).__name__}" + (f": {text}" if text else "")


def _window(default: int, asked: int | None) -> int:
    """The in-flight window: the engine's own, narrowed by the caller's
    admission (never below one page)."""
    return default if asked is None else max(1, min(default, asked))
