"""The documentation stays true to the code: the generated reference pages
(docs/reference/) are what scripts/gen-reference.py gives today, every
setting, environment variable and metric a page names exists, every default
a page quotes as "`section.key` (N)" is the code's, and every relative link
in README.md, docs/ and bench/results/ reaches a file (and a heading).
Fast: nothing here runs OCR."""

from __future__ import annotations

import difflib
import importlib.util
import json
import re
from functools import cache
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from longdoc.cli import app
from longdoc.config import Settings

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "scripts" / "gen-reference.py"
RUN = "run python scripts/gen-reference.py"
SECTIONS = tuple(Settings.model_fields)
README_MAX_LINES = 250


@cache
def _gen():
    spec = importlib.util.spec_from_file_location("gen_reference", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _pages() -> dict[Path, str]:
    return _gen().pages()


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "bench" / "results").glob("*.md"))]


def _prose_files() -> list[Path]:
    """The pages that say what is true now: not the generated reference (checked
    against the code as a whole), nor the benchmark journal (what was true on
    its date)."""
    skip = (ROOT / "docs" / "reference", ROOT / "bench" / "results")
    return [p for p in _doc_files() if not any(s in p.parents for s in skip)]


def _has_key(model: type[BaseModel], path: list[str]) -> bool:
    for i, part in enumerate(path):
        field = model.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
        if i < len(path) - 1:
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                return False
            model = annotation
    return True


def _default(path: list[str]):
    value = Settings()
    for part in path:
        value = getattr(value, part)
    return value


@pytest.fixture
def no_longdoc_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in [k for k in os.environ if k.startswith("LONGDOC_")]:
        monkeypatch.delenv(key)


# -- the generated reference -------------------------------------------------------------


@pytest.mark.parametrize("name", ["configuration.md", "errors.md", "metrics.md", "document.schema.json",
                                  "modules.md"])
def test_reference_page_is_current(name: str) -> None:
    path = Path("docs") / "reference" / name
    generated = _pages()[path]
    committed_file = ROOT / path
    assert committed_file.is_file(), f"{path} is missing: {RUN}"
    committed = committed_file.read_text(encoding="utf-8")
    if committed != generated:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                                 f"{path} (committed)", f"{path} (from the code)"))[:40])
        pytest.fail(f"{path} is out of date with the code: {RUN}\n{diff}", pytrace=False)


def test_the_generator_writes_only_the_reference_pages() -> None:
    assert set(_pages()) == {Path("docs/reference") / n for n in
                             ("configuration.md", "errors.md", "metrics.md", "document.schema.json", "modules.md")}
    present = sorted(p.name for p in (ROOT / "docs" / "reference").iterdir())
    assert present == sorted(p.name for p in _pages()), f"docs/reference/ holds pages nothing generates: {RUN}"


