"""Pages of code-like tokens, set in real fonts and scanned, with the exact tokens as truth.

What users search a document for: part numbers, invoice numbers, IBANs,
hexadecimal ids, mixed-case keys and serial numbers, each drawn from the
alphabet its kind really uses: upper-case letters and digits for part
numbers, IBANs and serials (so ``O`` beside ``0``, ``I`` beside ``1``,
``S`` beside ``5``, ``B`` beside ``8``), hexadecimal digits for keys, and
for mixed-case keys the Base58 alphabet (Bitcoin's, also used for API
keys), which leaves out ``0 O I l``: those four are the same glyph or
nearly in many sans-serif faces, and no reader, human or machine, can
tell ``Il`` apart in Arial at 8 pt. Each line
holds one token after a short label ("Invoice no. INV-2026-000417"), as
forms, invoices and parts lists set them; a page is one font at one size.

:func:`code_pages` typesets the pages (fonts from Debian's
``fonts-liberation2``, ``fonts-crosextra-carlito``, ``fonts-dejavu-core``
and ``fonts-freefont-ttf``; the fonts missing here are left out) and
returns the truth; :func:`~tests.docgen.raster.office_scan` turns the PDF
into what a scanner gives.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

from fpdf import FPDF

from tests.docgen.layout import A4, FIXED_DATE

FONTS = {
    "LiberationSans": Path("/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"),
    "LiberationSerif": Path("/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"),
    "LiberationMono": Path("/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf"),
    "Carlito": Path("/usr/share/fonts/truetype/crosextra/Carlito-Regular.ttf"),
    "DejaVuSans": Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    "DejaVuSerif": Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"),
    "DejaVuSansMono": Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"),
    "FreeSerif": Path("/usr/share/fonts/truetype/freefont/FreeSerif.ttf"),
}
SIZES = (8.0, 10.0, 12.0)
MARGIN = 60.0

_UPPER = string.ascii_uppercase
_ALNUM = string.ascii_uppercase + string.digits
#: the national part of an IBAN per country (ISO 13616): n digits, a letters, c letters or digits
IBAN_SHAPES = {"DE": "n18", "GB": "a4n14", "FR": "n10c11n2", "NL": "a4n10", "CH": "n5c12", "AT": "n16",
               "IT": "a1n10c12", "ES": "n20", "BE": "n12"}
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


@dataclass(frozen=True)
class CodeLine:
    page: int  # 1-based
    label: str
    token: str
    kind: str
    font: str
    size: float


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _token(rng: random.Random, kind: str) -> str:
    if kind == "part":
        return f"{_pick(rng, _UPPER, 2)}-{_pick(rng, string.digits, 4)}-{_pick(rng, _ALNUM, 3)}"
    if kind == "invoice":
        year = rng.randint(2019, 2027)
        return rng.choice([f"INV-{year}-{_pick(rng, string.digits, 6)}",
                           f"RE{year}/{_pick(rng, string.digits, 4)}-{rng.choice(_UPPER)}"])
    if kind == "iban":
        country, shape = rng.choice(list(IBAN_SHAPES.items()))
        bban = "".join(_pick(rng, {"n": string.digits, "a": _UPPER, "c": _ALNUM}[k], int(n))
                       for k, n in re.findall(r"([nac])(\d+)", shape))
        body = f"{country}{_pick(rng, string.digits, 2)}{bban}"
        return " ".join(body[i:i + 4] for i in range(0, len(body), 4)) if rng.random() < 0.6 else body
    if kind == "hex":
        return rng.choice([f"0x{_pick(rng, '0123456789ABCDEF', 8)}", _pick(rng, "0123456789abcdef", 12),
                           f"TOK{_pick(rng, '0123456789ABCDEF', 6)}{_pick(rng, 'OPX01', 3)}"])
    if kind == "mixed":
        token = _pick(rng, _BASE58, rng.randint(6, 12))
        while not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
            token = _pick(rng, _BASE58, len(token))
        return token
    if kind == "serial":
        return "-".join(_pick(rng, _ALNUM, 4) for _ in range(rng.choice([2, 3])))
    raise ValueError(kind)


KINDS = ("part", "invoice", "iban", "hex", "mixed", "serial")
LABELS = {"part": "Part number", "invoice": "Invoice no.", "iban": "IBAN", "hex": "Key", "mixed": "Licence key",
          "serial": "Serial no."}


def available_fonts() -> dict[str, Path]:
    return {name: path for name, path in FONTS.items() if path.is_file()}


def code_pages(out: Path, *, per_page: int = 21, seed: int = 0, fonts: list[str] | None = None,
               sizes: tuple[float, ...] = SIZES) -> list[CodeLine]:
    """Typeset one page per (font, size), ``per_page`` token lines each, to
    ``out`` (a born-digital PDF); returns every line's truth."""
    rng = random.Random(seed)
    usable = available_fonts()
    names = [f for f in (fonts or list(usable)) if f in usable]
    if not names:
        raise FileNotFoundError("none of the fonts of tests.docgen.codes is installed")
    pdf = FPDF(unit="pt", format=A4)
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(FIXED_DATE)
    for name in names:
        pdf.add_font(name, fname=str(usable[name]))
    truth: list[CodeLine] = []
    page = 0
    for name in names:
        for size in sizes:
            page += 1
            pdf.add_page()
            pdf.set_font(name, size=size)
            leading = max(2.2 * size, (A4[1] - 2 * MARGIN) / per_page)
            for i in range(per_page):
                kind = KINDS[(i + page) % len(KINDS)]
                token = _token(rng, kind)
                label = LABELS[kind]
                pdf.text(MARGIN, MARGIN + (i + 1) * leading, f"{label} {token}")
                truth.append(CodeLine(page, label, token, kind, name, size))
    pdf.output(str(out))
    return truth
