"""longdoc against OCRmyPDF on the real-document corpus, in one run.

The corpus (``bench/real_corpus.py``, manifest ``bench/real_corpus.tsv``):
pages of real born-digital manuals from Debian's TeX Live documentation,
scanned at 200 dpi grey with ±0.6° skew as JPEG quality 75 in image-only
PDFs; their text layer is the truth.

Per document, each tool runs as a cold CLI process on the scanned PDF, the
order of the tools alternating from one document to the next:

- ``ocrmypdf -j <cores> -l eng --force-ocr --output-type pdf --sidecar``
  (Tesseract 5, ``OMP_THREAD_LIMIT=1``);
- ``longdoc parse --format json,txt`` with its defaults, and once more per
  ``--recognizer`` variant asked (``inference.rapidocr.recognizer`` set through the
  environment).

Printed per document and overall (pages of a document joined in order: a
paragraph continued over a page break may come out on its first page):

- ``CER``: of everything read against the text layer: for longdoc every
  JSON block in reading order, furniture and figure text included (nothing
  is left out for being hidden from the reader); for OCRmyPDF its sidecar;
- ``F1``: order-free word F1 of the same text (a multiset of words: text
  layers are not always in reading order);
- ``recall``: recall of the words a reader sees: longdoc's txt plus its
  furniture blocks (running headers, footers, page numbers); OCRmyPDF's
  sidecar;
- ``p/s``: pages per second of the whole run, and the ratio to OCRmyPDF.

Both sides are normalized alike before comparing: NFKC, typographic quotes
and dashes to ASCII, a word broken at a line end joined (``docu-`` +
``ment``), whitespace runs to one space; words are ``\\w+`` runs, each CJK
character a word of its own. ``--set zh`` runs the Chinese manuals
(``bench/real_corpus_zh.tsv``; OCRmyPDF with ``-l chi_sim+eng``), where the
CER is taken with all whitespace removed.

    python bench/real_docs.py [--set eng|zh] [--only NAME] [--split dev|test] [--recognizer small,tiny]
                              [--tree before=/path/to/old/worktree]
                              [--no-ocrmypdf] [--max-pages N] [--keep DIR] [--show-diff NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from _common import ROOT

from real_corpus import CorpusDoc, build

FURNITURE = {"header", "footer", "page_number"}
_FANCY = {"‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "“": '"', "”": '"', "„": '"', "″": '"',
          "–": "-", "—": "-", "‐": "-", "‑": "-", "−": "-", "\u00a0": " "}
_BROKEN = re.compile(r"(?<=[a-z])[-\u00ad\ufffe\x02]\s*\n\s*(?=[a-z])|[\u00ad\ufffe\x02]")
#: a word: a run of word characters, each CJK character a word of its own
WORD = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff\uf900-\ufaff]+")


def normalize(text: str, chinese: bool = False) -> str:
    """What is compared: NFKC, quotes and dashes plain, line-end breaks of a
    word joined, whitespace runs to one space (Chinese: no whitespace at all,
    as Chinese text is written without spaces and tools differ in where they
    put them)."""
    text = unicodedata.normalize("NFKC", text)
    for fancy, plain in _FANCY.items():
        text = text.replace(fancy, plain)
    text = _BROKEN.sub("", text)
    return "".join(text.split()) if chinese else " ".join(text.split())


def words(text: str) -> Counter[str]:
    return Counter(WORD.findall(text))


@dataclass
class Reading:
    """What one tool read of one document."""

    seconds: float
    everything: str  # every character read, in reading order
    visible: str  # what a reader sees
    failed: int = 0


@dataclass
class Score:
    edits: int = 0
    chars: int = 0
    hits_all: int = 0
    read_all: int = 0
    truth_words: int = 0
    hits_visible: int = 0
    pages: int = 0
    seconds: float = 0.0
    failed: int = 0
    docs: list[str] = field(default_factory=list)

    def add(self, truth: str, reading: Reading, pages: int, chinese: bool = False) -> None:
        ref, hyp = normalize(truth, chinese), normalize(reading.everything, chinese)
        self.edits += Levenshtein.distance(hyp, ref)
        self.chars += len(ref)
        t, a, v = words(normalize(truth)), words(normalize(reading.everything)), words(normalize(reading.visible))
        self.hits_all += sum((t & a).values())
        self.read_all += sum(a.values())
        self.truth_words += sum(t.values())
        self.hits_visible += sum((t & v).values())
        self.pages += pages
        self.seconds += reading.seconds
        self.failed += reading.failed

    @property
    def cer(self) -> float:
        return self.edits / max(1, self.chars)

    @property
    def f1(self) -> float:
        p = self.hits_all / max(1, self.read_all)
        r = self.hits_all / max(1, self.truth_words)
        return 2 * p * r / max(1e-9, p + r)

    @property
    def recall(self) -> float:
        return self.hits_visible / max(1, self.truth_words)

    @property
    def pages_per_s(self) -> float:
        return self.pages / max(1e-9, self.seconds)


def run_ocrmypdf(doc: CorpusDoc, work: Path) -> Reading:
    sidecar, out = work / f"{doc.name}.ocrmypdf.txt", work / f"{doc.name}.ocrmypdf.pdf"
    cmd = [str(Path(sys.executable).parent / "ocrmypdf"), "-j", str(os.cpu_count() or 1), "-l", doc.entry.language,
           "--force-ocr", "--output-type", "pdf", "--sidecar", str(sidecar), "-q", str(doc.scan), str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    seconds = time.perf_counter() - t0
    text = sidecar.read_text(encoding="utf-8")
    return Reading(seconds, text, text)


def run_longdoc(doc: CorpusDoc, work: Path, variant: str, env: dict[str, str]) -> Reading:
    out = work / f"longdoc-{variant}"
    shutil.rmtree(out / ".longdoc" / doc.scan.stem, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "longdoc"), "parse", str(doc.scan), "-o", str(out),
           "--format", "json,txt", "-q"]
    t0 = time.perf_counter()
    # the tree's own folder as the working directory: the OCR workers'
    # interpreters put it ahead of PYTHONPATH, so from ROOT they would run
    # this checkout's engine under another tree's layout
    cwd = env.get("PYTHONPATH") or ROOT
    subprocess.run(cmd, check=True, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    return longdoc_reading(out / f"{doc.scan.stem}.json", out / f"{doc.scan.stem}.txt", seconds)


def longdoc_reading(json_path: Path, txt_path: Path, seconds: float) -> Reading:
    """Everything read (every block of the JSON in reading order) and what a
    reader sees (the txt export plus the furniture blocks)."""
    document = json.loads(json_path.read_text(encoding="utf-8"))
    every, furniture, failed = [], [], 0
    for page in document["pages"]:
        failed += page.get("status") == "failed"
        for block in sorted(page.get("blocks", []), key=lambda b: b["order"]):
            every.append(block["text"])
            if block["kind"] in FURNITURE:
                furniture.append(block["text"])
    visible = txt_path.read_text(encoding="utf-8") + "\n" + "\n".join(furniture)
    return Reading(seconds, "\n".join(every), visible, failed)


def truth_of(doc: CorpusDoc, pages: int | None) -> str:
    return "\n".join(p["text"] for p in doc.truth[:pages])


def prefix(doc: CorpusDoc, pages: int | None, work: Path) -> CorpusDoc:
    """``doc`` cut to its first ``pages`` pages (the whole one when None)."""
    if not pages or pages >= doc.pages:
        return doc
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(str(doc.scan))
    cut = pdfium.PdfDocument.new()
    cut.import_pages(src, list(range(pages)))
    path = work / "scans" / doc.scan.name
    path.parent.mkdir(parents=True, exist_ok=True)
    cut.save(str(path))
    cut.close()
    src.close()
    return CorpusDoc(doc.entry, path, doc.born, doc.truth[:pages])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="documents whose name contains this (comma-separated: any of them)")
    ap.add_argument("--split", choices=("dev", "test"))
    ap.add_argument("--recognizer", default="", help="also run longdoc with these inference.rapidocr.recognizer values")
    ap.add_argument("--profiles", default="", help="also run longdoc with these inference.profile values "
                    "(comma-separated: fast, balanced, accurate), as tools 'longdoc:<profile>'")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
                    help="also run longdoc with these environment settings, as tool 'longdoc:NAME' (e.g. "
                         "nore:LONGDOC_INFERENCE__PROFILE=balanced,LONGDOC_INFERENCE__REGIONS=false)")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                    help="also run the longdoc package of another checkout (a git worktree of an earlier commit: "
                         "git worktree add DIR COMMIT), as tool 'longdoc@NAME', for a same-run before/after")
    ap.add_argument("--no-ocrmypdf", action="store_true")
    ap.add_argument("--no-default", action="store_true", help="leave out longdoc with its defaults")
    ap.add_argument("--max-pages", type=int, default=None, help="first N pages of each document")
    ap.add_argument("--keep", type=Path, help="keep outputs here")
    ap.add_argument("--corpus", type=Path, default=None, help="corpus folder (default: real_corpus's)")
    ap.add_argument("--set", dest="corpus_set", choices=("eng", "zh"), default="eng",
                    help="the corpus set: English (real_corpus.tsv) or Chinese (real_corpus_zh.tsv) manuals")
    args = ap.parse_args()
    docs = build(args.corpus, corpus_set=args.corpus_set)
    if args.only:
        docs = [d for d in docs if any(part in d.name for part in args.only.split(","))]
    if args.split:
        docs = [d for d in docs if d.entry.split == args.split]
    work = args.keep or Path(tempfile.mkdtemp(prefix="real-docs-"))
    work.mkdir(parents=True, exist_ok=True)
    docs = [prefix(d, args.max_pages, work) for d in docs]
    tools: list[tuple[str, dict[str, str] | None]] = []
    if not args.no_ocrmypdf:
        tools.append(("ocrmypdf", None))
    if not args.no_default:
        tools.append(("longdoc", {}))
    tools += [(f"longdoc:{r}", {"LONGDOC_INFERENCE__RAPIDOCR__RECOGNIZER": r}) for r in args.recognizer.split(",") if r]
    tools += [(f"longdoc:{p}", {"LONGDOC_INFERENCE__PROFILE": p}) for p in args.profiles.split(",") if p]
    for spec in args.variant:
        name, _, settings = spec.partition(":")
        tools.append((f"longdoc:{name}", dict(kv.split("=", 1) for kv in settings.split(",") if kv)))
    for spec in args.tree:
        name, _, tree = spec.partition("=")
        tools.append((f"longdoc@{name}", {"PYTHONPATH": str(Path(tree).resolve())}))
    print(f"{len(docs)} documents, {sum(d.pages for d in docs)} pages; tools: {', '.join(t for t, _ in tools)}; "
          f"{os.cpu_count()} cores", flush=True)
    # untimed: the backend choice of inference.backend auto is remembered from here on
    subprocess.run([str(Path(sys.executable).parent / "longdoc"), "parse", str(docs[0].scan), "--pages", "1",
                    "-o", str(work / "warm"), "-q"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    print(_header(tools), flush=True)
    totals = {name: Score() for name, _ in tools}
    per_doc: dict[str, dict[str, Score]] = {}
    for i, doc in enumerate(docs):
        order = tools if i % 2 == 0 else list(reversed(tools))
        per_doc[doc.name] = {}
        for name, env in order:
            variant = name.replace(":", "-").replace("@", "-at-")
            reading = run_ocrmypdf(doc, work) if env is None else run_longdoc(doc, work, variant, env)
            one = Score()
            one.add(truth_of(doc, None), reading, doc.pages, doc.entry.chinese)
            per_doc[doc.name][name] = one
            totals[name].add(truth_of(doc, None), reading, doc.pages, doc.entry.chinese)
        print(_row(doc.name, doc.entry.split, doc.pages, per_doc[doc.name], tools), flush=True)
    print()
    print(_header(tools))
    for split in ("dev", "test"):
        names = [d.name for d in docs if d.entry.split == split]
        if names and len(names) < len(docs):
            part = {name: Score() for name, _ in tools}
            for d in docs:
                if d.entry.split == split:
                    for name, _ in tools:
                        s, p = per_doc[d.name][name], part[name]
                        for f in ("edits", "chars", "hits_all", "read_all", "truth_words", "hits_visible",
                                  "pages", "seconds", "failed"):
                            setattr(p, f, getattr(p, f) + getattr(s, f))
            print(_row(f"({split})", "", sum(d.pages for d in docs if d.entry.split == split), part, tools))
    print(_row("all", "", sum(d.pages for d in docs), totals, tools))
    if "ocrmypdf" in totals:
        base = totals["ocrmypdf"]
        for name, _ in tools:
            if name == "ocrmypdf":
                continue
            s = totals[name]
            better = sum(per_doc[d][name].cer <= per_doc[d]["ocrmypdf"].cer for d in per_doc)
            print(f"{name} / ocrmypdf: pages/s {s.pages_per_s / base.pages_per_s:.2f}x, CER "
                  f"{s.cer / max(1e-9, base.cer):.2f}x, recall {s.recall - base.recall:+.3f}; CER at most "
                  f"OCRmyPDF's on {better}/{len(per_doc)} documents")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _header(tools: list[tuple[str, object]]) -> str:
    cells = "".join(f"{name[:26]:>34}" for name, _ in tools)
    sub = "".join(f"{'CER':>8}{'F1':>7}{'recall':>8}{'p/s':>7}{'fail':>4}" for _ in tools)
    return f"{'document':<22}{'split':<6}{'pages':>5}{cells}\n{'':<33}{sub}"


def _row(name: str, split: str, pages: int, scores: dict[str, Score], tools: list[tuple[str, object]]) -> str:
    cells = "".join(f"{s.cer:>8.2%}{s.f1:>7.3f}{s.recall:>8.3f}{s.pages_per_s:>7.2f}{s.failed:>4}"
                    for s in (scores[name] for name, _ in tools))
    return f"{name:<22}{split:<6}{pages:>5}{cells}"


if __name__ == "__main__":
    sys.exit(main())
