"""Recognizers line by line on the real corpus: each detected line's crop read
by every recognizer, against the text layer's characters inside that box.

Pages: ``--per-doc`` pages of every corpus document (``bench/real_corpus.py``),
evenly spread. Lines: RapidOCR's detector (the engine's settings) on the
scanned page; a line's truth is the text-layer glyphs whose centres fall in
its box once mapped onto the scan (the page's known skew), in the text
layer's order, a space where the text layer has one. Lines without truth
(speckles, rules) are left out, as are lines whose box holds glyphs of more
than one text-layer line (the detector ran two lines together).

Each line carries its class: ``mono`` (a fixed-pitch font in the text layer:
code), ``digits`` (4+ digits), ``plain``. Printed per recognizer: CER and
the share of lines read exactly, by class, and seconds per line. Also the
cascade rules replayed on the same lines (``--rules``): which lines each rule
sends to the accurate model, what the cascade's CER would be, and the share
re-read.

    python bench/lines.py [--per-doc 3] [--only NAME] [--recognizers tiny,small,small-int8,tesseract]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from rapidfuzz.distance import Levenshtein

from _common import ROOT  # noqa: F401

from real_corpus import DPI, build
from real_docs import normalize

FIXED_PITCH = 1  # PDF font descriptor flag bit 1
#: fixed-pitch fonts by name (TeX's Type 1 fonts often leave the flag unset)
MONO_NAME = re.compile(r"(?i)(?:^|[+\-])(?:cmtt|lmmono|sfti|txtt|pcr|nimbusmono|courier|inconsolata|beramono|"
                       r"dejavusansmono|liberationmono|consola|lmtt|ec-?lmtt|sftt|tctt|cmitt|cmsltt)|mono|tt\d")


@dataclass
class Glyph:
    index: int
    char: str
    x: float  # centre on the scan, pixels
    y: float
    mono: bool


@dataclass
class TruthLine:
    quad: np.ndarray
    truth: str
    mono: bool
    crop: np.ndarray
    doc: str
    readings: dict[str, tuple[str, float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        if self.mono:
            return "mono"
        if re.search(r"\d{4,}", self.truth):
            return "digits"
        return "plain"


def glyphs_of(pdf: pdfium.PdfDocument, index: int, angle: float, size_px: tuple[int, int]) -> list[Glyph]:
    page = pdf[index]
    width_pt, height_pt = page.get_size()
    textpage = page.get_textpage()
    scale = DPI / 72
    cx, cy = size_px[0] / 2, size_px[1] / 2
    theta = math.radians(angle)
    out = []
    buf = (pdfium_c.c_char * 256)()
    flags = pdfium_c.c_int()
    for i in range(textpage.count_chars()):
        ch = textpage.get_text_range(i, 1)
        if not ch or ch.isspace():
            out.append(Glyph(i, " ", -1, -1, False))
            continue
        left, bottom, right, top = textpage.get_charbox(i)
        x, y = (left + right) / 2 * scale, (height_pt - (bottom + top) / 2) * scale
        dx, dy = x - cx, y - cy
        xr = cx + dx * math.cos(theta) + dy * math.sin(theta)
        yr = cy - dx * math.sin(theta) + dy * math.cos(theta)
        n = pdfium_c.FPDFText_GetFontInfo(textpage, i, buf, 256, flags)
        font = bytes(buf[:max(0, n - 1)]).decode("latin-1")
        out.append(Glyph(i, ch, xr, yr, bool(flags.value & FIXED_PITCH) or bool(MONO_NAME.search(font))))
    textpage.close()
    page.close()
    return out


def truth_lines(image: np.ndarray, quads: list[np.ndarray], glyphs: list[Glyph], doc: str) -> list[TruthLine]:
    import cv2
    from rapidocr.utils.process_img import get_rotate_crop_image

    inked = [g for g in glyphs if g.x >= 0]
    xs = np.array([g.x for g in inked]) if inked else np.zeros(0)
    ys = np.array([g.y for g in inked]) if inked else np.zeros(0)
    taken: set[int] = set()
    lines = []
    for quad in quads:
        q = np.asarray(quad, dtype=np.float32)
        x0, y0 = q.min(axis=0)
        x1, y1 = q.max(axis=0)
        near = np.nonzero((xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1))[0]
        inside = [inked[k] for k in near if cv2.pointPolygonTest(q, (float(xs[k]), float(ys[k])), False) >= 0
                  and inked[k].index not in taken]
        if not inside:
            continue
        inside.sort(key=lambda g: g.index)
        if _several_lines(inside, y1 - y0):
            continue
        text = inside[0].char
        for a, b in zip(inside, inside[1:]):
            between = glyphs[a.index + 1:b.index]
            text += (" " if any(g.char.isspace() for g in between) else "") + b.char
        taken.update(g.index for g in inside)
        crop = get_rotate_crop_image(image, q.copy())
        lines.append(TruthLine(q, text, sum(g.mono for g in inside) > len(inside) / 2, crop, doc))
    return lines


def _several_lines(glyphs: list[Glyph], height: float) -> bool:
    ys = sorted(g.y for g in glyphs)
    return ys[-1] - ys[0] > 0.7 * height and len(glyphs) > 3


# --- recognizers -------------------------------------------------------------------------------------------


def rapid_recognizer(name: str) -> Any:
    """A recognizer by name: ``tiny``, ``small``, ``small-int8``, optionally
    ``@openvino`` (float32) or ``@openvino-native`` (OpenVINO's default
    precision: bfloat16 where the CPU has it; default ONNX Runtime), decoding with MarginDecode; or
    ``cascade`` (tiny on ONNX Runtime, small on OpenVINO: the engine's
    CascadeRecognizer as on this machine's runtimes)."""
    if name.startswith("cascade"):  # cascade (tiny on ONNX Runtime) or cascade@openvino (tiny on OpenVINO)
        from longdoc.engines.rapidocr.cascade import CascadeRecognizer
        fast = "tiny@" + (name.partition("@")[2] or "onnxruntime")
        recognizer = CascadeRecognizer(_plain(fast, precision=None), accurate=_plain("small@openvino"))
        _recognizers.append(recognizer)
        return recognizer
    from rapidocr import RapidOCR

    from longdoc.engines import backends, model_files
    from longdoc.engines.rapidocr import ctc, int8
    from longdoc.engines.rapidocr.worker import DEFAULT_PARAMS

    model, _, runtime = name.partition("@")
    runtime = runtime or "onnxruntime"
    from longdoc.engines.rapidocr.worker import cache_openvino_models, openvino_precision
    cache_openvino_models()
    precision = "f32"
    if runtime == "openvino-native":  # OpenVINO's own precision (bfloat16 where the CPU has it)
        precision, runtime = None, "openvino"
    path = keys = None
    if model == "tiny":
        path, keys = (str(p) for p in model_files.tiny_recognizer())
    elif model == "small-int8":
        path = str(int8.ensure())
    params = {**DEFAULT_PARAMS, **backends.engine_config(1), **backends.rec_params(runtime, path, keys)}
    with openvino_precision(precision):
        return ctc.install(RapidOCR(params=params)._load_rec_model())


_recognizers: list[Any] = []  # cascades made, for their counts


def _plain(name: str, precision: str | None = "f32") -> Any:
    """The RapidOCR recognizer ``name`` without MarginDecode (the cascade
    installs it); on OpenVINO at ``precision`` (None: OpenVINO's default),
    as the engine runs the cascade's fast and accurate models."""
    from rapidocr import RapidOCR

    from longdoc.engines import backends, model_files
    from longdoc.engines.rapidocr.worker import DEFAULT_PARAMS, cache_openvino_models, openvino_precision

    cache_openvino_models()

    model, _, runtime = name.partition("@")
    path = keys = None
    if model == "tiny":
        path, keys = (str(p) for p in model_files.tiny_recognizer())
    params = {**DEFAULT_PARAMS, **backends.engine_config(1), **backends.rec_params(runtime or "onnxruntime", path, keys)}
    with openvino_precision(precision):
        return RapidOCR(params=params)._load_rec_model()


def read_rapid(rec: Any, crops: list[np.ndarray]) -> list[tuple[str, float, Any]]:
    from rapidocr.ch_ppocr_rec.typings import TextRecInput

    out = []
    for crop in crops:
        res = rec(TextRecInput(img=[np.ascontiguousarray(crop[..., ::-1])], return_word_box=True))
        out.append((res.txts[0], float(res.scores[0]), res.word_results[0]))
    return out


def read_tesseract(crops: list[np.ndarray]) -> list[tuple[str, float]]:
    import tesserocr
    from PIL import Image

    out = []
    with tesserocr.PyTessBaseAPI(path="/usr/share/tesseract-ocr/5/tessdata", lang="eng",
                                 psm=tesserocr.PSM.SINGLE_LINE) as api:
        for crop in crops:
            api.SetImage(Image.fromarray(crop).convert("L"))
            text = api.GetUTF8Text().strip()
            out.append((" ".join(text.split()), api.MeanTextConf() / 100, None))
    return out


# --- scoring -----------------------------------------------------------------------------------------------


def line_norm(text: str) -> str:
    return normalize(unicodedata.normalize("NFKC", text))


def score(lines: list[TruthLine], reading: dict[int, str]) -> tuple[float, float, int]:
    edits = chars = exact = 0
    for i, line in enumerate(lines):
        ref, hyp = line_norm(line.truth), line_norm(reading[i])
        d = Levenshtein.distance(hyp, ref)
        edits += d
        chars += len(ref)
        exact += d == 0
    return edits / max(1, chars), exact / max(1, len(lines)), len(lines)


_MIXED = re.compile(r"(?=\S*[A-Za-z])(?=\S*\d)\S{2,}")
_CASE_FLIP = re.compile(r"[A-Z][a-z]+[A-Z]|[a-z][A-Z]")
_DIGITS = re.compile(r"\d{4,}")


def rules() -> dict[str, Any]:
    """The cascade's rule (:func:`longdoc.engines.rapidocr.cascade.needs_recheck`), each of its parts alone and
    left out, and other bars: what each costs (lines re-read) and gives (CER)."""
    from longdoc.engines.rapidocr import cascade

    def parts(t, r, margin=cascade.MARGIN_BELOW, below=cascade.DEFAULT_BELOW):
        return {
            "mean": not t.strip() or r.mean < below,
            "margin": any(m < margin for m, ch in zip(r.margins, t) if not ch.isspace()),
            "digits": bool(cascade.DIGIT_RUN.search(t)),
            "mixed": bool(cascade.MIXED_TOKEN.search(t)),
            "case": bool(cascade.CASE_FLIP.search(t)),
            "code": sum(ch in "{}[]()<>=;\\_|#$%&*~" for ch in t) >= 0.08 * len(t),
        }

    def rule(t, r, **bars):
        return any(v for k, v in parts(t, r, **bars).items() if k != "code")

    out: dict[str, Any] = {"none": lambda t, r: False, "all": lambda t, r: True, "cascade": rule,
                           "cascade + code punctuation": lambda t, r: any(parts(t, r).values())}
    for name in ("mean", "margin", "digits", "mixed", "case", "code"):
        out[f"only {name}"] = (lambda n: lambda t, r: parts(t, r)[n])(name)
    for name in ("mean", "margin", "digits", "mixed", "case"):
        out[f"without {name}"] = (lambda n: lambda t, r: any(v for k, v in parts(t, r).items()
                                                             if k not in (n, "code")))(name)
    glued = re.compile(r"[,;:!?)\]][A-Za-z]|[a-z][(\[]")
    out["cascade + glued punctuation"] = lambda t, r: rule(t, r) or bool(glued.search(t))
    out["only glued punctuation"] = lambda t, r: bool(glued.search(t))
    for bar in (0.05, 0.1, 0.3):
        out[f"margin bar {bar}"] = (lambda b: lambda t, r: rule(t, r, margin=b))(bar)
    for bar in (0.93, 0.95):
        out[f"mean bar {bar}"] = (lambda b: lambda t, r: rule(t, r, below=b))(bar)
    # cheaper sets (a balanced profile's candidates): what users search for (codes), plus the lowest doubts
    def codes(t, r, below=0.0, margin=0.0):
        p = parts(t, r, margin=margin, below=below)
        return p["digits"] or p["mixed"] or p["case"] or (below > 0 and p["mean"]) or (margin > 0 and p["margin"])
    out["codes"] = codes
    for below in (0.8, 0.85, 0.9):
        out[f"codes + mean {below}"] = (lambda b: lambda t, r: codes(t, r, below=b))(below)
    for margin in (0.05, 0.1):
        out[f"codes + margin {margin}"] = (lambda m: lambda t, r: codes(t, r, margin=m))(margin)
        out[f"codes + mean 0.85 + margin {margin}"] = (lambda m: lambda t, r: codes(t, r, below=0.85, margin=m))(margin)
    return out


def differences(lines: list[TruthLine], fast: str, accurate: str) -> None:
    """Where ``fast`` and ``accurate`` differ, and which one the truth sides with, by kind of difference."""
    from collections import Counter
    kinds: Counter[tuple[str, str]] = Counter()
    for l in lines:
        a, b, t = (line_norm(x) for x in (l.readings[fast][0], l.readings[accurate][0], l.truth))
        if a == b:
            continue
        if a.replace(" ", "") == b.replace(" ", ""):
            kind = "spaces"
        elif a.lower() == b.lower():
            kind = "case"
        else:
            kind = "other"
        da, db = Levenshtein.distance(a, t), Levenshtein.distance(b, t)
        kinds[(kind, fast if da < db else accurate if db < da else "tie")] += 1
    print(f"\nwhere {fast} and {accurate} differ (better one by the truth):")
    for (kind, better), n in sorted(kinds.items()):
        print(f"  {kind:<8} {better:<16} {n}")


def replay_rules(lines: list[TruthLine], accurate: str, fast: str = "tiny") -> None:
    """The cascade with each rule: ``fast``'s reading unless the rule sends the line to ``accurate``."""
    print(f"\ncascade rules ({fast}, then {accurate}):")
    differ = sum(line_norm(l.readings[fast][0]) != line_norm(l.readings[accurate][0]) for l in lines)
    print(f"  lines where tiny and {accurate} differ: {differ}/{len(lines)} ({differ / len(lines):.1%})")
    for name, rule in rules().items():
        chosen, again, caught = {}, 0, 0
        for i, l in enumerate(lines):
            t, _, r = l.readings[fast]
            use = rule(t, r)
            again += use
            caught += use and line_norm(t) != line_norm(l.readings[accurate][0])
            chosen[i] = l.readings[accurate][0] if use else t
        cer, exact, _ = score(lines, chosen)
        print(f"  {name:<34} re-read {again / len(lines):6.1%}  catches {caught:>4}/{differ}  CER {cer:6.2%}  "
              f"exact {exact:5.1%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-doc", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--recognizers", default="tiny,small,small-int8")
    ap.add_argument("--max-side", type=int, default=2000, help="RapidOCR's Global.max_side_len for the crops")
    ap.add_argument("--rules", action="store_true", help="replay cascade rules (needs tiny and --accurate)")
    ap.add_argument("--accurate", default="small@openvino")
    ap.add_argument("--show", type=int, default=0, help="print this many lines where the first two recognizers differ")
    args = ap.parse_args()
    from rapidocr import RapidOCR

    from longdoc.engines.rapidocr.worker import DEFAULT_PARAMS

    det = RapidOCR(params={**DEFAULT_PARAMS, "Global.max_side_len": args.max_side})
    docs = [d for d in build() if not args.only or any(p in d.name for p in args.only.split(","))]
    lines: list[TruthLine] = []
    for doc in docs:
        scan = pdfium.PdfDocument(str(doc.scan))
        born = pdfium.PdfDocument(str(doc.born))
        picks = sorted({round((k + 0.5) * doc.pages / args.per_doc - 0.5) for k in range(args.per_doc)})
        for index in picks:
            image = np.asarray(scan[index].render(scale=DPI / 72).to_pil().convert("RGB"))
            found = det(np.ascontiguousarray(image[..., ::-1]), use_rec=False)
            quads = [np.asarray(b, dtype=np.float32) for b in (found.boxes if found.boxes is not None else [])]
            scale = 1.0
            h, w = image.shape[:2]
            if max(h, w) > args.max_side:  # crops as the engine makes them: from the image RapidOCR resized
                import cv2
                scale = args.max_side / max(h, w)
                small = cv2.resize(image, (int(w * scale), int(h * scale)))
            else:
                small = image
            glyphs = glyphs_of(born, index, doc.truth[index]["angle"], (w, h))
            for line in truth_lines(image, quads, glyphs, doc.name):
                if scale != 1.0:
                    from rapidocr.utils.process_img import get_rotate_crop_image
                    line.crop = get_rotate_crop_image(small, (line.quad * scale).astype(np.float32))
                lines.append(line)
        scan.close()
        born.close()
    kinds = defaultdict(list)
    for i, line in enumerate(lines):
        kinds[line.kind].append(i)
    print(f"{len(lines)} lines from {len(docs)} documents ({', '.join(f'{k} {len(v)}' for k, v in kinds.items())})")
    names = [r for r in args.recognizers.split(",") if r]
    for name in names:
        t0 = time.perf_counter()
        if name == "tesseract":
            got = read_tesseract([l.crop for l in lines])
        else:
            got = read_rapid(rapid_recognizer(name), [l.crop for l in lines])
        seconds = time.perf_counter() - t0
        for line, reading in zip(lines, got):
            line.readings[name] = reading
        cells = []
        for kind in ("all", *kinds):
            idx = range(len(lines)) if kind == "all" else kinds[kind]
            sub = [lines[i] for i in idx]
            cer, exact, n = score(sub, {k: l.readings[name][0] for k, l in enumerate(sub)})
            cells.append(f"{kind} {cer:6.2%} exact {exact:5.1%}")
        again = f"  re-read {_recognizers[-1].rechecked / max(1, _recognizers[-1].lines):.1%}" \
            if name.startswith("cascade") and _recognizers else ""
        print(f"{name:<14} {1000 * seconds / max(1, len(lines)):6.1f} ms/line  " + " | ".join(cells) + again, flush=True)
    fast = next((n for n in names if n.startswith("tiny")), None)
    if args.rules and fast and args.accurate in names:
        differences(lines, fast, args.accurate)
        replay_rules(lines, args.accurate, fast)
    if args.show and len(names) >= 2:
        a, b = names[:2]
        shown = 0
        for line in lines:
            ra, rb = line.readings[a][0], line.readings[b][0]
            if line_norm(ra) != line_norm(rb):
                print(f"[{line.doc}/{line.kind}] truth {line.truth!r}\n   {a}: {ra!r} ({line.readings[a][1]:.3f})"
                      f"\n   {b}: {rb!r} ({line.readings[b][1]:.3f})")
                shown += 1
                if shown >= args.show:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
