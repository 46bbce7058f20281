"""ParseOptions, the one source of every option: what jobs stored before it
still loads and resumes, the job request takes its fields from it, the
settings fill what a run leaves unset, and the plan makes the groups."""

from __future__ import annotations

import pytest

from longdoc.errors import InvalidOption
from longdoc.jobs.models import Job
from longdoc.pipeline import ParseOptions
from longdoc.plan import DocumentPlan, plan_groups
from longdoc.runner.finisher import job_options
from longdoc.service.schemas import JobOptions
from tests.conftest import make_settings

#: what ParseOptions.public() gave (and jobs stored) before options were a pydantic model
STORED = {"pages": "2-9", "profile": "fast", "ocr": "force", "dpi": 150, "engine": "rapidocr", "page_chunk_size": 8,
          "chunk_overlap": 1, "regions": False, "formats": ["txt", "json"], "furniture": "keep"}
#: its fingerprint then (the frozen dataclass's), which a resumed run must find again
FINGERPRINT = "ac7b021f48b1e1a506d1439e43c905ea4b15d961b7687c03bddf8242ca5b5ee5"


def test_a_job_stored_before_loads_resumes_and_shows_the_same_options():
    options = job_options(Job(options=STORED))
    assert options.formats == ("txt", "json") and options.plan == DocumentPlan(8, 1, 150)
    assert options.fingerprint("ab" * 32, "rapidocr:1") == FINGERPRINT  # its checkpoint is found again
    assert options.public() == STORED  # and its options read back as they were written


def test_a_job_stored_before_profile_and_furniture_existed_takes_their_defaults():
    older = {k: v for k, v in STORED.items() if k not in ("profile", "furniture")}
    options = job_options(Job(options=older))
    assert (options.profile, options.furniture) == ("balanced", "drop")


def test_every_job_option_is_a_parse_option_with_its_type_bounds_and_description():
    request_only = {"priority", "callback_url"}
    for name, field in JobOptions.model_fields.items():
        if name in request_only:
            continue
        own = ParseOptions.model_fields[name]
        assert field.metadata == own.metadata, name  # bounds (ge, le, max_length, …)
        assert field.description.startswith(own.description), name
        wanted = own.annotation if name == "formats" else own.annotation | None
        assert field.annotation == wanted, name
    # the page groups are the service's, never a request's
    assert {"page_chunk_size", "chunk_overlap"}.isdisjoint(JobOptions.model_fields)


def test_the_settings_fill_what_a_run_leaves_unset_and_a_bad_value_is_an_invalid_option():
    settings = make_settings(page_chunk_size=6, chunk_overlap=2, dpi=120)
    options = ParseOptions.from_settings(settings, ocr="force", regions=None)
    assert options.plan == DocumentPlan(6, 2, 120) and options.ocr == "force" and options.regions is True
    with pytest.raises(InvalidOption, match="dpi"):
        ParseOptions.from_settings(settings, dpi=10)
    with pytest.raises(InvalidOption, match="chunk_overlap"):
        ParseOptions.from_settings(settings, chunk_overlap=6)
    with pytest.raises(InvalidOption, match="profile"):
        ParseOptions.from_settings(settings, profile="fastest")


def test_the_plan_makes_the_groups():
    assert DocumentPlan(4, 1, 200).groups(10) == plan_groups(10, 4, 1)
    with pytest.raises(ValueError, match="chunk_overlap"):
        DocumentPlan(4, 4, 200)
