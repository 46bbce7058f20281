"""Layout again, from what OCR read: the layout rules of this checkout on
the lines of a kept ``bench/real_docs.py`` run, no OCR.

``bench/real_docs.py --keep DIR`` leaves longdoc's JSON per document. Each
page's lines (those of its blocks, on the page they were read on) are laid
out again with this checkout's :func:`~longdoc.pipeline.layout_group.layout_pages`
(furniture against the neighbouring pages, reading order, block kinds), and
the page's text in the new order is scored against the truth as
``bench/real_docs.py`` scores it. The same lines laid out by two checkouts
(``PYTHONPATH=/path/to/old/worktree``) isolate what a layout change does,
on real OCR output, in seconds, with the recognizer's numerics held fixed.

What is not the pipeline's: the layout model's regions are not in the JSON;
the TABLE and FIGURE blocks it made stand in for them (their box and
cells), so a region whose grid did not fit (its lines were read as text) is
not seen again. Blocks joined across a page break are split back by their
lines' pages, and not joined again. So the CER printed is close to, not the same as,
``real_docs.py``'s: compare two checkouts' ``relayout.py`` on one kept
folder, not a relayout with a run.

    python bench/relayout.py --keep DIR [--set eng|zh] [--only NAME] [--show NAME:PAGE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from longdoc.model import Block, BlockKind, Line, Page, Region, RegionKind
from longdoc.pipeline.layout_group import layout_pages
from real_corpus import build
from real_docs import normalize

_AS_REGION = {BlockKind.TABLE: RegionKind.TABLE, BlockKind.FIGURE: RegionKind.FIGURE}


def pages_of(document: dict) -> list[Page]:
    """The document's pages as recognized: each page's lines (from every
    block, assigned by the page they were read on) and the regions its
    table and figure blocks stand for; no blocks."""
    raw = {p["number"]: p for p in document["pages"]}
    lines: dict[int, list[Line]] = {n: [] for n in raw}
    regions: dict[int, list[Region]] = {n: [] for n in raw}
    for p in document["pages"]:
        for b in sorted(p.get("blocks", []), key=lambda b: b["order"]):
            block = Block.model_validate(b)
            for line in block.lines:
                lines.setdefault(line.page, []).append(line)
            if block.kind in _AS_REGION and block.source_pages == [p["number"]]:
                regions[p["number"]].append(Region(kind=_AS_REGION[block.kind], bbox=block.bbox, score=1.0,
                                                   cells=block.cells))
    pages = []
    for n, p in sorted(raw.items()):
        fields = {k: v for k, v in p.items() if k not in ("blocks", "lines", "regions")}
        page = Page.model_validate({**fields, "blocks": [], "lines": [], "regions": []})
        ordered = sorted(lines.get(n, []), key=lambda l: (l.bbox.y0, l.bbox.x0))
        pages.append(page.model_copy(update={"lines": ordered, "regions": regions[n]}))
    return pages


def page_texts(pages: list[Page]) -> list[str]:
    return ["\n".join(b.text for b in sorted(p.blocks, key=lambda b: b.order)) for p in pages]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, required=True, help="a bench/real_docs.py --keep folder")
    ap.add_argument("--set", dest="corpus_set", choices=("eng", "zh"), default="eng")
    ap.add_argument("--only", default="")
    ap.add_argument("--show", default="", help="NAME:PAGE (1-based index in the corpus document): print both texts")
    args = ap.parse_args()
    docs = [d for d in build(corpus_set=args.corpus_set) if args.only in d.name]
    print(f"{'document':<30}{'pages':>6}{'CER':>8}")
    tot = {"new": 0, "chars": 0}
    for doc in docs:
        path = args.keep / "longdoc-longdoc" / f"{doc.scan.stem}.json"
        if not path.is_file():
            continue
        document = json.loads(path.read_text(encoding="utf-8"))
        pages = pages_of(document)
        numbers = [p.number for p in pages]
        relaid = layout_pages(numbers, {p.number: p for p in pages})
        new = page_texts(relaid)
        chinese = doc.entry.chinese
        truth = normalize("\n".join(t["text"] for t in doc.truth[:len(pages)]), chinese)
        e_new = Levenshtein.distance(normalize("\n".join(new), chinese), truth)
        tot["new"] += e_new
        tot["chars"] += len(truth)
        print(f"{doc.name:<30}{len(pages):>6}{e_new / len(truth):>8.2%}", flush=True)
        if args.show.startswith(doc.name + ":"):
            k = int(args.show.rsplit(":", 1)[1]) - 1
            print("--- relaid ---\n" + new[k] + "\n--- truth ---\n" + doc.truth[k]["text"])
    chars = max(1, tot["chars"])
    print(f"{'all':<30}{'':>6}{tot['new'] / chars:>8.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
