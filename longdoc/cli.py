"""Command line: ``longdoc parse``, ``longdoc config show``, ``longdoc --version``;
the service commands (serve, submit, worker, keys, audit) are in :mod:`longdoc.cli_service`.

Errors are translated to messages and exit codes in one place,
:func:`main`; commands raise :class:`~longdoc.errors.LongdocError`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from longdoc import __version__, cli_service
from longdoc.cli_progress import make_progress
from longdoc.config import dump_settings, load_settings
from longdoc.errors import EXIT_PARTIAL, EXIT_USAGE, InvalidOption, LongdocError
from longdoc.export.formats import DEFAULT_FORMATS, FORMATS, LABELS
from longdoc.model import DocumentStatus

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Long documents to structured text in reading order.")
config_app = typer.Typer(no_args_is_help=True, help="Inspect the configuration.")
app.add_typer(config_app, name="config")
app.add_typer(cli_service.keys_app, name="keys")
app.add_typer(cli_service.audit_app, name="audit")
app.command()(cli_service.serve)
app.command()(cli_service.submit)
app.command()(cli_service.worker)

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config file (DESIGN §6 shape).")]
log = logging.getLogger("longdoc.cli")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"longdoc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    """longdoc: parse long PDFs, scans and images into Markdown, JSON and text."""


def _formats(spec: str) -> tuple[str, ...]:
    formats = tuple(f.strip() for f in spec.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise InvalidOption(f"Unknown format(s) {', '.join(bad) or '(none)'}; choose from {', '.join(FORMATS)}.")
    return formats


@app.command()
def parse(
    files: Annotated[list[Path], typer.Argument(help="PDF or image files.", show_default=False)],
    out: Annotated[Path, typer.Option("-o", "--out", help="Output folder.")] = Path("out"),
    format: Annotated[str, typer.Option("--format", help="Comma-separated: " + ", ".join(
        f"{f} ({LABELS[f]})" for f in FORMATS) + ".")] = ",".join(DEFAULT_FORMATS),
    pages: Annotated[str | None, typer.Option("--pages", help="1-based pages, e.g. 1-20,35.")] = None,
    ocr: Annotated[str | None, typer.Option("--ocr", help="auto | force | off")] = None,
    dpi: Annotated[int | None, typer.Option("--dpi", help="Render DPI for OCR.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="OCR engine (rapidocr, tesseract, openai, native).")] = None,
    chunk_size: Annotated[int | None, typer.Option("--chunk-size", help="Pages per group (page_chunk_size).")] = None,
    overlap: Annotated[int | None, typer.Option("--overlap", help="Pages shared by consecutive groups.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Parallel OCR workers (0 = one per core).")] = None,
    profile: Annotated[str | None, typer.Option(
        "--profile", help="fast | balanced | accurate: what the engine spends on each page (inference.profile; "
        "docs/profiles.md).")] = None,
    regions: Annotated[bool | None, typer.Option(
        "--regions/--no-regions", help="Layout and table models: tables with cells, figures, captions, furniture.")] = None,
    furniture: Annotated[str | None, typer.Option(
        "--furniture", help="keep | drop: running headers, footers and page numbers in md, txt and chunks "
        "(export.furniture; the JSON always has them).")] = None,
    config: ConfigOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Parse FILE… into OUT/<stem>.md, .json and .txt (and with --format:
    .pdf, .chunks.jsonl, .docling.json). Rerunning into the same folder
    resumes from the last finished page group."""
    from longdoc.pipeline import EngineHost, ParseOptions, Pipeline  # here: service commands start without it
    from longdoc.pipeline.options import check_option

    flags = {"--pages": ("pages", pages), "--ocr": ("ocr", ocr), "--dpi": ("dpi", dpi), "--engine": ("engine", engine),
             "--chunk-size": ("page_chunk_size", chunk_size), "--overlap": ("chunk_overlap", overlap),
             "--profile": ("profile", profile), "--furniture": ("furniture", furniture)}
    for flag, (name, value) in flags.items():
        if value is not None:
            check_option(name, value, flag)  # each by itself, as ParseOptions allows; together: the settings' check

    settings = load_settings(config, overrides={"inference": {
        "ocr": ocr, "dpi": dpi, "engine": engine, "page_chunk_size": chunk_size,
        "chunk_overlap": overlap, "workers": workers, "regions": regions, "profile": profile,
    }, "export": {"furniture": furniture}})
    options = ParseOptions.from_settings(settings, pages=pages, formats=_formats(format))
    worst = 0
    with EngineHost(settings) as host:
        pipeline = Pipeline(settings, host=host)
        for path in files:
            try:
                with make_progress(quiet) as progress:
                    result = pipeline.parse(path, out, options, progress=progress)
            except LongdocError as exc:
                if len(files) == 1:
                    raise
                _report_error(exc, path)
                worst = max(worst, exc.exit_code)
                continue
            for fmt, p in result.outputs.items():
                typer.echo(f"{fmt}: {p}")
            if result.status is not DocumentStatus.SUCCEEDED:
                listed = ", ".join(str(n) for n in result.failed_pages)
                typer.echo(f"{path}: {result.status.value}: {len(result.failed_pages)} of {result.pages} "
                           f"page(s) failed: {listed}", err=True)
                for e in result.errors[:10]:
                    typer.echo(f"  page {e.page}: [{e.code}] {e.message}", err=True)
                worst = max(worst, EXIT_PARTIAL)
            elif result.resumed_pages:
                typer.echo(f"{path}: resumed {result.resumed_pages} of {result.pages} pages from {out}/.longdoc", err=True)
            if result.review_pages:
                listed = ", ".join(str(n) for n in result.review_pages)
                typer.echo(f"{path}: {len(result.review_pages)} page(s) to check by eye (see their flags in the "
                           f"JSON): {listed}", err=True)
    if worst:
        raise typer.Exit(worst)


@config_app.command("show")
def config_show(config: ConfigOpt = None) -> None:
    """Print the effective configuration (file + LONGDOC_* environment)."""
    typer.echo(dump_settings(load_settings(config)), nl=False)


def _report_error(exc: LongdocError, path: Path | None = None) -> None:
    where = f"{path}: " if path else ""
    typer.echo(f"error [{exc.code}]: {where}{exc.message}", err=True)
    typer.echo(f"hint: {exc.hint}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point; the one place errors become messages and exit codes."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        rc = app(args=argv, standalone_mode=False)  # returns typer.Exit's code
    except LongdocError as exc:
        _report_error(exc)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("interrupted; rerun the same command to resume", err=True)
        return 130
    except typer.TyperException as exc:  # usage errors (typer 0.29 parses with its own copy of click)
        show = getattr(exc, "show", None)
        if not callable(show):
            raise
        show()
        return EXIT_USAGE
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
