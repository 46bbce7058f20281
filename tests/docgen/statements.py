"""A financial statement whose table rows the PDF writes as single lines.

Each row is one string: the label, then the amounts moved to their
columns with runs of spaces (as a report generator or a word processor
with tab stops turned into spaces writes them), so the text layer holds
one line per row and no gap wide enough to split it. The amounts are
right-aligned; the columns sit 40-70 pt apart (under pdfium's own split).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fpdf import FPDF

from tests.docgen.layout import A4, FIXED_DATE, FONT_FILES

TITLE = "Consolidated statement of operations (in thousands of euros)"
HEAD = ("", "2025", "2024", "Change")
ROWS = (("Revenue", "12,418", "11,902", "4.3%"), ("Cost of sales", "(7,311)", "(7,045)", "3.8%"),
        ("Gross profit", "5,107", "4,857", "5.1%"), ("Research and development", "(1,204)", "(1,150)", "4.7%"),
        ("Selling and administrative", "(2,016)", "(1,998)", "0.9%"), ("Operating profit", "1,887", "1,709", "10.4%"),
        ("Net finance costs", "(212)", "(240)", "-11.7%"), ("Profit before tax", "1,675", "1,469", "14.0%"))
AFTER = ("The operating profit rose by a tenth as the new plant reached its full rate in the spring, and the cost of "
         "sales grew more slowly than revenue.")
#: right edges of the amount columns, in points
COLUMNS = (300.0, 380.0, 460.0)


@dataclass(frozen=True)
class Statement:
    pdf_path: Path
    rows: tuple[tuple[str, ...], ...]  # the header row, then the body rows


def statement(tmp_dir: str | Path) -> Statement:
    """Write ``statement.pdf`` (one A4 page, DejaVu Sans 10 pt) into ``tmp_dir``."""
    pdf = FPDF(unit="pt", format=A4)
    pdf.set_creation_date(FIXED_DATE)
    pdf.add_font("sans", fname=str(FONT_FILES["sans"]))
    pdf.add_page()
    pdf.set_font("sans", size=10)
    y = 90.0
    pdf.text(72, y, TITLE)
    y += 32
    space = pdf.get_string_width(" ")
    for row in (HEAD, *ROWS):
        line = row[0]
        for right, value in zip(COLUMNS, row[1:]):
            gap = right - pdf.get_string_width(value) - 72 - pdf.get_string_width(line)
            line += " " * max(1, round(gap / space)) + value
        pdf.text(72, y, line)
        y += 16
    pdf.text(72, y + 18, AFTER)
    out = Path(tmp_dir) / "statement.pdf"
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
    return Statement(out, (HEAD, *ROWS))
