"""RapidOCR on one page, run inside a worker process (or in-process).

Worker processes import only this module: :func:`init_worker` builds one
``RapidOCR`` object per process and warms it up; :func:`ocr_page` then
recognizes one page image per call and returns plain, cheaply pickled values
(:class:`RawPage`). Conversion to the document model happens in the parent.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from longdoc.engines.rapidocr import lookalikes, pitch
from longdoc.engines.rapidocr.cascade import RecheckPlan, attach
from longdoc.engines.rapidocr.ctc import LineReading
from longdoc.engines.rapidocr.symbol_runs import recount_runs
from longdoc.engines.results import check_image
from longdoc.runtime import procs

#: Settings measured on this project's scans (see the engine's docstring).
DEFAULT_PARAMS: dict[str, Any] = {
    "Global.use_cls": False,
    "Global.log_level": "warning",
    "EngineConfig.onnxruntime.intra_op_num_threads": 1,
    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
    "EngineConfig.onnxruntime.enable_cpu_mem_arena": True,
    "Rec.rec_batch_num": 1,
    "Det.limit_type": "max",
    "Det.limit_side_len": 960,
    # a lone glyph (a code listing's "{" on its own line) scores 0.4-0.5 as a box;
    # on 28 real scanned pages 0.4 adds 11 boxes to 1,839, all real glyphs
    "Det.box_thresh": 0.4,
}

#: what a worker imports (for the fork server, :func:`longdoc.runtime.procs.context`)
PRELOAD = ("rapidocr.main", __name__)

_ocr: Any = None  # this process's RapidOCR object
_glyph_checks = True  # this process's run_ocr(glyph_checks=)


@dataclass
class RawPage:
    """One page's OCR output in pixels: quads ``[[x, y] × 4]``, texts, scores."""

    quads: list[list[list[float]]]
    texts: list[str]
    scores: list[float]
    seconds: float
    #: clockwise degrees the image was turned to read it upright (0, 90, 180,
    #: 270); quads are in the turned image's pixels.
    rotation: int = 0
    #: lines read (all passes) and lines read a second time by the accurate
    #: recognizer of a cascade (:mod:`~longdoc.engines.rapidocr.cascade`)
    lines_read: int = 0
    rechecked: int = 0
    #: per line, pixels per character of a fixed-pitch line (None: proportional;
    #: :mod:`~longdoc.engines.rapidocr.pitch`)
    pitches: list[float | None] = field(default_factory=list)
    #: per line, what the recognizer saw (:class:`~longdoc.engines.rapidocr.ctc.LineReading`);
    #: used in the worker, emptied before the page leaves it
    readings: list[Any] = field(default_factory=list)


def precision_of(role: str, cascade: bool) -> str | None:
    """The OpenVINO precision of a role's model (``det``, ``rec``: the first
    recognizer, ``recheck``: the cascade's second): :data:`FAST_PRECISION`
    for the detector and a fast recognizer whose lines are checked, else
    :data:`OPENVINO_PRECISION`."""
    return FAST_PRECISION if role == "det" or (role == "rec" and cascade) else OPENVINO_PRECISION


def build_ocr(params: dict[str, Any], recheck: RecheckPlan | None = None) -> Any:
    """A warmed-up ``RapidOCR`` with ``params`` (raises ImportError if
    missing); with ``recheck``, its recognizer is a cascade whose second,
    accurate model reads again the lines the first was unsure of."""
    from rapidocr import RapidOCR

    _adopt_rapidocr_logger()
    cache_openvino_models()
    ocr = RapidOCR(params=params)  # its models load on first use, at the precision in force then
    load_model(ocr, "det", cascade=recheck is not None)
    load_model(ocr, "rec", cascade=recheck is not None)
    with openvino_precision(OPENVINO_PRECISION):
        attach(ocr, recheck)
    run_ocr(ocr, warm_up_image())
    return ocr


