"""Where the edits of ``bench/real_docs.py`` come from: its CER split into
classes of error, per page, per document and overall, for each tool it kept.

Reads what ``real_docs.py --keep DIR`` left (OCRmyPDF's sidecar
``DIR/<name>.ocrmypdf.txt``, pages split at form feeds; longdoc's JSON
``DIR/longdoc-<variant>/<name>.scan.json``, every block of a page in reading
order, furniture included) against the corpus truth (``real_corpus.py``).

How, per page: both sides as ``real_docs.normalize`` has them (a word broken
at a line end joined, whitespace runs one space; Chinese: no whitespace at
all) but with NFKC and the quote and dash folding left out, so that those
show. The truth's lines are placed in the page's reading one by one
(``rapidfuzz`` partial alignment, dot leaders counted as one character:
near where the line before ended, or anywhere on the page where that fits
clearly better; a line of 3 characters or fewer only as a whole word near
the line before), each placement's ends moved to where the line's edit
distance is least. Then:

- ``order``: the placed lines off the heaviest increasing run of reading
  positions were read in another place; the class gets what the page's edit
  distance would lose were they read in the truth's order (what the CER
  pays for the move), their own character errors go to the classes below.
  A piece of 6 characters or more lost from one line and found among the
  page's added text (an index read a column at a time) is order too;
- a line of the page before or after found here (longdoc joins a paragraph
  cut by a page break on its first page) is scored here, against its own
  truth line, when it is placed nowhere on its own page;
- the rest, the truth's lines in order against the reading without those
  pieces, in one Levenshtein alignment, each run of edits between equal
  characters classed by the characters involved: ``substitution`` (letters
  or digits: inside words), ``spaces``, ``hyphenation`` (a hyphen, or a
  space, put in or taken out between two letters), ``leaders`` (dots and
  spaces of a dot leader), punctuation: ``quotes``, ``dashes``,
  ``ligatures`` (ﬁ, ﬂ ...), ``width`` (full-width against half-width
  forms), ``punctuation`` (the rest); in a run of 5 edits or more, words
  deleted are ``lost`` (in the truth, nowhere in the reading) and words
  inserted ``added`` (in the reading, nowhere in the truth).

The classes add up to about the edit distance of the document (pages
joined, as ``real_docs.py`` has it, without NFKC and quote/dash folding:
``raw``); the column ``folded`` is what ``real_docs.normalize`` forgives
(typographic quotes and dashes, ligatures and full-width forms, NFKC), so
classes less folded is about ``real_docs.py``'s own edit count (``CER``).
Both gaps are printed.

Printed per tool: the documents with each class's edits per truth
character, the class table (edits, share of the truth's characters, share
of the edits), the top confusions and the worst pages with the class that
dominates them; ``--detail`` prints every error of the pages chosen.

    python bench/real_errors.py --keep DIR [--set eng|zh] [--only NAME] [--pages 3-5,9]
                                [--show N] [--tools ocrmypdf,longdoc] [--detail]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from real_corpus import CorpusDoc, build
from real_docs import _BROKEN, _FANCY, normalize

CLASSES = ("substitution", "spaces", "hyphenation", "quotes", "dashes", "ligatures", "width", "leaders",
           "punctuation", "order", "lost", "added")
QUOTES = set("'\"`´‘’‚‛“”„‟′″‹›«»＂＇「」『』")
DASHES = set("-‐‑‒–—―−﹣－\u00ad")
#: in a run of this many edits or more, words deleted are lost, words inserted added
LONG_RUN = 5
#: a truth line this short or shorter is only looked for as a whole word near the line before
SHORT = 3
MASK = "\x00"
#: dot leaders (contents, index), read by the tools with more or fewer dots and spaces
LEADER = re.compile(r"(?:[.·．…⋯] ?){3,}|[…⋯]+")
LEADER_DOTS = ".·．…⋯"


# --- text ------------------------------------------------------------------------------------


def _squeeze(text: str, chinese: bool) -> str:
    return "".join(text.split()) if chinese else " ".join(text.split())


def light(text: str, chinese: bool = False) -> str:
    """``real_docs.normalize`` without NFKC and the quote/dash folding: line-end
    breaks of a word joined, whitespace runs one space (Chinese: none)."""
    return _squeeze(_BROKEN.sub("", unicodedata.normalize("NFC", text)), chinese)


def truth_lines(text: str, chinese: bool = False) -> list[str]:
    """The truth page's lines, each :func:`light` (a word broken at a line end
    joined: its two lines are one)."""
    text = _BROKEN.sub("", unicodedata.normalize("NFC", text))
    return [line for line in (_squeeze(raw, chinese) for raw in text.split("\n")) if line]


def keyed(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` with each run of dot leaders one ``…``, and where each of its
    characters starts and ends in ``text``."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in [*LEADER.finditer(text), None]:
        stop = m.start() if m else len(text)
        out.append(text[pos:stop])
        starts += range(pos, stop)
        ends += range(pos + 1, stop + 1)
        if m:
            out.append("…")
            starts.append(m.start())
            ends.append(m.end())
            pos = m.end()
    return "".join(out), starts, ends


def fold(text: str) -> str:
    """What ``real_docs.normalize`` makes of characters: NFKC, quotes and dashes plain."""
    return "".join(_FANCY.get(c, c) for c in unicodedata.normalize("NFKC", text))


def _ligature(c: str) -> bool:
    return "\ufb00" <= c <= "\ufb06" or c in "Ĳĳ"


def _wide(c: str) -> bool:
    return not c.isalnum() and not c.isspace() and unicodedata.east_asian_width(c) in "FW"


def _kind_of(chars: str) -> str:
    """The class of punctuation, or of characters that differ in form only
    (ligatures, full-width letters)."""
    if any(_ligature(c) for c in chars):
        return "ligatures"
    if any(c in QUOTES for c in chars):
        return "quotes"
    if any(c in DASHES for c in chars):
        return "dashes"
    if any(_wide(c) or (unicodedata.normalize("NFKC", c) != c and unicodedata.east_asian_width(c) in "FW")
           for c in chars):
        return "width"
    return "punctuation"


def _leaders(chars: str, before: str, after: str) -> bool:
    """Dots and spaces of a dot leader put in or taken out (``before`` and
    ``after``: the truth's characters either side)."""
    dots = sum(c in LEADER_DOTS for c in chars)
    return bool(chars) and all(c in LEADER_DOTS or c == " " for c in chars) and (
        dots >= 2 or (before in LEADER_DOTS and after in LEADER_DOTS and before != "" and after != ""))


def char_class(a: str, b: str) -> str:
    """The class of one edit: truth ``a`` read as ``b`` (either may be empty)."""
    chars = a + b
    if not chars.strip():
        return "spaces"
    if fold(a) == fold(b):
        return _kind_of(chars)
    if any(_ligature(c) for c in chars):
        return "ligatures"
    if any(c.isalnum() for c in chars):
        return "substitution"
    return _kind_of(chars)


# --- results ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """Edits per class (``folded``: those ``real_docs.normalize`` forgives),
    confusions and, when asked, each error."""

    edits: Counter = field(default_factory=Counter)
    folded: Counter = field(default_factory=Counter)
    confusions: Counter = field(default_factory=Counter)
    chars: int = 0  # truth characters
    raw: int = 0  # edit distance, no folding
    cer_edits: int = 0  # real_docs.py's edit distance
    details: list[tuple[str, str, str, int]] | None = None  # (class, truth, reading, edits)
    #: the text lost and added on the page (not merged)
    bits: dict[str, list[str]] = field(default_factory=lambda: {"lost": [], "added": []})

    def add(self, cls: str, edits: int, truth: str = "", reading: str = "", folded: bool = False,
            note: bool = True) -> None:
        if edits <= 0:
            return
        self.edits[cls] += edits
        if folded:
            self.folded[cls] += edits
        if cls in self.bits:
            self.bits[cls].append(truth or reading)
        if note:
            self.note(cls, edits, truth, reading)

    def note(self, cls: str, edits: int, truth: str, reading: str) -> None:
        if self.details is not None:
            self.details.append((cls, truth, reading, edits))

    def merge(self, other: Tally) -> None:
        self.edits.update(other.edits)
        self.folded.update(other.folded)
        self.confusions.update(other.confusions)
        self.chars += other.chars
        self.raw += other.raw
        self.cer_edits += other.cer_edits

    @property
    def total(self) -> int:
        return sum(self.edits.values())

    @property
    def counted(self) -> int:
        return self.total - sum(self.folded.values())


@dataclass
class PageResult:
    doc: str
    index: int  # 0-based in the scan
    number: int  # in the original
    tally: Tally


# --- placing the truth's lines in the reading -----------------------------------------------------


@dataclass
class Placed:
    line: int  # index in its page's truth lines
    start: int
    end: int
    page: int  # the truth page the line is of


def _cutoff(n: int) -> float:
    return 75.0 if n < 12 else 65.0 if n < 30 else 60.0


def _find(line: str, text: str, lo: int, hi: int, cutoff: float) -> tuple[float, int, int] | None:
    """Where ``line`` fits ``text[lo:hi]`` best: (score, start, end), or None
    below ``cutoff`` (a short line: only as a whole word, score 100)."""
    lo, hi = max(0, lo), min(len(text), hi)
    window = text[lo:hi]
    if not window.replace(MASK, "").strip():
        return None
    if len(line) <= SHORT:
        m = re.search(rf"(?<![^\s{MASK}]){re.escape(line)}(?![^\s{MASK}])", window)
        return (100.0, lo + m.start(), lo + m.end()) if m else None
    hit = fuzz.partial_ratio_alignment(line, window, score_cutoff=cutoff)
    if hit is None:
        return None
    return hit.score, lo + hit.dest_start, lo + hit.dest_end


def _refine(line: str, text: str, start: int, end: int) -> tuple[int, int]:
    """The placement's ends moved (within a margin, never over placed text)
    to where the line's edit distance to what lies between them is least."""
    margin = max(4, len(line) // 4)
    start, end = _unmasked(text, start, end)
    lo, hi = start, end
    while lo > 0 and start - lo < margin and text[lo - 1] != MASK:
        lo -= 1
    while hi < len(text) and hi - end < margin and text[hi] != MASK:
        hi += 1

    def best(spans: list[tuple[int, int]]) -> tuple[int, int]:
        return min(spans, key=lambda se: (Levenshtein.distance(line, text[se[0]:se[1]]),
                                          abs(se[1] - se[0] - len(line)), abs(se[0] - start) + abs(se[1] - end)))

    s, e = best([(start, e) for e in range(max(start + 1, end - margin), hi + 1)])
    s, e = best([(s, e) for s in range(lo, min(e, start + margin + 1))])
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _unmasked(text: str, start: int, end: int) -> tuple[int, int]:
    """The longest stretch of ``text[start:end]`` with no placed text in it."""
    if MASK not in text[start:end]:
        return start, end
    best, run = (start, start), start
    for i in range(start, end + 1):
        if i == end or text[i] == MASK:
            if i - run > best[1] - best[0]:
                best = (run, i)
            run = i + 1
    return best


def place(lines: list[str], text: str, page: int, only: list[int] | None = None) -> tuple[list[Placed], str]:
    """Places ``lines`` (those of index in ``only``, or all) in ``text``;
    returns the placements and ``text`` with the placed characters masked."""
    placed: list[Placed] = []
    cursor = 0
    for i in (only if only is not None else range(len(lines))):
        line = lines[i]
        n = len(line)
        # near where the line before ended; anywhere on the page when that is clearly better
        hit = _find(line, text, cursor - 2, cursor + n + max(24, n // 2), _cutoff(n) - 5)
        if n > SHORT and (hit is None or hit[0] < 90):
            far = _find(line, text, 0, len(text), max(_cutoff(n), hit[0] + 10 if hit else 0))
            hit = far if far and (hit is None or far[0] >= hit[0] + 10) else hit
            if hit and hit is not far and hit[0] < _cutoff(n):
                hit = None
        if hit is None:
            continue
        s, e = _refine(line, text, hit[1], hit[2]) if n > SHORT else hit[1:]
        if e <= s:
            continue
        placed.append(Placed(i, s, e, page))
        text = text[:s] + MASK * (e - s) + text[e:]
        cursor = e
    return placed, text


def heaviest_increasing(keys: list[int], weights: list[int]) -> set[int]:
    """Indices of the increasing subsequence of ``keys`` of the largest total weight."""
    n = len(keys)
    best, prev = [0] * n, [-1] * n
    for i in range(n):
        best[i] = weights[i]
        for j in range(i):
            if keys[j] < keys[i] and best[j] + weights[i] > best[i]:
                best[i], prev[i] = best[j] + weights[i], j
    chosen: set[int] = set()
    i = max(range(n), key=best.__getitem__) if n else -1
    while i >= 0:
        chosen.add(i)
        i = prev[i]
    return chosen


def order_cost(text: str, truth: str, own: list[Placed], crossed: list[Placed], chinese: bool) -> int:
    """What the reading's edit distance to ``truth`` would lose if its lines
    (``own``: placed on their page) came in the truth's order, the text under
    no line going along with the line read before it."""
    spans = sorted([(pl.start, pl.end, pl.line) for pl in own] + [(pl.start, pl.end, None) for pl in crossed])
    segments: list[tuple[tuple[int, int, int], str]] = []
    last, pos = -1, 0
    for s, e, line in spans:
        if s > pos:
            segments.append(((last, 1, pos), text[pos:s]))
        if line is None:
            segments.append(((last, 1, s), text[s:e]))
        else:
            segments.append(((line, 0, s), text[s:e]))
            last = line
        pos = max(pos, e)
    if pos < len(text):
        segments.append(((last, 1, pos), text[pos:]))
    sep = "" if chinese else " "
    as_read = _squeeze(sep.join(seg for _, seg in segments), chinese)
    in_order = _squeeze(sep.join(seg for _, seg in sorted(segments, key=lambda ks: ks[0])), chinese)
    return max(0, Levenshtein.distance(as_read, truth) - Levenshtein.distance(in_order, truth))


def moved_bits(tally: Tally) -> None:
    """Text lost from one line and added at another place of the page (an
    index read a column at a time, a number read apart from its line):
    order, not lost and added."""
    pool = " ".join(tally.bits["added"])
    for bit in sorted(tally.bits["lost"], key=len, reverse=True):
        core = bit.strip()
        if len(core.replace(" ", "")) < 6 or not pool.replace(MASK, "").strip():
            continue
        hit = fuzz.partial_ratio_alignment(core, pool, score_cutoff=80)
        if hit is None:
            continue
        s, e = hit.dest_start, hit.dest_end
        found = sum(not c.isspace() and c != MASK for c in pool[s:e])
        lost, added = min(len(core), tally.edits["lost"]), min(found, tally.edits["added"])
        tally.edits["lost"] -= lost
        tally.edits["added"] -= added
        tally.edits["order"] += lost + added
        tally.note("order", lost + added, core, pool[s:e])
        pool = pool[:s] + MASK * (e - s) + pool[e:]


# --- classifying -----------------------------------------------------------------------------


def classify_pair(truth: str, reading: str, tally: Tally) -> None:
    """Adds the edits of ``reading`` against ``truth`` to ``tally``, each run
    of edits between equal characters by class."""
    ops = [op for op in Levenshtein.opcodes(truth, reading)]
    k = 0
    while k < len(ops):
        if ops[k].tag == "equal":
            k += 1
            continue
        run = []
        while k < len(ops) and ops[k].tag != "equal":
            run.append(ops[k])
            k += 1
        _classify_run(truth, reading, run, tally)


def _classify_run(truth: str, reading: str, run: list, tally: Tally) -> None:
    i1, i2, j1, j2 = run[0].src_start, run[-1].src_end, run[0].dest_start, run[-1].dest_end
    t, r = truth[i1:i2], reading[j1:j2]
    edits = sum(max(op.src_end - op.src_start, op.dest_end - op.dest_start) for op in run)
    before = truth[i1 - 1] if i1 > 0 else ""
    after = truth[i2] if i2 < len(truth) else ""
    bare = (t + r).replace(" ", "")
    if fold(t) == fold(r):
        cls = _kind_of(t + r)
        tally.add(cls, edits, t, r, True)
    elif _leaders(t + r, before, after):
        cls = "leaders"
        tally.add(cls, edits, t, r)
    elif not (t + r).strip():
        cls = "spaces"
        tally.add(cls, edits, t, r)
    elif bare and all(c in DASHES for c in bare) and before.isalpha() and after.isalpha():
        cls = "hyphenation"
        tally.add(cls, edits, t, r)
    else:
        classes: Counter = Counter()
        long = edits >= LONG_RUN
        for op in run:
            a, b = truth[op.src_start:op.src_end], reading[op.dest_start:op.dest_end]
            if op.tag != "replace" and _leaders(a + b, "", ""):
                classes["leaders"] += len(a + b)
                tally.add("leaders", len(a + b), note=False)
                continue
            if long and op.tag != "replace" and any(c.isalnum() for c in a + b):
                c = "lost" if op.tag == "delete" else "added"
                if (a + b).isspace():
                    c = "spaces"
                classes[c] += len(a + b)
                tally.add(c, len(a + b), a, b, note=False)
                continue
            for x, y in zip(a, b) if op.tag == "replace" else ((x, "") for x in a) if a else (("", y) for y in b):
                c = char_class(x, y)
                classes[c] += max(len(x), len(y))
                tally.add(c, max(len(x), len(y)), folded=fold(x) == fold(y), note=False)
        cls = "+".join(c for c, _ in classes.most_common())
        tally.note(cls, edits, t, r)
        cls = classes.most_common(1)[0][0]
    if cls not in ("spaces", "leaders", "lost", "added") and edits < LONG_RUN:
        tally.confusions[(f"{_show(t)}→{_show(r)}", cls)] += 1


def _show(s: str) -> str:
    return s.replace(" ", "␣") if s else "∅"


def analyse_doc(truth_pages: list[str], readings: list[str], chinese: bool = False, detail: bool = False,
                name: str = "", numbers: list[int] | None = None) -> list[PageResult]:
    """Each page's tally: ``truth_pages[i]`` (raw truth text) against
    ``readings[i]`` (what the tool read on page i)."""
    n = min(len(truth_pages), len(readings))
    lines = [truth_lines(truth_pages[i], chinese) for i in range(n)]
    texts = [light(readings[i], chinese) for i in range(n)]
    # placed with dot leaders one character (tools read them as they like), then back to the text
    keys = [[keyed(line)[0] for line in page] for page in lines]
    maps = [keyed(text) for text in texts]
    # each truth line in its own page's reading
    placed: list[list[Placed]] = []
    masked: list[str] = []
    for i in range(n):
        p, m = place(keys[i], maps[i][0], i)
        placed.append(p)
        masked.append(m)
    own = [{pl.line for pl in placed[i]} for i in range(n)]
    # lines found nowhere on their page: on the neighbouring pages' readings (a paragraph joined over a break)
    crossed: list[list[Placed]] = [[] for _ in range(n)]
    taken: list[set[int]] = [set(s) for s in own]
    for i in range(n):
        for q in (i + 1, i - 1):
            if 0 <= q < n:
                todo = [k for k in range(len(lines[q])) if k not in taken[q] and len(keys[q][k]) > SHORT]
                if todo:
                    p, masked[i] = place(keys[q], masked[i], q, todo)
                    crossed[i] += p
                    taken[q].update(pl.line for pl in p)
    for i in range(n):
        _, starts, ends = maps[i]
        for pl in placed[i] + crossed[i]:
            pl.start, pl.end = starts[pl.start], ends[pl.end - 1]
            while pl.end > pl.start and texts[i][pl.end - 1].isspace():
                pl.end -= 1
    sep = "" if chinese else " "
    elsewhere: list[set[int]] = [set() for _ in range(n)]  # lines read on another page
    for i in range(n):
        for pl in crossed[i]:
            elsewhere[pl.page].add(pl.line)
    results = []
    for i in range(n):
        tally = Tally(details=[] if detail else None)
        text = texts[i]
        tally.chars = len(sep.join(lines[i]))
        tally.raw = Levenshtein.distance(text, sep.join(lines[i]))
        pieces = sorted(placed[i], key=lambda pl: pl.line)
        keep = heaviest_increasing([pl.start for pl in pieces], [len(lines[i][pl.line]) for pl in pieces])
        moved = [pl for k, pl in enumerate(pieces) if k not in keep]
        # a line read out of order, or one of the page before or after: against its own truth line
        for pl in moved:
            classify_pair(lines[i][pl.line], text[pl.start:pl.end], tally)
            tally.note("order", 0, lines[i][pl.line], text[pl.start:pl.end])
        if moved:
            tally.add("order", order_cost(text, sep.join(lines[i]), pieces, crossed[i], chinese), "(the lines above)")
        for pl in crossed[i]:
            classify_pair(lines[pl.page][pl.line], text[pl.start:pl.end], tally)
        # the rest, in order: in one alignment
        out = {pl.line for pl in moved} | elsewhere[i]
        truth = sep.join(line for k, line in enumerate(lines[i]) if k not in out)
        cuts = sorted((pl.start, pl.end) for pl in moved + crossed[i])
        bits, pos = [], 0
        for s, e in cuts:
            bits.append(text[pos:s])
            pos = e
        bits.append(text[pos:])
        classify_pair(truth, _squeeze(sep.join(bits), chinese), tally)
        moved_bits(tally)
        number = (numbers or [])[i] if numbers and i < len(numbers) else i + 1
        results.append(PageResult(name, i, number, tally))
    return results


# --- reading the kept outputs ------------------------------------------------------------------


def ocrmypdf_pages(path: Path) -> list[str]:
    """OCRmyPDF's sidecar, per page (form feeds between pages)."""
    return path.read_text(encoding="utf-8").split("\f")


def longdoc_pages(path: Path) -> list[str]:
    """longdoc's JSON per page: every block in reading order (furniture
    included), as ``real_docs.longdoc_reading`` reads the whole document."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return ["\n".join(b["text"] for b in sorted(page.get("blocks", []), key=lambda b: b["order"]))
            for page in document["pages"]]


def tools_in(keep: Path) -> dict[str, callable]:
    """The tools ``keep`` holds outputs of: name -> (doc name -> output path)."""
    tools = {"ocrmypdf": lambda name: keep / f"{name}.ocrmypdf.txt"}
    for folder in sorted(f for f in keep.glob("longdoc-*") if f.is_dir()):
        variant = folder.name.removeprefix("longdoc-")
        tools[variant.replace("-", ":", 1)] = lambda name, f=folder: f / f"{name}.scan.json"
    return tools


def read_pages(tool: str, path: Path) -> list[str] | None:
    try:
        return ocrmypdf_pages(path) if tool == "ocrmypdf" else longdoc_pages(path)
    except (OSError, ValueError, KeyError):
        return None


def parse_pages(spec: str | None) -> set[int] | None:
    if not spec:
        return None
    pages: set[int] = set()
    for part in spec.split(","):
        first, _, last = part.partition("-")
        pages.update(range(int(first), int(last or first) + 1))
    return pages


# --- printing --------------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{part / max(1, whole):.2%}"


def print_tool(tool: str, docs: list[tuple[str, Tally]], pages: list[PageResult], show: int) -> None:
    total = Tally()
    for _, t in docs:
        total.merge(t)
    print(f"\n=== {tool}: {len(docs)} documents, {len(pages)} pages, {total.chars:,} truth characters")
    short = {"substitution": "subst", "hyphenation": "hyph", "punctuation": "punct", "ligatures": "lig",
             "leaders": "lead"}
    head = "".join(f"{short.get(c, c):>7}" for c in CLASSES)
    print(f"{'document':<22}{'CER':>7}{'raw':>7}{'sum':>7}{head}")
    for name, t in docs + [("all", total)]:
        cells = "".join(f"{t.edits[c] / max(1, t.chars):>7.2%}" for c in CLASSES)
        print(f"{name:<22}{_pct(t.cer_edits, t.chars):>7}{_pct(t.raw, t.chars):>7}{_pct(t.total, t.chars):>7}{cells}")
    print(f"\n{'class':<14}{'edits':>9}{'of truth':>10}{'of edits':>10}{'folded':>9}   (folded: forgiven by real_docs' "
          f"normalize)")
    for c in sorted(CLASSES, key=lambda c: -total.edits[c]):
        print(f"{c:<14}{total.edits[c]:>9,}{_pct(total.edits[c], total.chars):>10}"
              f"{_pct(total.edits[c], total.total):>10}{total.folded[c]:>9,}")
    print(f"{'sum':<14}{total.total:>9,}{_pct(total.total, total.chars):>10}")
    print(f"edit distance without folding (raw) {total.raw:,}: the classes sum to "
          f"{total.total / max(1, total.raw):.1%} of it ({total.total - total.raw:+,}); "
          f"real_docs' edit distance {total.cer_edits:,}, the classes less "
          f"folded {total.counted:,} ({total.counted - total.cer_edits:+,}, "
          f"{total.counted / max(1, total.cer_edits):.1%})")
    print("\ntop confusions (truth→read, ∅ nothing, ␣ a space)")
    for (pair, cls), count in total.confusions.most_common(15):
        print(f"{count:>7}  {pair:<20} {cls}")
    worst = sorted(pages, key=lambda p: -p.tally.total)[:show]
    if worst:
        print(f"\nworst {len(worst)} pages (by edits; page in the scan, [in the original])")
        print(f"{'document':<22}{'page':>10}{'chars':>7}{'edits':>7}{'raw':>7}{'CER':>8}  dominant class, next")
        for p in worst:
            t = p.tally
            (c1, n1), *rest = t.edits.most_common(2) or [("-", 0)]
            nxt = f", {rest[0][0]} {_pct(rest[0][1], t.total)}" if rest else ""
            print(f"{p.doc:<22}{p.index + 1:>5} [{p.number:>3}]{t.chars:>7}{t.total:>7}{t.raw:>7}"
                  f"{_pct(t.total, t.chars):>8}  "
                  f"{c1} {_pct(n1, t.total)}{nxt}")


def print_detail(tool: str, page: PageResult) -> None:
    print(f"\n--- {tool}: {page.doc} page {page.index + 1} [{page.number}]: {page.tally.total} edits")
    for cls, truth, read, edits in page.tally.details or []:
        print(f"{cls:<13}{edits:>5}  {truth[:90]!r} -> {read[:90]!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, required=True, help="what real_docs.py --keep left")
    ap.add_argument("--set", dest="corpus_set", choices=("eng", "zh"), default="eng")
    ap.add_argument("--corpus", type=Path, default=None, help="corpus folder (default: real_corpus's)")
    ap.add_argument("--only", help="documents whose name contains this (comma-separated: any of them)")
    ap.add_argument("--pages", help="only these pages of the scan (1-based: 3-5,9)")
    ap.add_argument("--tools", help="only these tools (comma-separated: ocrmypdf,longdoc)")
    ap.add_argument("--show", type=int, default=10, help="the N worst pages per tool (every page: a large N)")
    ap.add_argument("--detail", action="store_true", help="print every error of the pages chosen")
    args = ap.parse_args()
    docs: list[CorpusDoc] = build(args.corpus, corpus_set=args.corpus_set)
    if args.only:
        docs = [d for d in docs if any(part in d.name for part in args.only.split(","))]
    tools = tools_in(args.keep)
    if args.tools:
        tools = {k: v for k, v in tools.items() if k in args.tools.split(",")}
    chosen = parse_pages(args.pages)
    readings: dict[str, dict[str, list[str]]] = {}
    for doc in docs:
        got = {tool: read_pages(tool, path(doc.name)) for tool, path in tools.items()}
        missing = [tool for tool, pages in got.items() if pages is None]
        if missing:
            print(f"{doc.name}: no output of {', '.join(missing)} (yet): left out", file=sys.stderr)
            continue
        readings[doc.name] = got
    docs = [d for d in docs if d.name in readings]
    if not docs:
        print("no document has an output of every tool", file=sys.stderr)
        return 1
    print(f"{len(docs)} documents ({', '.join(d.name for d in docs)}); tools: {', '.join(tools)}")
    for tool in tools:
        per_doc: list[tuple[str, Tally]] = []
        all_pages: list[PageResult] = []
        for doc in docs:
            read = readings[doc.name][tool]
            n = min(len(read), doc.pages)
            truth = [p["text"] for p in doc.truth[:n]]
            chinese = doc.entry.chinese
            pages = analyse_doc(truth, read[:n], chinese, args.detail, doc.name, [p["number"] for p in doc.truth])
            if chosen:
                pages = [p for p in pages if p.index + 1 in chosen]
            tally = Tally()
            for p in pages:
                tally.merge(p.tally)
            # the document's edit distances, pages joined, as real_docs.py has them
            idx = [p.index for p in pages]
            truth_text = "\n".join(truth[i] for i in idx)
            read_text = "\n".join(read[i] for i in idx)
            tally.raw = Levenshtein.distance(light(read_text, chinese), light(truth_text, chinese))
            tally.cer_edits = Levenshtein.distance(normalize(read_text, chinese), normalize(truth_text, chinese))
            per_doc.append((doc.name, tally))
            all_pages += pages
        print_tool(tool, per_doc, all_pages, args.show)
        if args.detail:
            for p in all_pages:
                print_detail(tool, p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