def _flatten(tree: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_configuration_reference_has_every_key_config_show_prints(no_longdoc_env: None) -> None:
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    shown = _flatten(yaml.safe_load(result.output))
    page = _pages()[Path("docs/reference/configuration.md")]
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]  # | key | type | default | description |
        if len(cells) == 4 and re.fullmatch(r"`[a-z0-9_.]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[2].strip("`")
    assert list(rows) == list(shown), "configuration.md lists other keys, or another order, than `longdoc config show`"
    wrong = {key: (rows[key], value) for key, value in shown.items() if json.loads(rows[key]) != value}
    assert not wrong, f"configuration.md's defaults differ from `longdoc config show`'s: {wrong}"


def test_every_setting_has_a_description() -> None:
    missing = []
    for prefix, model, _ in _gen().settings_sections():
        for name, field in model.model_fields.items():
            nested = isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
            if not nested and not (field.description or "").strip():
                missing.append(f"{prefix}.{name}")
    assert not missing, f"settings without a description (add Field(description=...) in longdoc/config.py): {missing}"


def test_error_codes_are_distinct() -> None:
    codes = [cls.code for cls in _gen().error_classes()]
    assert len(codes) >= 40
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)


def test_the_document_schema_describes_the_json_export(tmp_path: Path) -> None:
    """The JSON writer's file for a document with every kind of part (a
    table with cells, a side note, a failed page) validates against the
    committed schema."""
    jsonschema = pytest.importorskip("jsonschema")
    from longdoc import __version__
    from longdoc.export.writers import open_exports
    from longdoc.model import (
        SCHEMA_VERSION,
        BBox,
        Block,
        BlockKind,
        DocumentStatus,
        ErrorInfo,
        Line,
        Page,
        PageStatus,
        SourceInfo,
        TableCell,
        TextSource,
    )

    schema = json.loads((ROOT / "docs" / "reference" / "document.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    box = BBox(x0=72, y0=72, x1=300, y1=90)
    line = Line(text="Revenue\t12", bbox=box, confidence=0.98, page=1, pitch=None)
    table = Block(id="p1-b1", kind=BlockKind.TABLE, bbox=box, order=1, text="Revenue\t12", lines=[line],
                  source_pages=[1], cells=[TableCell(row=0, col=0, text="Revenue", bbox=box),
                                           TableCell(row=0, col=1, text="12")])
    note = Block(id="p1-b2", kind=BlockKind.SIDENOTE, bbox=box, order=2, text="see", source_pages=[1],
                 anchor="p1-b0")
    heading = Block(id="p1-b0", kind=BlockKind.HEADING, bbox=box, order=0, text="Outlook", source_pages=[1, 2],
                    level=2)
    error = ErrorInfo(code="engine_failed", message="Page 2: the worker died.", hint="Retry.", page=2,
                      retryable=True)
    pages = [
        Page(number=1, width=595, height=842, text_source=TextSource.OCR, ocr_reason="no_text", engine="rapidocr",
             engine_version="rapidocr-3.10.0", render_dpi=200, produced_by="page", recovery=["retried"],
             timings={"render": 0.1}, blocks=[heading, table, note]),
        Page(number=2, width=0, height=0, status=PageStatus.FAILED, error=error),
    ]
    header = {"schema": SCHEMA_VERSION, "longdoc_version": __version__,
              "source": SourceInfo(name="a.pdf", sha256="0" * 64, media_type="application/pdf", page_count=2,
                                   selected_pages=[1, 2]).model_dump(mode="json"),
              "options": {"ocr": "auto"}}
    exports = open_exports(tmp_path, "a", ("json",), header)
    for page in pages:
        exports.write_page(page)
    path = exports.close(DocumentStatus.PARTIAL, [error], {"job": 1.5})["json"]
    jsonschema.Draft202012Validator(schema).validate(json.loads(path.read_text(encoding="utf-8")))


# -- what the prose names exists ----------------------------------------------------------


_SETTING = re.compile(r"(?<![\w./-])(" + "|".join(SECTIONS) + r")\.([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)")
_FILE_EXTENSIONS = {"md", "json", "png", "py", "yaml", "yml", "txt", "pdf", "db"}


def _named_settings(text: str) -> set[str]:
    return {m.group(0) for m in _SETTING.finditer(text) if m.group(2).rsplit(".", 1)[-1] not in _FILE_EXTENSIONS}


@pytest.mark.parametrize("path", _prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_settings_named_exist(path: Path) -> None:
    named = _named_settings("\n".join(_prose_lines(path)))  # not code: `client.submit(…)` is no setting
    unknown = sorted(k for k in named if not _has_key(Settings, k.split(".")))
    assert not unknown, f"settings named in {path.relative_to(ROOT)} that do not exist: {unknown}"


def test_the_pages_name_settings() -> None:
    """The check above finds what it looks for (the operator guide alone names dozens)."""
    assert len(_named_settings((ROOT / "docs" / "operations.md").read_text(encoding="utf-8"))) >= 20


@pytest.mark.parametrize("path", _prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_environment_variables_named_exist(path: Path) -> None:
    for var in set(re.findall(r"\bLONGDOC_[A-Z0-9_]+", path.read_text(encoding="utf-8"))):
        if "__" in var:
            parts = [p.lower() for p in var[len("LONGDOC_"):].rstrip("_").split("__")]  # LONGDOC_X__Y__<KEY>
            assert _has_key(Settings, parts), f"{path.relative_to(ROOT)}: {var}"


@pytest.mark.parametrize("path", _prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_defaults_are_the_codes(path: Path) -> None:
    """Every "`section.key` (N)" a page writes quotes the key's default."""
    pattern = r"`((?:" + "|".join(SECTIONS) + r")\.[a-z0-9_.]+)`\s+\((\d+(?:\.\d+)?)\)"
    quoted = re.findall(pattern, path.read_text(encoding="utf-8"))
    wrong = [(name, n, _default(name.split("."))) for name, n in quoted
             if not _has_key(Settings, name.split(".")) or _default(name.split(".")) != float(n)]
    assert not wrong, f"{path.relative_to(ROOT)} quotes other defaults than the code's: {wrong}"


@cache
def _registered_metrics() -> set[str]:
    return {name for families in _gen().metric_registries().values() for name, *_ in families}


@pytest.mark.parametrize("path", _prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_metrics_named_are_registered(path: Path) -> None:
    registered = _registered_metrics()
    missing = []
    for name in sorted(set(re.findall(r"\blongdoc_[a-z0-9_]*[a-z0-9]", path.read_text(encoding="utf-8")))):
        if name in ("longdoc_version", "longdoc_cache"):  # a JSON field and an attribute, not metrics
            continue
        family = re.sub(r"_(bucket|count|sum|created)$", "", name)
        if name not in registered and family not in registered:
            missing.append(name)
    assert not missing, f"named in {path.relative_to(ROOT)} but not registered by any longdoc process: {missing}"


# -- links ----------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _prose_lines(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose_lines(path):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = _slug(match.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(out)


@pytest.mark.parametrize("path", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for line in _prose_lines(path):
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.exists():
                broken.append(f"{target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{target} (no such heading in {resolved.relative_to(ROOT)})")
    assert not broken, f"broken links in {path.relative_to(ROOT)}: {broken}"


def test_links_are_found() -> None:
    """The link check sees links, anchors included."""
    readme = [t for line in _prose_lines(ROOT / "README.md") for t in _LINK.findall(line)]
    assert "docs/operations.md" in readme and any("#" in t for t in _LINK.findall(
        (ROOT / "docs" / "http-api.md").read_text(encoding="utf-8")))
    assert "gpu-model-servers-the-openai-engine" in _anchors(ROOT / "docs" / "engines.md")


# -- the README -----------------------------------------------------------------------------


def test_readme_is_for_a_newcomer() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, "README.md is for a newcomer: the rest belongs under docs/"
    for command in ("make run", "make test"):
        assert re.search(rf"^{command}\s+# ", text, flags=re.M), f"README.md shows `{command}` with what it does"