#: what OpenVINO computes in for a model whose reading is final (the
#: cascade's accurate recognizer, a recognizer alone, the layout model):
#: float32, as ONNX Runtime does. Its default on processors with AMX or
#: AVX-512 BF16 is bfloat16, in which the small recognizer ran digit groups
#: together ("3562 3437" read "35623437") and misread 5 of 168 codes that it
#: reads right in float32 (tests/engines/test_codes.py)
OPENVINO_PRECISION = "f32"
#: ... and for the detector and the cascade's fast recognizer: OpenVINO's own
#: default (bfloat16 where the processor has it, else float32). Their
#: readings are checked: a line the fast model may have got wrong (codes,
#: digit runs, low margins) is read again by the accurate model in float32;
#: on the real corpus's lines tiny reads 1.83% CER in bfloat16 (1.71% on ONNX
#: Runtime) at 0.9x its time (bench/lines.py)
FAST_PRECISION: str | None = None

def load_model(ocr: Any, role: str, cascade: bool) -> Any:
    """The detector (``role`` ``det``) or recognizer of the ``RapidOCR``
    object ``ocr``, loaded at :func:`precision_of` its role. A model that
    OpenVINO compiled at its own default precision is first made to read
    the calibration lines (:func:`calibration_problem`); if it misreads
    them, it is compiled again in float32, with a warning. OpenVINO
    2026.4's bfloat16 on a Xeon with AMX read the small recognizer's lines
    as garbage (``"   妖"`` for ``"the quick brown fox"``) while tiny and
    the detector read right: what a precision does to a model is found
    out on the machine, not assumed. The verdict is remembered for this
    machine, model and runtime versions (with the runtimes' choice,
    :mod:`~longdoc.engines.backends`): the check is a full inference at a
    shape no page has, ~0.5 s of CPU in every worker at every start."""
    from longdoc.engines import backends

    precision = precision_of(role, cascade)
    with openvino_precision(precision):
        model = _load(ocr, role)
    if precision == OPENVINO_PRECISION or not _on_openvino(model):
        return model
    key = "calibration-" + backends.machine_key(1, [role, *_model_facts(ocr, role)])
    remembered = backends.remembered(key)
    if remembered is not None and "problem" in remembered:
        problem = remembered["problem"]
    else:
        problem = calibration_problem(model, role)
        backends.remember(key, {"problem": problem, "role": role, "checked_at": time.time()})
    if problem is None:
        return model
    logging.getLogger(__name__).warning(
        "OpenVINO's default precision misreads; computing in float32",
        extra={"role": role, "problem": problem, "precision": OPENVINO_PRECISION})
    if role == "det":
        ocr.text_det = None
    else:
        ocr.text_rec = None
    with openvino_precision(OPENVINO_PRECISION):
        return _load(ocr, role)


def _model_facts(ocr: Any, role: str) -> list[str]:
    """What names the model of ``role`` in ``ocr``'s settings (its file, or
    the wheel's model by version, type and language), as model files for
    :func:`~longdoc.engines.backends.machine_key` (a file is taken by its hash)."""
    cfg = ocr.cfg.Det if role == "det" else ocr.cfg.Rec
    names = [str(cfg.get(k)) for k in ("ocr_version", "model_type", "lang_type", "engine_type")]
    path = cfg.get("model_path")
    return [str(path) if path else "", "/".join(names)]


def _load(ocr: Any, role: str) -> Any:
    return ocr._load_det_model() if role == "det" else ocr._load_rec_model()


def _on_openvino(model: Any) -> bool:
    return type(getattr(model, "session", None)).__name__ == "OpenVINOInferSession"


#: how close (normalized Levenshtein similarity) a recognizer's reading of
#: the calibration lines must come to their text: tiny and small read them at
#: 0.98-1.0; a model that computes garbage reads under 0.1
CALIBRATION_SIMILARITY = 0.9


