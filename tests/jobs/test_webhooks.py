"""Webhooks: signatures, target checks, delivery against a real HTTP receiver."""

from __future__ import annotations

import email.utils
import json
import socket
import time

import httpx
import pytest

from longdoc.errors import CallbackRefused
from longdoc.jobs import webhooks
from longdoc.jobs.webhooks import check_target, deliver, sign, verify
from tests.jobs.webhook_receiver import Receiver

SECRET = "whsec_test_secret"
PAYLOAD = {"event": "job.finished", "job": {"id": "job-1", "state": "succeeded", "title": "Zürich"}}


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make(script=None, delay_s: float = 0.0) -> Receiver:
        receiver = Receiver(script=script or [(200, {})], delay_s=delay_s)
        made.append(receiver)
        return receiver

    yield make
    for receiver in made:
        receiver.close()


def send(url: str, *, allow_private: bool = True, **options):
    """deliver() with recorded rows and sleeps captured instead of waiting."""
    rows: list[tuple] = []
    sleeps: list[float] = []
    ok = deliver(
        url,
        PAYLOAD,
        SECRET,
        record=lambda *row: rows.append(row),
        sleep=sleeps.append,
        allow_private=allow_private,
        **options,
    )
    return ok, rows, sleeps


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


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


# --- delivery ---------------------------------------------------------------


def test_retries_server_errors_then_delivers_signed_payload(receivers):
    receiver = receivers([(500, {}), (503, {}), (200, {})])
    ok, rows, sleeps = send(receiver.url())

    assert ok is True
    assert [(attempt, status, error) for attempt, status, error, _ in rows] == [
        (1, 500, None),
        (2, 503, None),
        (3, 200, None),
    ]
    assert all(isinstance(ms, int) and ms >= 0 for *_, ms in rows)
    # exponential backoff from 1 s with up to 1 s of jitter
    assert len(sleeps) == 2 and 1 <= sleeps[0] <= 2 <= sleeps[1] <= 3

    assert len(receiver.requests) == 3
    deliveries = {r.headers["X-Longdoc-Delivery"] for r in receiver.requests}
    assert len(deliveries) == 1  # one delivery id across its attempts
    for request in receiver.requests:
        headers = request.headers
        assert request.path == "/hook"
        assert headers["Content-Type"] == "application/json"
        assert headers["X-Longdoc-Event"] == "job.finished"
        assert json.loads(request.body) == PAYLOAD
        assert verify(SECRET, headers["X-Longdoc-Timestamp"], request.body, headers["X-Longdoc-Signature"])
        assert not verify("wrong", headers["X-Longdoc-Timestamp"], request.body, headers["X-Longdoc-Signature"])
        tampered = request.body.replace(b"succeeded", b"failed")
        assert not verify(SECRET, headers["X-Longdoc-Timestamp"], tampered, headers["X-Longdoc-Signature"])


def test_429_retry_after_is_honoured_up_to_max_delay(receivers):
    receiver = receivers([(429, {"Retry-After": "7"}), (503, {"Retry-After": "3600"}), (204, {})])
    ok, rows, sleeps = send(receiver.url(), max_delay_s=30)
    assert ok is True
    assert [row[1] for row in rows] == [429, 503, 204]
    assert sleeps == [7, 30]


def test_retry_after_as_an_http_date(receivers):
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    receiver = receivers([(503, {"Retry-After": past}), (503, {"Retry-After": "soon"}), (200, {})])
    ok, _, sleeps = send(receiver.url(), base_delay_s=2)
    assert ok is True
    assert sleeps[0] == 0  # a date already past: retry at once
    assert 4 <= sleeps[1] <= 6  # unparsable: the exponential backoff (2 s · 2 + jitter)


