"""The per-tenant key layout and the store factory."""

from __future__ import annotations

import pytest

from longdoc.errors import ConfigError, InvalidObjectKey, InvalidTenant
from longdoc.storage import LocalStore, keys, store_from_url

JOB = "0123456789abcdef0123456789abcdef"


def test_layout_matches_the_contract():
    assert keys.original_key("acme", JOB) == f"tenants/acme/jobs/{JOB}/original"
    assert keys.checkpoint_prefix("acme", JOB) == f"tenants/acme/jobs/{JOB}/checkpoint"
    assert keys.export_key("acme", JOB, "md") == f"tenants/acme/jobs/{JOB}/exports/result.md"
    assert keys.job_prefix("acme", JOB) == f"tenants/acme/jobs/{JOB}"
    assert keys.tenant_prefix("a-b_9") == "tenants/a-b_9"


def test_new_job_ids_are_valid_and_distinct():
    ids = {keys.new_job_id() for _ in range(100)}
    assert len(ids) == 100 and all(keys.check_job_id(i) == i for i in ids)


@pytest.mark.parametrize("tenant", ["", "Acme", "..", "../other", "a/b", "_lead", "-lead", "a" * 64, "é", "a b", "a\x00"])
def test_bad_tenant_names_never_become_keys(tenant):
    with pytest.raises(InvalidTenant):
        keys.original_key(tenant, JOB)


@pytest.mark.parametrize("job_id", ["", "../x", JOB.upper(), JOB + "0", JOB[:-1] + "/", "x" * 32])
def test_bad_job_ids_never_become_keys(job_id):
    with pytest.raises(InvalidObjectKey):
        keys.checkpoint_prefix("acme", job_id)


def test_unknown_export_format_is_refused():
    with pytest.raises(InvalidObjectKey):
        keys.export_key("acme", JOB, "../../x")


def test_file_url_relative_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = store_from_url("file://./data")
    assert isinstance(store, LocalStore) and store.root == tmp_path / "data"
    monkeypatch.chdir("/")
    store.put_bytes("x", b"1")
    assert (tmp_path / "data" / "x").read_bytes() == b"1"


def test_absolute_file_url(tmp_path):
    store = store_from_url(f"file://{tmp_path}/abs")
    assert store.root == tmp_path / "abs" and store.root.is_dir()


@pytest.mark.parametrize("url", ["./data", "ftp://host/x", "file://", "file:///", "s3://", "s3:///prefix"])
def test_unusable_storage_urls_are_config_errors(url):
    with pytest.raises(ConfigError):
        store_from_url(url)