def calibration_problem(model: Any, role: str) -> str | None:
    """What is wrong with ``model``'s reading of :func:`calibration_image`
    (None: nothing): a detector must find a line in every line's band, a
    recognizer (a RapidOCR ``TextRecognizer``) must read the lines' text
    within :data:`CALIBRATION_SIMILARITY`."""
    from rapidfuzz.distance import Levenshtein

    image = np.ascontiguousarray(calibration_image()[..., ::-1])
    if role == "det":
        boxes = model(image).boxes
        centres = [float(np.mean(np.asarray(box)[:, 1])) for box in (boxes if boxes is not None else [])]
        missed = [i for i, (top, bottom) in enumerate(CALIBRATION_LINES) if not any(top <= c <= bottom for c in centres)]
        return f"found no box on calibration lines {missed}" if missed else None
    from rapidocr.ch_ppocr_rec.typings import TextRecInput

    crops = [np.ascontiguousarray(image[top:bottom]) for top, bottom in CALIBRATION_LINES]
    read = " ".join(str(t) for t in (model(TextRecInput(img=crops)).txts or ()))
    truth = " ".join(calibration_lines())
    similarity = Levenshtein.normalized_similarity(" ".join(read.split()), truth)
    return None if similarity >= CALIBRATION_SIMILARITY else \
        f"read the calibration lines at similarity {similarity:.2f} ({read[:40]!r} for {truth[:40]!r})"


#: RapidOCR's OpenVINO session module (whose ``Core`` :func:`cache_openvino_models` replaces)
RAPIDOCR_OPENVINO = "rapidocr.inference_engine.openvino.main"


#: the precision the next OpenVINO model compiles at (:func:`openvino_precision`)
_precision: list[str | None] = [OPENVINO_PRECISION]


@contextlib.contextmanager
def openvino_precision(precision: str | None) -> Iterator[None]:
    """OpenVINO models loaded inside compute at ``precision`` (None: OpenVINO's
    default); outside, at :data:`OPENVINO_PRECISION`. Needs
    :func:`cache_openvino_models` for the session module."""
    before = _precision[0]
    _precision[0] = precision
    try:
        yield
    finally:
        _precision[0] = before


def cache_openvino_models(module: str = RAPIDOCR_OPENVINO) -> None:
    """Make the OpenVINO sessions of ``module`` (a library's OpenVINO
    session module) keep their compiled models in ``<cache folder>/openvino``
    (:func:`~longdoc.engines.backends.cache_dir`) and compute at the
    precision :func:`openvino_precision` sets. OpenVINO compiles every model at
    every start (~1 s per model and worker) and reads a cached compilation
    back in a fraction of that; on processors with AMX or AVX-512 BF16 it
    computes in bfloat16 unless told otherwise, which moved the layout
    model's boxes enough to change a page's reading order. RapidOCR 3.10
    and rapid-layout 1.2 create their ``openvino.Core`` themselves with no
    way to set either, so the ``Core`` their session module uses is replaced
    by one that does (in this process only). Without OpenVINO or the
    module, or with a read-only cache folder, nothing changes."""
    from longdoc.engines.backends import cache_dir, no_telemetry

    no_telemetry()
    try:
        import openvino
        session: Any = importlib.import_module(module)  # RapidOCR's OpenVINO module: its Core is replaced below
    except ImportError:
        return
    if getattr(session.Core, "longdoc_cache", False):
        return

    folder = cache_dir() / "openvino"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return

    class CachingCore(openvino.Core):
        longdoc_cache = True

        def __init__(self) -> None:
            super().__init__()
            self.set_property({"CACHE_DIR": str(folder)})
            if _precision[0]:
                self.set_property("CPU", {"INFERENCE_PRECISION_HINT": _precision[0]})

    session.Core = CachingCore


def init_worker(params: dict[str, Any], owner_pid: int | None = None, recheck: RecheckPlan | None = None,
                glyph_checks: bool = True) -> None:
    """Process-pool initializer: tie this process to ``owner_pid`` (it exits
    when the owner does), log JSON lines, build the OCR object once."""
    global _ocr, _glyph_checks
    if owner_pid is not None:
        procs.die_with(owner_pid)
    _json_logs()
    _ocr = build_ocr(params, recheck)
    _glyph_checks = glyph_checks


def _adopt_rapidocr_logger() -> None:
    """RapidOCR's logger prints coloured text with a handler of its own;
    route it through this process's handlers instead."""
    logger = logging.getLogger("RapidOCR")
    logger.handlers[:] = []
    logger.propagate = True


