"""A job's options through the API, in process: ``GET /v1/meta`` publishes
their schema (choices and bounds, from ParseOptions) for the console to
build its form from; a value outside it is refused; the job keeps the
service's page groups (its plan), whatever the request says."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from longdoc.config import FurnitureMode, OcrMode, Profile
from tests.service.helpers import accepted, error_code, submit, wait_terminal

CONSOLE = Path(__file__).resolve().parents[2] / "longdoc" / "service" / "console" / "console.js"


def _choices(schema: dict) -> list:
    return next(s["enum"] for s in schema["anyOf"] if "enum" in s)


def test_meta_publishes_the_options_choices_and_bounds_and_the_console_hard_codes_none(server):
    options = server.request("GET", "/v1/meta").json()["options"]["properties"]
    assert _choices(options["ocr"]) == list(get_args(OcrMode))
    assert _choices(options["profile"]) == list(get_args(Profile))
    assert _choices(options["furniture"]) == list(get_args(FurnitureMode))
    dpi = next(s for s in options["dpi"]["anyOf"] if s.get("type") == "integer")
    assert (dpi["minimum"], dpi["maximum"]) == (50, 600)
    assert (options["priority"]["minimum"], options["priority"]["maximum"]) == (0, 9)
    assert "page_chunk_size" not in options  # the service's, not a request's
    console = CONSOLE.read_text()
    for literal in ('"force"', '"accurate"', '"balanced"', '"keep"', "max: 9"):
        assert literal not in console, f"console.js hard-codes {literal}: read it from /v1/meta"


def test_a_value_outside_the_schema_is_refused_and_the_job_keeps_the_services_plan(server, report_doc):
    with server.http(server.create_key("options")) as http:
        for bad in ({"dpi": 10}, {"dpi": 601}, {"ocr": "sometimes"}, {"page_chunk_size": 2}, {"priority": 10}):
            r = submit(http, report_doc.pdf_path, bad)
            assert r.status_code == 400 and error_code(r) == "invalid_option", (bad, r.text)
            assert next(iter(bad)) in r.json()["error"]["message"]
        job = accepted(submit(http, report_doc.pdf_path, {"dpi": 100, "pages": "1-2", "formats": ["txt"]}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    settings = server.settings.inference
    assert job["options"]["dpi"] == 100
    assert (job["options"]["page_chunk_size"], job["options"]["chunk_overlap"]) == (
        settings.page_chunk_size, settings.chunk_overlap)
