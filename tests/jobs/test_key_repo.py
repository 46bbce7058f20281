"""API keys: shown once, stored hashed, bound to a tenant, revocable,
expiring and rotated (with a clock the tests move)."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from threading import Barrier

import pytest
from sqlalchemy import select

from longdoc.errors import InvalidOption, InvalidTenant, KeyExpired, KeyNotFound, KeyNotRotatable
from longdoc.jobs.models import ApiKey
from longdoc.jobs.repo import KeyRepo, KeyState, key_state


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


# --- expiry and rotation ------------------------------------------------------------


def test_a_key_works_until_its_expiry_then_raises_key_expired(keys, fake_clock):
    row, plaintext = keys.create("acme", expires_in=timedelta(days=90))
    assert row.expires_at == row.created_at + timedelta(days=90)
    fake_clock.advance(timedelta(days=89, hours=23))
    assert keys.authenticate(plaintext).id == row.id
    assert key_state(keys.get(row.id), keys.now()) is KeyState.ACTIVE
    fake_clock.advance(timedelta(hours=1))
    with pytest.raises(KeyExpired) as caught:
        keys.authenticate(plaintext)
    assert caught.value.code == "key_expired" and caught.value.http_status == 401
    assert caught.value.context["key_id"] == row.id
    assert key_state(keys.get(row.id), keys.now()) is KeyState.EXPIRED


def test_a_key_without_expiry_never_expires_and_a_revoked_expired_key_is_just_refused(keys, fake_clock):
    forever, forever_text = keys.create("acme")
    short, short_text = keys.create("acme", expires_in=timedelta(seconds=45))
    keys.revoke(short.id)
    fake_clock.advance(timedelta(days=3650))
    assert keys.authenticate(forever_text).id == forever.id
    assert keys.authenticate(short_text) is None  # revoked wins: no hint that it ever worked
    assert key_state(keys.get(short.id), keys.now()) is KeyState.REVOKED


@pytest.mark.parametrize("expires_in", [timedelta(0), timedelta(seconds=-1)])
def test_a_lifetime_must_be_positive(keys, expires_in):
    with pytest.raises(InvalidOption):
        keys.create("acme", expires_in=expires_in)
    assert keys.list() == []


def test_rotation_gives_a_key_with_the_same_tenant_limits_and_webhook_secret(keys, fake_clock):
    old, old_text = keys.create("acme", rate_limit_per_minute=30, expires_in=timedelta(days=90))
    fake_clock.advance(timedelta(days=80))
    made = keys.rotate(old.id, grace=timedelta(days=7))
    new = made.key
    assert made.plaintext != old_text and made.plaintext.startswith("ld_")
    assert (new.tenant, new.rate_limit_per_minute, new.webhook_secret) == ("acme", 30, old.webhook_secret)
    assert new.expires_at == new.created_at + timedelta(days=90)  # as long as the old one was made to last
    assert (made.old.id, made.old.replaced_by) == (old.id, new.id)
    assert made.old.expires_at == new.created_at + timedelta(days=7)
    assert keys.get(old.id).expires_at == made.old.expires_at
    assert keys.authenticate(made.plaintext).id == new.id
    assert keys.authenticate(old_text).id == old.id  # in its grace period
    fake_clock.advance(timedelta(days=7))
    with pytest.raises(KeyExpired):
        keys.authenticate(old_text)
    assert keys.authenticate(made.plaintext).id == new.id


def test_the_grace_never_outlives_the_old_keys_own_expiry(keys, fake_clock):
    old, old_text = keys.create("acme", expires_in=timedelta(days=2))
    made = keys.rotate(old.id, grace=timedelta(days=7), expires_in=timedelta(days=30))
    assert made.old.expires_at == old.expires_at
    assert made.key.expires_at == made.key.created_at + timedelta(days=30)
    fake_clock.advance(timedelta(days=2))
    with pytest.raises(KeyExpired):
        keys.authenticate(old_text)


def test_zero_grace_stops_the_old_key_at_once_and_a_key_without_expiry_gives_one_without(keys):
    old, old_text = keys.create("acme")
    made = keys.rotate(old.id, grace=timedelta(0))
    assert made.key.expires_at is None
    with pytest.raises(KeyExpired):
        keys.authenticate(old_text)
    assert keys.authenticate(made.plaintext).id == made.key.id


def test_only_an_active_unrotated_key_can_be_rotated(keys, fake_clock):
    revoked, _ = keys.create("acme")
    keys.revoke(revoked.id)
    expired, _ = keys.create("acme", expires_in=timedelta(hours=1))
    rotated, _ = keys.create("acme")
    replacement = keys.rotate(rotated.id, grace=timedelta(days=1)).key
    fake_clock.advance(timedelta(hours=1))
    before = len(keys.list())
    for key_id, said in ((revoked.id, "revoked"), (expired.id, "expired"), (rotated.id, replacement.id)):
        with pytest.raises(KeyNotRotatable, match=said) as caught:
            keys.rotate(key_id, grace=timedelta(days=1))
        assert caught.value.code == "key_not_rotatable" and caught.value.http_status == 409
    with pytest.raises(KeyNotFound):
        keys.rotate("0" * 32, grace=timedelta(days=1))
    with pytest.raises(InvalidOption):
        keys.rotate(replacement.id, grace=timedelta(seconds=-1))
    assert len(keys.list()) == before  # no key was made by a refused rotation
    assert keys.get(rotated.id).replaced_by == replacement.id


def test_expiring_keys_are_counted_within_the_window_rotated_ones_left_out(keys, fake_clock):
    keys.create("acme")  # never expires
    keys.create("acme", expires_in=timedelta(days=30))  # not yet
    soon, _ = keys.create("acme", expires_in=timedelta(days=3))
    keys.create("bravo", expires_in=timedelta(days=6, hours=23))
    gone, _ = keys.create("acme", expires_in=timedelta(hours=1))
    revoked, _ = keys.create("acme", expires_in=timedelta(days=1))
    keys.revoke(revoked.id)
    fake_clock.advance(timedelta(hours=1))  # ``gone`` has expired
    assert keys.count_expiring(timedelta(days=7)) == 2
    keys.rotate(soon.id, grace=timedelta(days=1), expires_in=timedelta(days=90))  # its replacement exists
    assert keys.count_expiring(timedelta(days=7)) == 1
    fake_clock.advance(timedelta(days=23, hours=1))  # bravo's has expired, the 30-day key has 6 days left
    assert keys.count_expiring(timedelta(days=7)) == 1
    assert keys.count_expiring(timedelta(days=5)) == 0


def test_concurrent_rotations_of_one_key_make_one_new_key(keys):
    old, _ = keys.create("acme")
    barrier = Barrier(4)

    def one(_):
        barrier.wait()
        try:
            return keys.rotate(old.id, grace=timedelta(days=1)).key.id
        except KeyNotRotatable:
            return None

    with ThreadPoolExecutor(4) as pool:
        made = [key_id for key_id in pool.map(one, range(4)) if key_id is not None]
    assert len(made) == 1
    assert sorted(k.id for k in keys.list()) == sorted([old.id, made[0]])
    assert keys.get(old.id).replaced_by == made[0]