def _json_logs() -> None:
    """A worker's log records (warnings and up) as JSON lines on stderr,
    like the service's own."""
    from pythonjsonlogger.json import JsonFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                       rename_fields={"asctime": "ts", "levelname": "level", "name": "logger"}))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def ocr_page(image: np.ndarray) -> RawPage:
    """Recognize one RGB page image with this process's OCR object."""
    if _ocr is None:
        raise RuntimeError("worker not initialized: init_worker() was not run")
    return run_ocr(_ocr, image, glyph_checks=_glyph_checks)


def run_ocr(ocr: Any, image: np.ndarray, *, upright: bool = True, glyph_checks: bool = True) -> RawPage:
    """Run ``ocr`` on an RGB ``uint8`` (H, W, 3) image.

    With ``upright``, a page that reads sideways (most line boxes taller
    than wide) is also read turned by 90° and 270°, and a page read with low
    confidence also turned by 180°; the reading with the most confident
    characters wins and its ``rotation`` is reported. Upright pages cost one
    pass as before.

    Inside codes, each ``O``/``0`` is read by its glyph's shape
    (:mod:`~longdoc.engines.rapidocr.lookalikes`); lines set in a fixed-pitch font
    get their spaces from the character grid and their pitch
    (:mod:`~longdoc.engines.rapidocr.pitch`); runs of a repeated symbol at a line's
    end or start, and leader dots, are then counted again from the image
    (:mod:`~longdoc.engines.rapidocr.symbol_runs`; a line's quad then reaches its
    last leader dot). Without ``glyph_checks`` the first two do not run
    (codes and fixed-pitch lines read as the recognizer read them); runs
    and leaders are always counted (a contents page's dots are most of its
    characters).

    Raises ``ValueError`` for an image of the wrong shape or type; whatever
    RapidOCR raises passes through (the caller fails the page).
    """
    check_image(image)
    t0 = time.perf_counter()
    counts = _counts(ocr)
    best = _read(ocr, image, 0)
    if upright:
        for rotation in _turns_worth_trying(best):
            candidate = _read(ocr, image, rotation)
            if _better(candidate, best):
                best = candidate
    turned = _turned(image, best.rotation)
    if glyph_checks:
        best.texts, best.pitches = _lines_by_glyph(turned, best.quads, best.texts, best.readings)
    best.texts, best.quads = recount_runs(turned, best.quads, best.texts)
    best.readings = []
    best.seconds = time.perf_counter() - t0
    best.lines_read, best.rechecked = (now - before for now, before in zip(_counts(ocr), counts))
    return best


def _counts(ocr: Any) -> tuple[int, int]:
    """Lines the OCR object's recognizer has read, and read twice (a cascade
    counts them; a plain recognizer reports none)."""
    rec = getattr(ocr, "text_rec", None)
    return getattr(rec, "lines", 0), getattr(rec, "rechecked", 0)


#: below this mean recognition score a page is also tried upside down
UPSIDE_DOWN_SCORE = 0.8


def _turns_worth_trying(raw: RawPage) -> tuple[int, ...]:
    if not raw.quads:
        return ()
    if _sideways(raw):
        return (90, 270)
    if sum(raw.scores) / len(raw.scores) < UPSIDE_DOWN_SCORE:
        return (180,)
    return ()


def _better(candidate: RawPage, best: RawPage) -> bool:
    """RapidOCR turns tall line crops itself, so sideways text often reads
    well even with vertical boxes; then boxes lying flat win unless they
    read clearly worse. Otherwise the clearly more confident reading wins."""
    chars, best_chars = _confident_chars(candidate), _confident_chars(best)
    if _sideways(best) and not _sideways(candidate):
        return chars >= 0.9 * best_chars
    return chars > 1.1 * best_chars


def _sideways(raw: RawPage) -> bool:
    tall = 0
    for quad in raw.quads:
        xs, ys = [p[0] for p in quad], [p[1] for p in quad]
        if (max(ys) - min(ys)) > 1.5 * (max(xs) - min(xs)):
            tall += 1
    return bool(raw.quads) and tall * 2 > len(raw.quads)


