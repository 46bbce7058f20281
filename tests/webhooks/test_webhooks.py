"""Webhooks: signatures and target checks. Delivery (retries, backoff,
giving up, pinned addresses) is the outbox's: ``tests/webhooks/test_outbox.py``."""

from __future__ import annotations

import json

import httpx
import pytest

from longdoc.errors import CallbackRefused
from longdoc.webhooks import delivery as webhooks
from longdoc.webhooks.delivery import check_target, retry_delay, sign, verify

SECRET = "whsec_test_secret"
PAYLOAD = {"event": "job.finished", "job": {"id": "job-1", "state": "succeeded", "title": "Zürich"}}


# --- signatures -------------------------------------------------------------


def test_signature_round_trip_and_tampering():
    body = b'{"event":"job.finished"}'
    signature = sign(SECRET, 1_700_000_000, body)
    assert signature.startswith("sha256=") and len(signature) == len("sha256=") + 64
    assert verify(SECRET, 1_700_000_000, body, signature, now=1_700_000_000)
    assert verify(SECRET, "1700000000", body, signature, now=1_700_000_000)  # raw header
    assert not verify("another-secret", 1_700_000_000, body, signature, now=1_700_000_000)
    assert not verify(SECRET, 1_700_000_000, body + b" ", signature, now=1_700_000_000)
    assert not verify(SECRET, 1_700_000_001, body, signature, now=1_700_000_001)  # other timestamp
    assert not verify(SECRET, 1_700_000_000, body, signature[len("sha256="):], now=1_700_000_000)
    assert not verify(SECRET, "yesterday", body, signature, now=1_700_000_000)


@pytest.mark.parametrize(
    ("skew_s", "tolerance_s", "accepted"),
    [(299, 300, True), (301, 300, False), (-301, 300, False), (-299, 300, True), (61, 60, False)],
)
def test_verify_rejects_stale_or_future_timestamps(skew_s, tolerance_s, accepted):
    ts = 1_700_000_000
    signature = sign(SECRET, ts, b"{}")
    assert verify(SECRET, ts, b"{}", signature, tolerance_s=tolerance_s, now=ts + skew_s) is accepted


# --- backoff ----------------------------------------------------------------


def test_retry_delay_doubles_with_jitter_and_is_capped():
    for attempt, low in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)):
        assert low <= retry_delay(attempt, base_delay_s=1.0, max_delay_s=60.0) <= low + 1.0
    assert retry_delay(10, base_delay_s=1.0, max_delay_s=60.0) == 60.0
    assert retry_delay(10_000, base_delay_s=1.0, max_delay_s=60.0) == 60.0  # no overflow
    assert retry_delay(1, base_delay_s=1.0, max_delay_s=30.0, retry_after_s=7) == 7
    assert retry_delay(1, base_delay_s=1.0, max_delay_s=30.0, retry_after_s=3600) == 30


# --- targets ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://127.8.9.10:8080/hook",
        "http://10.1.2.3/hook",
        "http://172.16.0.1/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/hook",  # shared (carrier-grade NAT)
        "http://0.0.0.0/hook",
        "http://224.0.0.1/hook",
        "http://240.0.0.1/hook",
        "http://2130706433/hook",  # 127.0.0.1 as one integer
        "http://[::1]/hook",
        "http://[::]/hook",
        "http://[fe80::1]/hook",
        "http://[fc00::1]/hook",
        "http://[ff02::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[::ffff:10.0.0.1]/hook",
        "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of 169.254.169.254
        "http://[2002:a00:1::1]/hook",  # 6to4 of 10.0.0.1
    ],
)
def test_non_public_addresses_are_refused(url):
    with pytest.raises(CallbackRefused) as info:
        check_target(url, allow_private=False)
    assert info.value.code == "callback_refused" and info.value.http_status == 422


@pytest.mark.parametrize(
    "url",
    [
        "https://8.8.8.8/hook",
        "http://1.1.1.1:8443/hooks/longdoc?token=abc",
        "https://[2606:4700:4700::1111]/hook",
        "http://[::ffff:8.8.8.8]/hook",
    ],
)
def test_public_addresses_are_accepted(url):
    check_target(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://8.8.8.8/hook",
        "file:///etc/passwd",
        "gopher://8.8.8.8/",
        "javascript:alert(1)",
        "8.8.8.8/hook",
        "http:///hook",
        "http://user:pass@8.8.8.8/hook",
        "http://user@8.8.8.8/hook",
        "http://@8.8.8.8/hook",
        "http://8.8.8.8:0/hook",
        "",
    ],
)
def test_bad_urls_are_refused_even_with_allow_private(url):
    with pytest.raises(CallbackRefused):
        check_target(url, allow_private=True)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://[::1]/hook", "http://10.0.0.1/hook"])
def test_allow_private_accepts_private_addresses(url):
    check_target(url, allow_private=True)


def test_a_name_with_any_private_address_is_refused(fake_dns):
    answers, _ = fake_dns
    answers["mixed.example.test"] = [["8.8.8.8", "10.0.0.7"]]
    answers["public.example.test"] = [["8.8.8.8", "2606:4700:4700::1111"]]
    with pytest.raises(CallbackRefused, match="a private address") as info:
        check_target("https://mixed.example.test/hook", allow_private=False)
    assert "10.0.0.7" not in json.dumps(info.value.to_dict())  # no internal DNS oracle
    check_target("https://public.example.test/hook", allow_private=False)


def test_unresolvable_host_is_refused_at_submit(fake_dns):
    with pytest.raises(CallbackRefused, match="does not resolve"):
        check_target("https://nowhere.example.test/hook", allow_private=True)


def test_https_request_keeps_the_name_for_sni_and_certificate_checks():
    with httpx.Client() as client:
        request = webhooks._pinned_request(
            client, httpx.URL("https://hooks.example.test:8443/in"), "93.184.216.34", b"{}", {}
        )
    assert request.url.host == "93.184.216.34" and request.url.port == 8443
    assert request.headers["Host"] == "hooks.example.test:8443"
    assert request.extensions["sni_hostname"] == "hooks.example.test"
