"""Per-run options of the pipeline (what a CLI call or a job asks for)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from longdoc.config import ExportSettings, FurnitureMode, InferenceSettings, OcrMode, Profile, Settings
from longdoc.export import DEFAULT_FORMATS

#: the defaults live in the settings: options made without them read as a configured run does
_INFERENCE = InferenceSettings()
_EXPORT = ExportSettings()


@dataclass(frozen=True)
class ParseOptions:
    pages: str | None = None  # page range spec, e.g. "1-20,35"; None = all
    profile: Profile = _INFERENCE.profile  # the settings' bundle the engine reads with (config.PROFILES)
    ocr: OcrMode = _INFERENCE.ocr
    dpi: int = _INFERENCE.dpi
    engine: str = _INFERENCE.engine
    page_chunk_size: int = _INFERENCE.page_chunk_size
    chunk_overlap: int = _INFERENCE.chunk_overlap
    regions: bool = _INFERENCE.regions
    formats: tuple[str, ...] = DEFAULT_FORMATS
    furniture: FurnitureMode = _EXPORT.furniture  # keep or drop headers, footers, page numbers in md/txt/chunks

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> ParseOptions:
        """The options of a run with ``settings``; ``overrides`` (None
        values ignored) win. A ``profile`` among them takes its own
        ``dpi`` and ``regions`` unless the settings set them explicitly."""
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
        return cls(**values)  # type: ignore[arg-type]

    def fingerprint(self, source_sha256: str, engine_version: str) -> str:
        """Identifies work that can be resumed: same input bytes, same
        options that change page results, same engine version. Formats and
        furniture are left out: they only change the exports, not the page
        results."""
        data = asdict(self)
        data.pop("formats")
        data.pop("furniture")
        data.update(source=source_sha256, engine_version=engine_version)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def public(self) -> dict[str, object]:
        d = asdict(self)
        d["formats"] = list(self.formats)
        return d
