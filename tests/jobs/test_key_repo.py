"""API keys: shown once, stored hashed, bound to a tenant, revocable."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import select

from longdoc.errors import InvalidTenant
from longdoc.jobs.models import ApiKey
from longdoc.jobs.repo import KeyRepo


@pytest.fixture
def keys(db_sessions, fake_clock):
    return KeyRepo(db_sessions, clock=fake_clock)


def test_created_key_authenticates_as_its_tenant_and_only_its_hash_is_stored(keys, db_sessions):
    row, plaintext = keys.create("acme", rate_limit_per_minute=30)
    assert plaintext.startswith("ld_") and len(plaintext) >= 3 + 43
    assert row.key_prefix == plaintext[:8]
    found = keys.authenticate(plaintext)
    assert found is not None and (found.id, found.tenant, found.rate_limit_per_minute) == (row.id, "acme", 30)
    with db_sessions() as s:
        stored = s.scalars(select(ApiKey)).one()
    columns = [getattr(stored, c.key) for c in ApiKey.__table__.columns]
    assert plaintext not in [str(v) for v in columns]
    assert stored.key_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    assert stored.webhook_secret and stored.webhook_secret != plaintext


def test_keys_are_unique(keys):
    plaintexts = {keys.create("acme")[1] for _ in range(5)}
    assert len(plaintexts) == 5


@pytest.mark.parametrize("attempt", ["", "ld_", "ld_wrong", "Bearer ld_x", "x" * 10_000, None])
def test_unknown_or_malformed_keys_are_refused(keys, attempt):
    keys.create("acme")
    assert keys.authenticate(attempt) is None


def test_revoked_key_is_refused(keys):
    row, plaintext = keys.create("acme")
    assert keys.revoke(row.id) is True
    assert keys.authenticate(plaintext) is None
    first = keys.get(row.id).revoked_at
    assert keys.revoke(row.id) is True and keys.get(row.id).revoked_at == first
    assert keys.revoke("0" * 32) is False


def test_last_used_is_recorded_at_most_once_a_minute(keys, fake_clock):
    row, plaintext = keys.create("acme")
    assert keys.get(row.id).last_used_at is None
    keys.authenticate(plaintext)
    first = keys.get(row.id).last_used_at
    assert first is not None
    fake_clock.advance(timedelta(seconds=30))
    keys.authenticate(plaintext)
    assert keys.get(row.id).last_used_at == first
    fake_clock.advance(timedelta(seconds=31))
    keys.authenticate(plaintext)
    assert keys.get(row.id).last_used_at > first


def test_list_by_tenant(keys):
    a1, _ = keys.create("acme")
    b1, _ = keys.create("bravo")
    a2, _ = keys.create("acme")
    assert [k.id for k in keys.list("acme")] == [a1.id, a2.id]
    assert [k.id for k in keys.list()] == [a1.id, b1.id, a2.id]
    assert keys.get(None) is None


@pytest.mark.parametrize("tenant", ["", "Acme", "../etc", "a/b", "-lead", "a" * 64, "tenant name"])
def test_bad_tenant_names_are_refused(keys, tenant):
    with pytest.raises(InvalidTenant):
        keys.create(tenant)
    assert keys.list() == []
