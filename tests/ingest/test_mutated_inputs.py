"""Damaged variants of valid files: each either opens (its pages rendering or
failing one by one) or is refused with a typed error. Never anything else."""

from __future__ import annotations

import io
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from longdoc.config import LimitSettings
from longdoc.errors import LongdocError, PageRenderFailed
from longdoc.ingest import open_document
from tests.ingest.files import noise_image, text_pdf


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("seeds")
    files = {
        "pdf": text_pdf(folder / "s.pdf", [
            {"texts": [(30, 50, "Hello world", 12), (30, 90, "Grüße 你好", 12)]},
            {"size": (300, 300), "texts": [(10, 40, "two", 20)]},
        ]).read_bytes()
    }
    for fmt in ("PNG", "JPEG", "TIFF", "BMP", "WEBP"):
        buffer = io.BytesIO()
        frames = [noise_image((64, 48)), noise_image((32, 32), "L")]
        frames[0].save(buffer, fmt, save_all=fmt == "TIFF", append_images=frames[1:])
        files[fmt.lower()] = buffer.getvalue()
    return files


edits = st.lists(
    st.tuples(
        st.sampled_from(["set", "cut", "insert"]),
        st.floats(0, 1),
        st.binary(min_size=1, max_size=16),
    ),
    min_size=1,
    max_size=6,
)


def _mutate(data: bytes, changes) -> bytes:
    out = bytearray(data)
    for kind, where, payload in changes:
        at = min(int(where * len(out)), max(len(out) - 1, 0))
        if kind == "set":
            out[at:at + len(payload)] = payload
        elif kind == "cut":
            del out[at:at + 8 * len(payload)]
        else:
            out[at:at] = payload
    return bytes(out)


@settings(max_examples=120, deadline=None)
@given(kind=st.sampled_from(["pdf", "png", "jpeg", "tiff", "bmp", "webp"]), changes=edits)
def test_damaged_files_fail_only_with_typed_errors(seeds, kind, changes) -> None:
    limits = LimitSettings(max_pixels=5_000_000, max_pages=50)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow warns about the damage it skips
        path = Path(folder) / "damaged"
        path.write_bytes(_mutate(seeds[kind], changes))
        try:
            source = open_document(path, limits)
        except LongdocError as exc:
            assert exc.hint
            return
        with source:
            for page in range(1, source.page_count + 1):
                try:
                    rendered = source.render(page, 50)
                    source.text_layer(page)
                except PageRenderFailed:
                    continue
                assert rendered.image.mode == "RGB"
