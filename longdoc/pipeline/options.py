"""Per-run options of the pipeline (what a CLI call or a job asks for).

:class:`ParseOptions` is the one source of every option: its type, its
bounds, its choices and what it means. The job request
(:class:`~longdoc.service.schemas.JobOptions`) takes its fields from it
(:func:`option_field`), the CLI's ``parse`` flags are checked by it
(:func:`check_option`), ``GET /v1/meta`` publishes the request's JSON
schema and the console builds its form from that. The settings give the
defaults (:meth:`ParseOptions.from_settings`) and the types and bounds of
the options they also configure (``inference.dpi``, ``inference.ocr``, …).
A job stores :meth:`ParseOptions.public` and reads it back with
:meth:`ParseOptions.stored`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from longdoc.config import ExportSettings, FurnitureMode, InferenceSettings, OcrMode, Profile, Settings
from longdoc.errors import InvalidOption
from longdoc.export.formats import DEFAULT_FORMATS, ExportFormat
from longdoc.plan.groups import DocumentPlan

_BOUNDS = ("gt", "ge", "lt", "le", "min_length", "max_length")


def _bounds(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The bounds (ge, le, max_length, …) of ``model``'s field ``name`` as :func:`Field` keywords."""
    return {key: getattr(m, key) for m in model.model_fields[name].metadata for key in _BOUNDS if hasattr(m, key)}


def _setting(model: type[BaseModel], name: str, description: str, **more: Any) -> Any:
    """An option the settings also configure: the setting's default and
    bounds (``more`` adds bounds of the option's own)."""
    return Field(default=model.model_fields[name].default, description=description,
                 **{**_bounds(model, name), **more})


class ParseOptions(BaseModel):
    """What one run reads and writes. Frozen; unknown fields are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pages: str | None = Field(default=None, max_length=1000, description="1-based pages to read, e.g. 1-20,35; "
                              "null: every page")
    profile: Profile = _setting(InferenceSettings, "profile", "fast, balanced or accurate: what the engine spends "
                                "on each page (docs/profiles.md)")
    ocr: OcrMode = _setting(InferenceSettings, "ocr", "auto: the text layer where it is sound, OCR where it is "
                            "missing or garbage; force: OCR every page; off: the text layer only")
    dpi: int = _setting(InferenceSettings, "dpi", "resolution pages are rendered at for OCR (lower where "
                        "limits.max_render_pixels requires)")
    engine: str = _setting(InferenceSettings, "engine", "the OCR engine (rapidocr, tesseract, openai, native, or "
                           "one a plugin registers)", max_length=64)
    page_chunk_size: int = _setting(InferenceSettings, "page_chunk_size", "pages per group (C): the unit of "
                                    "scheduling, checkpoint and retry")
    chunk_overlap: int = _setting(InferenceSettings, "chunk_overlap", "pages shared by consecutive groups (O), "
                                  "below page_chunk_size")
    regions: bool = _setting(InferenceSettings, "regions", "layout and table models (tables with cells, figures, "
                             "captions, furniture)")
    formats: tuple[ExportFormat, ...] = Field(default=cast("tuple[ExportFormat, ...]", DEFAULT_FORMATS),
                                              min_length=1, description="the exports to write")
    furniture: FurnitureMode = _setting(ExportSettings, "furniture", "running headers, footers and page numbers "
                                        "in md, txt and chunks: keep or drop (the JSON always has them)")

    @model_validator(mode="after")
    def _a_plan(self) -> ParseOptions:
        self.plan  # noqa: B018 - raises ValueError on an overlap not below the chunk size
        return self

    @property
    def plan(self) -> DocumentPlan:
        """How the document is cut into page groups and rendered: the one
        place its groups come from (``plan.groups(n)``), and what the
        engine's session is sized by."""
        return DocumentPlan(self.page_chunk_size, self.chunk_overlap, self.dpi)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> ParseOptions:
        """The options of a run with ``settings``; ``overrides`` (None
        values ignored) win. A ``profile`` among them takes its own
        ``dpi`` and ``regions`` unless the settings set them explicitly.
        Raises InvalidOption naming each value that is not allowed."""
        if overrides.get("profile") is not None:
            check_option("profile", overrides["profile"])  # before the settings are made under it
        # [arg-type]: an override may be any value; with_profile validates it
        inf = settings.inference.with_profile(overrides.get("profile"))  # type: ignore[arg-type]
        values: dict[str, object] = {
            "profile": inf.profile,
            "ocr": inf.ocr,
            "dpi": inf.dpi,
            "engine": inf.engine,
            "page_chunk_size": inf.page_chunk_size,
            "chunk_overlap": inf.chunk_overlap,
            "regions": inf.regions,
            "furniture": settings.export.furniture,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise InvalidOption(f"Invalid options: {problems(exc)}") from exc

    @classmethod
    def stored(cls, options: Mapping[str, Any]) -> ParseOptions:
        """The options a job was accepted with, from what :meth:`public`
        gave then (a key it did not have yet takes its default)."""
        return cls.model_validate(options)

    def fingerprint(self, source_sha256: str, engine_version: str) -> str:
        """Identifies work that can be resumed: same input bytes, same
        options that change page results, same engine version. Formats and
        furniture are left out: they only change the exports, not the page
        results."""
        data = self.model_dump(mode="json", exclude={"formats", "furniture"})
        data.update(source=source_sha256, engine_version=engine_version)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def public(self) -> dict[str, object]:
        """The options as JSON values (what a job stores and shows)."""
        return self.model_dump(mode="json")


def option_field(name: str, *, unset: str | None = None, default: object = None) -> Any:
    """:class:`ParseOptions`' field ``name`` for another model (a request's):
    its bounds and description, and ``default`` (None: ``unset`` says what
    it stands for, e.g. ``inference.ocr``)."""
    info = ParseOptions.model_fields[name]
    description = f"{info.description}; default {unset}" if unset else info.description
    return Field(default=default, description=description, **_bounds(ParseOptions, name))


def check_option(name: str, value: object, flag: str | None = None) -> None:
    """Raise InvalidOption unless ``value`` is allowed for the option
    ``name`` by itself (its type, bounds and choices; ``flag`` names it in
    the message, e.g. ``--ocr``)."""
    info = ParseOptions.model_fields[name]
    try:
        kind: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"]
        if error["type"] == "literal_error":  # "must be keep or drop", as the flag's help lists them
            message = "must be " + str(error.get("ctx", {}).get("expected", "")).replace("'", "")
        raise InvalidOption(f"{flag or name}: {message}, not {value!r}.") from exc


def problems(exc: ValidationError) -> str:
    """A validation error's problems in one line: ``field: message; …``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors())