def _confident_chars(raw: RawPage) -> float:
    return sum(score * len(text.strip()) for text, score in zip(raw.texts, raw.scores))


def _turned(image: np.ndarray, rotation: int) -> np.ndarray:
    return np.rot90(image, k=-(rotation // 90)) if rotation else image


def _read(ocr: Any, image: np.ndarray, rotation: int) -> RawPage:
    turned = _turned(image, rotation)
    # RapidOCR reads a 3-channel ndarray as BGR (OpenCV order).
    out = ocr(np.ascontiguousarray(turned[..., ::-1]))
    boxes, texts, scores = out.boxes, out.txts, out.scores
    if boxes is None or texts is None or scores is None:
        return RawPage([], [], [], 0.0, rotation)
    readings = list(getattr(out, "word_results", None) or ())
    return RawPage(
        quads=np.asarray(boxes, dtype=float).tolist(),
        texts=[str(t) for t in texts],
        scores=[float(s) for s in scores],
        seconds=0.0,
        rotation=rotation,
        readings=readings if len(readings) == len(texts) else [],
    )


def _lines_by_glyph(image: np.ndarray, quads: list[list[list[float]]], texts: list[str], readings: list[Any]
                    ) -> tuple[list[str], list[float | None]]:
    """Each line's text read again where its glyphs decide — ``O`` or ``0``
    inside codes (:mod:`~longdoc.engines.rapidocr.lookalikes`; whether the page's
    fixed-pitch font marks its zeros is learnt from all its fixed-pitch
    lines), the spaces of a fixed-pitch line (:mod:`~longdoc.engines.rapidocr.pitch`)
    — and its pitch in pixels (None: proportional)."""
    from rapidocr.utils.process_img import get_rotate_crop_image

    crops = [get_rotate_crop_image(image, _rectangle(quad)) for quad in quads]
    places = [pitch.PlacedLine(left=quad[0][0], cy=(quad[0][1] + quad[3][1]) / 2, height=max(1.0, quad[3][1] - quad[0][1]))
              for quad in quads]
    grids = pitch.page_grids(crops, texts, places)
    ok = [r if isinstance(r, LineReading) and r.text == t else None
          for r, t in zip(list(readings) + [None] * (len(texts) - len(readings)), texts)]
    marks_zero = any(g is not None and r is not None and lookalikes.marks_zeros(c, r)
                     for c, g, r in zip(crops, grids, ok))
    aspects = [a for c, g, r in zip(crops, grids, ok) if g is None and r is not None
               for a in lookalikes.digit_aspects(c, r)]
    digit_aspect = statistics.median(aspects) if aspects else None
    out = list(texts)
    pitches: list[float | None] = [None] * len(texts)
    for i, (crop, grid, reading) in enumerate(zip(crops, grids, ok)):
        text = texts[i]
        if reading is not None:
            text = lookalikes.settle(crop, reading, fixed=grid is not None, marks_zero=marks_zero,
                                     digit_aspect=digit_aspect)
        if grid is not None:
            text, pitches[i] = pitch.respaced(text, grid), grid.grid.pitch
        out[i] = text
    return out, pitches


def _rectangle(quad: list[list[float]]) -> np.ndarray:
    """The rectangle ``quad`` stands for (same centre, its top edge's
    direction, its mean width and height), corners in the quad's order.
    The detector's quads are rectangles rounded to whole pixels of its
    smaller image: their sides differ by a pixel or two, and cropping such
    a quad is a perspective warp that stretches one end of a long line
    against the other (a 60-character code line: 15.3 px a character at
    its left end, 14.8 at its right, its grid lost), or not, by how the
    runtime's numbers rounded. A rectangle's crop only turns the line."""
    q = np.asarray(quad, dtype=np.float64)
    centre = q.mean(axis=0)
    along = (q[1] - q[0]) + (q[2] - q[3])
    norm = float(np.hypot(*along))
    if norm == 0:
        return q.astype(np.float32)
    u = along / norm
    n = np.array([-u[1], u[0]])
    width = abs(float(np.dot((q[1] - q[0]) + (q[2] - q[3]), u))) / 2
    height = abs(float(np.dot((q[3] - q[0]) + (q[2] - q[1]), n))) / 2
    du, dn = u * width / 2, n * height / 2
    return np.array([centre - du - dn, centre + du - dn, centre + du + dn, centre - du + dn], dtype=np.float32)


def time_roles(candidates: dict[str, dict[str, dict[str, Any]]], owner_pid: int | None = None
               ) -> dict[str, dict[str, float]]:
    """Seconds each role's model takes on each runtime (``candidates``: role
    → runtime → RapidOCR settings): the detector (``det``) on
    :func:`calibration_image`, a recognizer (any other role) on its lines
    (best of three after a warm-up run). The recognizers' crops are as a
    page's lines are: most as wide as the text column, a few pixels apart
    from line to line and from run to run, one or two short ones. OpenVINO
    pays for each input shape it has not seen: timed on widths it had
    always seen, the tiny recognizer looked 2x faster on it than on ONNX
    Runtime, and was 1.3x slower on real lines. A runtime that fails is
    left out of its role."""
    if owner_pid is not None:
        procs.die_with(owner_pid)
    from rapidocr import RapidOCR
    from rapidocr.ch_ppocr_rec.typings import TextRecInput

    cache_openvino_models()
    image = np.ascontiguousarray(calibration_image()[..., ::-1])

    def crops(run: int) -> list[np.ndarray]:  # as on a page: full lines a few pixels apart, a short one or two
        widths = [1400 + 13 * ((7 * i + 5 * run) % 11) for i in range(6)] + [420 + 9 * run, 760 - 7 * run]
        return [np.ascontiguousarray(image[top:bottom, :width]) for (top, bottom), width in zip(CALIBRATION_LINES, widths)]

    def run(role: str, model: Any, k: int) -> None:
        if role == "det":
            model(image)
        else:
            for crop in crops(k):
                model(TextRecInput(img=[crop]))

    seconds: dict[str, dict[str, float]] = {}
    for role, by_runtime in candidates.items():
        for runtime, params in by_runtime.items():
            try:
                ocr = RapidOCR(params=params)
                model = load_model(ocr, role, cascade="recheck" in candidates)
                run(role, model, 0)
                runs = []
                for k in range(1, 4):
                    t0 = time.perf_counter()
                    run(role, model, k)
                    runs.append(time.perf_counter() - t0)
                seconds.setdefault(role, {})[runtime] = min(runs)
            except Exception as exc:
                logging.getLogger(__name__).warning("runtime failed", extra={"role": role, "runtime": runtime,
                                                                            "error": repr(exc)})
    return seconds


#: (top, bottom) pixel rows of each line of :func:`calibration_image`
CALIBRATION_LINES = [(30 + i * 52 - 8, 30 + i * 52 + 42) for i in range(8)]


def calibration_image() -> np.ndarray:
    """A fifth of a dense page: 8 lines of printed text at about 200 dpi, of
    different lengths (each line is a new input shape, as on a real page),
    so both models work as they do on pages."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=30)
    img = Image.new("RGB", (1600, 8 * 52 + 60), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(calibration_lines()):
        draw.text((40, 30 + i * 52), line, fill="black", font=font)
    return np.asarray(img)


def calibration_lines() -> list[str]:
    """The text of :func:`calibration_image`'s lines, top to bottom."""
    words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge "
             "boxing matches 0123 4567 89 and report every result").split()
    return [" ".join(words[(i * 3 + j) % len(words)] for j in range(14 - i % 4 * 3)) for i in range(8)]


def warm_up_image() -> np.ndarray:
    """A small RGB image with one printed line, so detection *and*
    recognition models both run once."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (480, 96), "white")
    ImageDraw.Draw(img).text(
        (16, 24), "Warm up 0123", fill="black", font=ImageFont.load_default(size=40)
    )
    return np.asarray(img)
