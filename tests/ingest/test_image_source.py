from __future__ import annotations

import hashlib

import numpy as np
import pytest
from PIL import Image, ImageFile

from longdoc.ingest.image import ImageSource
from longdoc.ingest.source import DocumentSource


def _save(image: Image.Image, path, fmt: str, **kwargs):
    image.save(path, fmt, **kwargs)
    return path


@pytest.mark.parametrize(
    ("fmt", "media_type", "ext"),
    [
        ("PNG", "image/png", "png"),
        ("JPEG", "image/jpeg", "jpg"),
        ("TIFF", "image/tiff", "tif"),
        ("BMP", "image/bmp", "bmp"),
        ("WEBP", "image/webp", "webp"),
    ],
)
def test_each_format_round_trips(tmp_path, fmt, media_type, ext) -> None:
    extra = {} if fmt == "WEBP" else {"dpi": (300, 300)}
    path = _save(Image.new("RGB", (600, 450), (200, 30, 30)), tmp_path / f"a.{ext}", fmt, **extra)
    with ImageSource(path, media_type) as source:
        assert isinstance(source, DocumentSource)
        assert source.page_count == 1
        assert source.media_type == media_type
        assert source.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        dpi = 72 if fmt == "WEBP" else 300
        assert source.page_size(1) == pytest.approx((600 * 72 / dpi, 450 * 72 / dpi), rel=1e-3)
        rendered = source.render(1, 200)
        assert source.text_layer(1) is None
    assert rendered.image.mode == "RGB"
    assert rendered.image.size == (600, 450)  # native pixels, not resampled to 200 dpi
    assert rendered.dpi == pytest.approx(dpi, rel=1e-3)
    red, green, blue = rendered.image.getpixel((300, 200))
    assert red > 150 and green < 80 and blue < 80


def test_multi_page_tiff_has_one_page_per_frame(tmp_path) -> None:
    frames = [Image.new("L", (100 + 10 * i, 200), 40 * i) for i in range(4)]
    path = tmp_path / "scan.tif"
    frames[0].save(path, save_all=True, append_images=frames[1:], dpi=(144, 144))
    with ImageSource(path, "image/tiff") as source:
        assert source.page_count == 4
        assert source.page_size(3) == pytest.approx((120 * 72 / 144, 100))
        rendered = [source.render(page, 144).image for page in (4, 1, 3)]
    assert [image.size for image in rendered] == [(130, 200), (100, 200), (120, 200)]
    assert [image.getpixel((5, 5)) for image in rendered] == [(120,) * 3, (0,) * 3, (80,) * 3]


def test_animated_webp_is_its_first_frame(tmp_path) -> None:
    frames = [Image.new("RGB", (64, 64), color) for color in ("red", "blue", "green")]
    path = tmp_path / "anim.webp"
    frames[0].save(path, save_all=True, append_images=frames[1:], lossless=True)
    with ImageSource(path, "image/webp") as source:
        assert source.page_count == 1
        assert source.render(1, 72).image.getpixel((10, 10)) == (255, 0, 0)


def test_cmyk_jpeg_comes_out_rgb(tmp_path) -> None:
    red_ink = Image.new("CMYK", (80, 60), (0, 255, 255, 0))
    path = _save(red_ink, tmp_path / "cmyk.jpg", "JPEG", quality=95)
    with ImageSource(path, "image/jpeg") as source:
        image = source.render(1, 72).image
    red, green, blue = image.getpixel((40, 30))
    assert image.mode == "RGB" and red > 200 and green < 60 and blue < 60


@pytest.mark.parametrize(
    "make",
    [
        lambda: Image.new("RGBA", (50, 50), (0, 0, 0, 0)),
        lambda: Image.new("LA", (50, 50), (0, 0)),
        lambda: _palette_with_transparent_black(),
    ],
    ids=["RGBA", "LA", "P+transparency"],
)
def test_transparent_pixels_are_white_paper(tmp_path, make) -> None:
    path = _save(make(), tmp_path / "t.png", "PNG")
    with ImageSource(path, "image/png") as source:
        image = source.render(1, 72).image
    assert image.mode == "RGB"
    assert image.getpixel((25, 25)) == (255, 255, 255)


def _palette_with_transparent_black() -> Image.Image:
    image = Image.new("P", (50, 50), 0)
    image.putpalette([0, 0, 0] * 256)
    image.info["transparency"] = 0
    return image


