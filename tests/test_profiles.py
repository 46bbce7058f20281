"""``inference.profile``: a documented bundle of settings that explicit
settings override (config file, environment, CLI flags, a job's options)."""

from __future__ import annotations

import pytest

from longdoc.config import PROFILES, InferenceSettings, load_settings
from longdoc.errors import ConfigError
from longdoc.pipeline.options import ParseOptions


def _value(inference: InferenceSettings, key: str) -> object:
    section, _, name = key.rpartition(".")
    return getattr(getattr(inference, section) if section else inference, name)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_profile_sets_each_of_its_keys(profile):
    inference = load_settings(overrides={"inference": {"profile": profile}}).inference
    assert inference.profile == profile
    for key, value in PROFILES[profile].items():
        assert _value(inference, key) == value, key


def test_the_default_is_balanced_and_differs_from_the_others():
    default = InferenceSettings()
    assert default.profile == "balanced"
    assert (default.rapidocr.recognizer, default.rapidocr.recheck, default.regions) == ("cascade", "codes", True)
    fast, accurate = InferenceSettings(profile="fast"), InferenceSettings(profile="accurate")
    assert (fast.rapidocr.recognizer, fast.regions, fast.rapidocr.glyph_checks) == ("tiny", False, False)
    assert accurate.rapidocr.recognizer == "small"


def test_an_explicit_setting_wins_over_its_profile(tmp_path, monkeypatch):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("inference: {profile: fast, regions: true}\n")
    monkeypatch.setenv("LONGDOC_INFERENCE__RAPIDOCR__RECOGNIZER", "small")
    inference = load_settings(cfg).inference
    assert inference.regions is True and inference.rapidocr.recognizer == "small"  # the user's
    assert inference.rapidocr.glyph_checks is False  # the profile's


def test_another_profile_keeps_what_was_set_explicitly():
    fast = InferenceSettings(profile="fast", dpi=150, rapidocr={"glyph_checks": True})
    accurate = fast.with_profile("accurate")
    assert accurate.profile == "accurate" and accurate.rapidocr.recognizer == "small" and accurate.regions
    assert accurate.dpi == 150 and accurate.rapidocr.glyph_checks is True
    assert fast.with_profile(None) is fast


def test_a_jobs_profile_brings_its_own_regions_unless_the_job_names_them():
    settings = load_settings()
    assert ParseOptions.from_settings(settings, profile="fast").regions is False
    assert ParseOptions.from_settings(settings, profile="fast", regions=True).regions is True
    assert ParseOptions.from_settings(settings).profile == "balanced"


def test_a_profile_that_does_not_exist_is_a_config_error():
    with pytest.raises(ConfigError, match="inference.profile"):
        load_settings(overrides={"inference": {"profile": "fastest"}})