def test_gives_up_after_max_attempts(receivers):
    receiver = receivers([(500, {})])
    ok, rows, sleeps = send(receiver.url(), max_attempts=3, max_delay_s=5)
    assert ok is False
    assert [row[:2] for row in rows] == [(1, 500), (2, 500), (3, 500)]
    assert len(sleeps) == 2 and all(s <= 5 for s in sleeps)
    assert len(receiver.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
def test_client_error_gives_up_at_once(receivers, status):
    receiver = receivers([(status, {}), (200, {})])
    ok, rows, sleeps = send(receiver.url())
    assert ok is False
    assert [row[:3] for row in rows] == [(1, status, None)]
    assert sleeps == [] and len(receiver.requests) == 1


def test_redirects_are_not_followed(receivers):
    elsewhere = receivers()
    receiver = receivers([(307, {"Location": elsewhere.url()})])
    ok, rows, _ = send(receiver.url())
    assert ok is False
    assert [row[:2] for row in rows] == [(1, 307)]
    assert elsewhere.requests == []


def test_connection_refused_is_retried_and_never_raises():
    ok, rows, sleeps = send(closed_port_url(), max_attempts=3)
    assert ok is False
    assert [row[0] for row in rows] == [1, 2, 3]
    assert all(row[1] is None and "ConnectError" in row[2] for row in rows)
    assert len(sleeps) == 2


def test_timeout_is_retried(receivers):
    receiver = receivers([(200, {})], delay_s=1.0)
    ok, rows, _ = send(receiver.url(), max_attempts=2, timeout_s=0.2)
    assert ok is False
    assert len(rows) == 2 and all(row[1] is None and "Timeout" in row[2] for row in rows)


def test_loopback_refused_at_delivery_without_allow_private(receivers):
    receiver = receivers()
    ok, rows, sleeps = send(receiver.url(), allow_private=False)
    assert ok is False
    assert len(rows) == 1 and rows[0][1] is None and rows[0][2].startswith("callback_refused")
    assert receiver.requests == [] and sleeps == []


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


@pytest.fixture
def fake_dns(monkeypatch):
    """Answers for names ending in .example.test (a list per name, one per lookup,
    the last repeating); other hosts go to the real resolver. Records lookups."""
    real = socket.getaddrinfo
    answers: dict[str, list[list[str]]] = {}
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".example.test"):
            lookups.append(host)
            script = answers.get(host)
            if not script:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            ips = script.pop(0) if len(script) > 1 else script[0]
            return [
                (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
                for ip in ips
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers, lookups


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


def test_dns_rebinding_after_submit_is_refused_at_delivery(fake_dns, receivers):
    receiver = receivers()
    answers, _ = fake_dns
    answers["rebind.example.test"] = [["8.8.8.8"], ["127.0.0.1"]]
    url = f"http://rebind.example.test:{receiver.port}/hook"
    check_target(url, allow_private=False)  # public when the job was submitted
    ok, rows, _ = send(url, allow_private=False)
    assert ok is False
    assert rows[0][2].startswith("callback_refused") and "loopback" in rows[0][2]
    assert receiver.requests == []


def test_delivery_connects_to_the_checked_address_and_keeps_the_host(fake_dns, receivers):
    receiver = receivers()
    answers, lookups = fake_dns
    # If anything resolved the name a second time it would get a dead address.
    answers["hooks.example.test"] = [["127.0.0.1"], ["127.0.0.2"]]
    ok, rows, _ = send(f"http://hooks.example.test:{receiver.port}/in")
    assert ok is True and [row[1] for row in rows] == [200]
    assert lookups == ["hooks.example.test"]
    assert receiver.requests[0].headers["Host"] == f"hooks.example.test:{receiver.port}"
    assert receiver.requests[0].path == "/in"


def test_delivery_falls_back_to_the_next_checked_address(fake_dns, receivers):
    receiver = receivers()
    answers, _ = fake_dns
    # 127.0.0.2 is loopback too, but the receiver listens on 127.0.0.1 only.
    answers["two.example.test"] = [["127.0.0.2", "127.0.0.1"]]
    with socket.socket() as probe:  # skip where 127.0.0.2 is not a loopback alias
        if probe.connect_ex(("127.0.0.2", receiver.port)) == 0:
            pytest.skip("127.0.0.2 reaches the receiver on this machine")
    ok, rows, _ = send(f"http://two.example.test:{receiver.port}/hook")
    assert ok is True and len(rows) == 1 and len(receiver.requests) == 1


def test_https_request_keeps_the_name_for_sni_and_certificate_checks():
    with httpx.Client() as client:
        request = webhooks._pinned_request(
            client, httpx.URL("https://hooks.example.test:8443/in"), "93.184.216.34", b"{}", {}
        )
    assert request.url.host == "93.184.216.34" and request.url.port == 8443
    assert request.headers["Host"] == "hooks.example.test:8443"
    assert request.extensions["sni_hostname"] == "hooks.example.test"