def test_sixteen_bit_grey_keeps_its_tones(tmp_path) -> None:
    values = np.array([[0, 16384, 32768, 65535]], dtype=np.uint16).repeat(4, axis=0)
    path = _save(Image.fromarray(values), tmp_path / "g16.png", "PNG")
    with ImageSource(path, "image/png") as source:
        image = source.render(1, 72).image
    greys = [image.getpixel((x, 0))[0] for x in range(4)]
    assert greys == pytest.approx([0, 64, 128, 255], abs=1)


def test_bilevel_and_palette_images_come_out_rgb(tmp_path) -> None:
    for mode in ("1", "P", "L"):
        image = Image.new(mode, (20, 10), 1 if mode == "1" else 0)
        path = _save(image, tmp_path / f"{mode}.png", "PNG")
        with ImageSource(path, "image/png") as source:
            assert source.render(1, 72).image.mode == "RGB"


def test_exif_orientation_is_applied(tmp_path) -> None:
    # Stored landscape 300x200 with a black left edge; orientation 6 means
    # "rotate 90 degrees clockwise to view": upright it is 200x300 with the
    # black edge at the top.
    stored = Image.new("RGB", (300, 200), "white")
    stored.paste((0, 0, 0), (0, 0, 30, 200))
    exif = Image.Exif()
    exif[0x0112] = 6
    path = _save(stored, tmp_path / "phone.jpg", "JPEG", exif=exif, dpi=(100, 100), quality=95)
    with ImageSource(path, "image/jpeg") as source:
        assert source.page_size(1) == pytest.approx((200 * 72 / 100, 300 * 72 / 100))
        image = source.render(1, 72).image
    assert image.size == (200, 300)
    assert sum(image.getpixel((100, 10))) < 100  # top: black
    assert sum(image.getpixel((100, 290))) > 700  # bottom: white


def test_non_square_pixels_are_made_square(tmp_path) -> None:
    path = _save(Image.new("L", (204, 98), 255), tmp_path / "fax.tif", "TIFF", dpi=(204, 98))
    with ImageSource(path, "image/tiff") as source:
        assert source.page_size(1) == pytest.approx((72, 72))
        rendered = source.render(1, 200)
    assert rendered.dpi == pytest.approx(204)
    assert rendered.image.size == (204, 204)


@pytest.mark.parametrize("dpi", [None, (0.5, 0.5), (1e6, 1e6)])
def test_absurd_or_missing_dpi_counts_as_72(tmp_path, dpi) -> None:
    extra = {} if dpi is None else {"dpi": dpi}
    path = _save(Image.new("RGB", (144, 72)), tmp_path / "odd.png", "PNG", **extra)
    with ImageSource(path, "image/png") as source:
        assert source.page_size(1) == pytest.approx((144, 72))
        assert source.render(1, 300).dpi == 72


def test_render_over_the_pixel_limit_is_shrunk(tmp_path) -> None:
    path = _save(Image.new("L", (400, 100), 255), tmp_path / "fax.tif", "TIFF", dpi=(200, 100))
    with ImageSource(path, "image/tiff", max_pixels=40_000) as source:
        rendered = source.render(1, 200)  # square pixels would be 400x200
        width_pt, _ = source.page_size(1)
    width, height = rendered.image.size
    assert width * height <= 40_000 and width == pytest.approx(2 * height, abs=2)
    assert width * 72 / rendered.dpi == pytest.approx(width_pt, rel=0.01)
    assert rendered.downscaled


def test_render_pixel_cap_shrinks_an_accepted_image_and_says_so(tmp_path) -> None:
    path = _save(Image.new("L", (1000, 800), 255), tmp_path / "big.png", "PNG", dpi=(300, 300))
    with ImageSource(path, "image/png", max_pixels=1_000_000, max_render_pixels=200_000) as source:
        rendered = source.render(1, 300)
        width_pt, _ = source.page_size(1)
    assert rendered.image.width * rendered.image.height <= 200_000 and rendered.downscaled
    assert rendered.image.width * 72 / rendered.dpi == pytest.approx(width_pt, rel=0.01)
    with ImageSource(path, "image/png", max_pixels=1_000_000) as source:
        assert not source.render(1, 300).downscaled


def test_pillow_truncated_loading_stays_off() -> None:
    import longdoc.ingest  # noqa: F401  (importing it must not switch it on)

    assert ImageFile.LOAD_TRUNCATED_IMAGES is False
