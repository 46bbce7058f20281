"""The real-document corpus: born-digital manuals from Debian's TeX Live
documentation packages, scanned here as an office scanner would, their text
layer as truth.

Two sets, each fixed by a manifest: ``eng`` (``bench/real_corpus.tsv``,
English manuals) and ``zh`` (``bench/real_corpus_zh.tsv``, Chinese manuals
from ``texlive-lang-chinese``). A manifest fixes every document: Debian
package, path, SHA-256, the pages used, a ``dev`` / ``test`` split, what the
document covers (code listings, contents pages, tables, columns, footnotes,
small print) and, optionally, Tesseract's language for it (default ``eng``). It was written before any result was looked at;
documents are never special-cased by the engine, and changes are judged on
every document, the ``test`` ones included.

:func:`build` unpacks the packages (``apt-get download``, ``dpkg-deb -x``:
nothing is installed) when a file is missing, checks each file's SHA-256, and writes under the corpus folder
(``--dir``, default ``$LONGDOC_CORPUS_DIR`` or ``~/.cache/longdoc/real-corpus``,
``-zh`` appended for the Chinese set)
per document:

- ``<name>.born.pdf``: the selected pages of the original (born-digital);
- ``<name>.scan.pdf``: the same pages scanned: rendered at 200 dpi in grey,
  turned by a random angle within ±0.6° (seeded per page), stored as JPEG
  quality 75 in an image-only PDF of the original page size;
- ``<name>.truth.json``: per page its number in the original, its skew
  angle and its text layer (pdfium's text, in content order: TeX writes it
  in reading order, mostly).

Nothing is committed: the folder is rebuilt when the manifest or this
script changes. ``python bench/real_corpus.py [--set zh]`` builds it and prints a summary.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from tests.docgen.raster import office_scan

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "real_corpus.tsv"
#: the corpus sets: ``eng`` (English manuals) and ``zh`` (Chinese manuals)
MANIFESTS = {"eng": MANIFEST, "zh": HERE / "real_corpus_zh.tsv"}
DOC_ROOT = Path("/usr/share/doc/texlive-doc")
DPI = 200
MAX_SKEW = 0.6
JPEG_QUALITY = 75
#: bump when the way pages are scanned changes (the folder is rebuilt)
SCAN_VERSION = "1"


@dataclass(frozen=True)
class Entry:
    """One manifest row."""

    package: str
    path: str
    sha256: str
    pages: str
    split: str
    covers: str
    #: Tesseract's language for the OCRmyPDF side (``-l``)
    language: str = "eng"

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def source(self) -> Path:
        return DOC_ROOT / self.path

    @property
    def chinese(self) -> bool:
        return "chi" in self.language

    def page_numbers(self) -> list[int]:
        numbers: list[int] = []
        for part in self.pages.split(","):
            first, _, last = part.partition("-")
            numbers += range(int(first), int(last or first) + 1)
        return numbers


@dataclass(frozen=True)
class CorpusDoc:
    """One built document of the corpus."""

    entry: Entry
    scan: Path
    born: Path
    truth: list[dict]  # per page: {"number", "angle", "text"}

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def pages(self) -> int:
        return len(self.truth)


def load_manifest(path: Path = MANIFEST) -> list[Entry]:
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return [Entry(*row) for row in csv.reader(rows, delimiter="\t")]


def default_dir(corpus_set: str = "eng") -> Path:
    base = Path(os.environ.get("LONGDOC_CORPUS_DIR") or Path.home() / ".cache" / "longdoc" / "real-corpus")
    return base if corpus_set == "eng" else base.with_name(f"{base.name}-{corpus_set}")


def source_of(entry: Entry, root: Path) -> Path:
    """The original PDF: installed, or unpacked from its package under ``root``."""
    if entry.source.is_file():
        return entry.source
    return root / "debs" / entry.source.relative_to("/")


def ensure_packages(entries: list[Entry], root: Path) -> None:
    """Unpack the Debian packages whose files are missing under ``root/debs``
    (``apt-get download`` + ``dpkg-deb -x``: nothing is installed)."""
    missing = sorted({e.package for e in entries if not source_of(e, root).is_file()})
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise SystemExit(f"the Debian packages {' '.join(missing)} are needed (apt-get download ...)")
    debs = root / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    print(f"unpacking {' '.join(missing)} (Debian)", file=sys.stderr, flush=True)
    for package in missing:
        subprocess.run(["apt-get", "download", "-q", package], check=True, cwd=debs, stdout=subprocess.DEVNULL)
        for deb in debs.glob(f"{package}_*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(debs)], check=True)
            deb.unlink()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stamp(entries: list[Entry]) -> str:
    facts = [SCAN_VERSION, DPI, MAX_SKEW, JPEG_QUALITY, [e.__dict__ for e in entries]]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def build(root: Path | None = None, only: str | None = None, corpus_set: str = "eng") -> list[CorpusDoc]:
    """The corpus set ``corpus_set``, built under ``root`` if it is not there
    yet (``only``: the documents whose name contains it)."""
    root = root or default_dir(corpus_set)
    manifest = load_manifest(MANIFESTS[corpus_set])
    entries = [e for e in manifest if not only or only in e.name]
    stamp_file = root / "stamp"
    stamp = _stamp(manifest)
    if not stamp_file.is_file() or stamp_file.read_text() != stamp:
        for old in root.glob("*.*.*") if root.is_dir() else []:
            old.unlink()
    root.mkdir(parents=True, exist_ok=True)
    todo = [e for e in entries if not (root / f"{e.name}.truth.json").is_file()]
    if todo:
        ensure_packages(todo, root)
    for entry in todo:
        source = source_of(entry, root)
        digest = sha256_of(source)
        if digest != entry.sha256:
            raise SystemExit(f"{source}: SHA-256 {digest}, the manifest says {entry.sha256}")
        _build_one(entry, source, root)
    stamp_file.write_text(stamp)
    return [load_doc(e, root) for e in entries]


def load_doc(entry: Entry, root: Path) -> CorpusDoc:
    truth = json.loads((root / f"{entry.name}.truth.json").read_text(encoding="utf-8"))
    return CorpusDoc(entry, root / f"{entry.name}.scan.pdf", root / f"{entry.name}.born.pdf", truth)


def _build_one(entry: Entry, source: Path, root: Path) -> None:
    numbers = entry.page_numbers()
    original = pdfium.PdfDocument(str(source))
    born = pdfium.PdfDocument.new()
    born.import_pages(original, [n - 1 for n in numbers])
    born.save(str(root / f"{entry.name}.born.pdf"))
    born.close()
    texts = []
    for number in numbers:
        textpage = original[number - 1].get_textpage()
        texts.append(textpage.get_text_range().replace("\r\n", "\n"))
        textpage.close()
    original.close()
    angles = office_scan(root / f"{entry.name}.born.pdf", root / f"{entry.name}.scan.pdf", dpi=DPI,
                         max_skew=MAX_SKEW, jpeg_quality=JPEG_QUALITY, seed=f"{entry.name}:{SCAN_VERSION}")
    truth = [{"number": n, "angle": round(a, 4), "text": t} for n, a, t in zip(numbers, angles, texts)]
    (root / f"{entry.name}.truth.json").write_text(json.dumps(truth, ensure_ascii=False), encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--only", help="documents whose name contains this")
    ap.add_argument("--set", dest="corpus_set", choices=sorted(MANIFESTS), default="eng")
    args = ap.parse_args()
    docs = build(args.dir, args.only, args.corpus_set)
    print(f"{'document':<22}{'split':<6}{'pages':>6}{'chars':>9}  covers")
    for doc in docs:
        chars = sum(len(p["text"]) for p in doc.truth)
        print(f"{doc.name:<22}{doc.entry.split:<6}{doc.pages:>6}{chars:>9}  {doc.entry.covers}")
    print(f"{len(docs)} documents, {sum(d.pages for d in docs)} pages in {args.dir or default_dir(args.corpus_set)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
