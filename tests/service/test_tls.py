"""TLS and the admin listener of the real ``longdoc serve``, with
certificates made in the test (:mod:`tests.pki`):

- ``service.tls_certfile`` / ``tls_keyfile``: HTTPS only (a plain-HTTP
  request gets no HTTP answer; a stalled handshake is closed at the head
  timeout); a client that does not trust the CA refuses the server;
  ``LongdocClient`` and ``longdoc submit`` reach it with ``client.ca_file``;
- ``service.tls_client_ca``: a client without a certificate is refused,
  one with a certificate the CA signed (``client.cert_file``) is served;
- ``service.admin_host`` / ``admin_port``: /admin answers 404 on the public
  listener and is served, token required, on the admin one, which serves
  nothing else but /healthz; SIGTERM stops both listeners gracefully;
- TLS files that do not load and a port in use are configuration errors
  before anything starts;
- the database hop: ``sslmode=verify-full`` in ``database.url`` against a
  private PostgreSQL started with ``ssl=on`` and the test's certificate.

No OCR: born-digital pages are read from their text layer, region models off.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
import yaml

from longdoc.client import ClientError
from longdoc.config import load_settings
from longdoc.errors import EXIT_CONFIG, ConfigError, DatabaseUnavailable
from longdoc.jobs import db
from tests.conftest import free_port
from tests.pki import Pki, pki  # noqa: F401  (fixture)
from tests.service.conftest import Server
from tests.service.helpers import accepted, submit, wait_terminal

HEAD_TIMEOUT_S = 2.0


def tls_config(pki: Pki, **service) -> dict:
    return {"service": {"warmup": False, "tls_certfile": str(pki.server_cert), "tls_keyfile": str(pki.server_key),
                        "header_timeout_seconds": HEAD_TIMEOUT_S, **service},
            "inference": {"engine": "fake", "regions": False}}


def trusting(ca, cert=None, key=None) -> ssl.SSLContext:
    """A client's context trusting ``ca`` only (and presenting ``cert``)."""
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, pki):
    """HTTPS, with the admin API on a listener of its own."""
    srv = Server(tmp_path_factory.mktemp("server-tls"), **tls_config(pki, admin_port=free_port()))
    srv.verify = trusting(pki.ca)
    yield srv.start()
    srv.stop()


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory, pki):
    """HTTPS that requires a client certificate signed by the CA."""
    srv = Server(tmp_path_factory.mktemp("server-mtls"), **tls_config(pki, tls_client_ca=str(pki.ca)))
    srv.verify = trusting(pki.ca, pki.client_cert, pki.client_key)
    yield srv.start()
    srv.stop()


def submit_cli(srv: Server, tmp_path, doc, **client) -> subprocess.CompletedProcess:
    """``longdoc submit --wait`` with a config holding ``client`` (its url, key, TLS files)."""
    config = tmp_path / f"client-{len(list(tmp_path.glob('client-*')))}.yaml"
    config.write_text(yaml.safe_dump({"client": {"url": srv.url, **client}}), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "longdoc.cli", "submit", str(doc), "--wait", "--format", "txt",
                           "-o", str(tmp_path / "out"), "--config", str(config)],
                          capture_output=True, text=True, timeout=180)


# --- HTTPS ---------------------------------------------------------------------------


def test_the_api_is_served_over_https_to_a_client_trusting_the_ca(tls_server, pki, report_doc):
    key = tls_server.create_key("tls")
    with tls_server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["txt"]}))
        assert job["links"]["self"].startswith("/v1/jobs/")
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        assert http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"}).text.strip()
    with tls_server.client(key, ca_file=str(pki.ca)) as client:
        assert client.get(job["id"])["state"] == "succeeded"


def test_a_plain_http_request_to_the_tls_port_gets_no_http_answer(tls_server):
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{tls_server.port}/healthz", timeout=10)
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = _read_until_closed(sock)
    assert not answer.startswith(b"HTTP/"), answer[:80]
    with tls_server.http() as http:  # the listener is unharmed
        assert http.get("/healthz").status_code == 200


def test_a_client_that_does_not_trust_the_ca_refuses_the_server(tls_server, pki):
    with pytest.raises(httpx.ConnectError) as refused:
        httpx.get(f"{tls_server.url}/healthz", verify=trusting(pki.other_ca), timeout=10)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
    key = tls_server.create_key("untrusting")
    for tls in ({}, {"ca_file": str(pki.other_ca)}):  # certifi's public CAs; another CA
        with tls_server.client(key, **tls) as client, pytest.raises(ClientError) as failed:
            client.list()
        assert failed.value.code == "tls_failed" and "client.ca_file" in failed.value.hint, failed.value


def test_longdoc_submit_waits_over_https_with_client_ca_file(tls_server, pki, report_doc, tmp_path):
    key = tls_server.create_key("submit-tls")
    done = submit_cli(tls_server, tmp_path, report_doc.pdf_path, api_key=key.key, ca_file=str(pki.ca))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / f"{report_doc.pdf_path.stem}.txt").read_text(encoding="utf-8").strip()
    refused = submit_cli(tls_server, tmp_path, report_doc.pdf_path, api_key=key.key)  # no client.ca_file
    assert refused.returncode != 0 and "error [tls_failed]" in refused.stderr, refused.stderr


def test_a_stalled_tls_handshake_is_closed_at_the_head_timeout(tls_server):
    """asyncio would wait 60 s for the handshake; the head timeout applies."""
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=HEAD_TIMEOUT_S + 20) as sock:
        assert _read_until_closed(sock) == b""


# --- mutual TLS ----------------------------------------------------------------------


def test_mutual_tls_refuses_a_client_without_a_certificate(mtls_server, pki, report_doc, tmp_path):
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{mtls_server.url}/healthz", verify=trusting(pki.ca), timeout=10)
    with mtls_server.http() as http:  # with the client certificate
        assert http.get("/healthz").status_code == 200
    key = mtls_server.create_key("mtls")
    with mtls_server.client(key, ca_file=str(pki.ca)) as client, pytest.raises(ClientError) as failed:
        client.list()
    # TLS 1.3 checks the client's certificate after the client's side of the handshake: the client sees
    # the server's alert (tls_failed) or, when the server closed first, only the closed connection
    assert failed.value.code in ("tls_failed", "connection_failed"), failed.value
    assert "client.cert_file" in failed.value.hint
    with mtls_server.client(key, ca_file=str(pki.ca), cert_file=str(pki.client_cert),
                            key_file=str(pki.client_key)) as client:
        assert client.list() == []
    done = submit_cli(mtls_server, tmp_path, report_doc.pdf_path, api_key=key.key, ca_file=str(pki.ca),
                      cert_file=str(pki.client_cert), key_file=str(pki.client_key))
    assert done.returncode == 0, done.stderr
    assert "succeeded" in done.stdout


# --- the admin listener ----------------------------------------------------------------


def test_admin_is_served_only_on_its_own_listener(tls_server):
    admin = {"Authorization": f"Bearer {tls_server.admin_token}"}
    with tls_server.http() as public:
        for method, path in (("GET", "/admin/keys"), ("POST", "/admin/retention/run"), ("GET", "/admin")):
            r = public.request(method, path, headers=admin)
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (path, r.text)
        assert not [p for p in public.get("/openapi.json").json()["paths"] if p.startswith("/admin")]
    with httpx.Client(base_url=tls_server.admin_url, verify=tls_server.verify, timeout=30) as listener:
        made = listener.post("/admin/keys", json={"tenant": "from-admin"}, headers=admin)
        assert made.status_code == 201, made.text
        assert "from-admin" in [k["tenant"] for k in listener.get("/admin/keys", headers=admin).json()]
        refused = listener.get("/admin/keys")  # the admin token still applies
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_forbidden"
        wrong = listener.get("/admin/keys", headers={"Authorization": "Bearer " + "x" * 32})
        assert wrong.status_code == 403
        assert listener.get("/healthz").status_code == 200
        for path in ("/v1/jobs", "/readyz", "/metrics", "/docs"):  # the inference API is not served there
            assert listener.get(path, headers={"Authorization": f"Bearer {made.json()['key']}"}).status_code == 404
    with tls_server.http(made.json()["key"]) as public:  # the key made there works on the public listener
        assert public.get("/v1/jobs").status_code == 200


def test_sigterm_stops_both_listeners_gracefully(start_server, pki):
    srv = start_server(start=False, **tls_config(pki, admin_port=free_port()))
    srv.verify = trusting(pki.ca)
    srv.start()
    rc = srv.terminate()
    assert rc in (0, -signal.SIGTERM), srv.log_tail()  # uvicorn's convention: the signal raised again
    assert "Application shutdown complete" in srv.log_text()
    for port in (srv.port, srv.config["service"]["admin_port"]):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(("service", "named"), [
    ({"tls_certfile": "server.pem"}, "service.tls_keyfile"),
    ({"tls_client_ca": "ca.pem"}, "service.tls_client_ca"),
    ({"port": 8000, "admin_port": 8000}, "service.admin_port"),
])
def test_settings_that_do_not_fit_together_are_refused(service, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_settings(None, {"service": service})


def test_tls_files_that_do_not_load_and_a_port_in_use_stop_serve_before_it_starts(tmp_path, pki):
    cases = [
        ({"tls_certfile": str(pki.server_cert), "tls_keyfile": str(pki.client_key)}, "service.tls_certfile"),
        ({"tls_certfile": str(tmp_path / "missing.pem"), "tls_keyfile": str(pki.server_key)},
         "service.tls_certfile"),
        ({"tls_certfile": str(pki.server_cert), "tls_keyfile": str(pki.server_key),
          "tls_client_ca": str(pki.server_key)}, "service.tls_client_ca"),
    ]
    with socket.create_server(("127.0.0.1", 0)) as taken:
        cases.append(({"admin_port": taken.getsockname()[1]}, "service.admin_port"))
        for i, (service, named) in enumerate(cases):
            config = tmp_path / f"config-{i}.yaml"
            config.write_text(yaml.safe_dump({
                "service": {"port": free_port(), "warmup": False, **service},
                "database": {"url": f"sqlite:///{tmp_path / 'db.sqlite'}"},
                "storage": {"url": f"file://{tmp_path / 'store'}"},
            }), encoding="utf-8")
            done = subprocess.run([sys.executable, "-m", "longdoc.cli", "serve", "--config", str(config)],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path)
            assert done.returncode == EXIT_CONFIG, (service, done.stderr[-2000:])
            assert "error [invalid_config]" in done.stderr and named in done.stderr, done.stderr[-2000:]
            assert "service started" not in done.stderr  # nothing started


# --- the database hop ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_postgres(pki):
    """A private PostgreSQL (the machine's binaries, run as the postgres user
    when this is root) listening on 127.0.0.1 with ssl=on and the test's
    server certificate; yields ``url(ca)``, a database URL that checks the
    server against ``ca`` (sslmode=verify-full)."""
    initdb = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb")]
    if not initdb[-1]:
        pytest.skip("PostgreSQL's initdb is not installed")
    bin_dir = Path(initdb[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="longdoc-pg-tls-"))  # not under pytest's root-only folder
    data, port = folder / "data", free_port()
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if run_as:
        shutil.chown(folder, "postgres")
    try:
        subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                        "--no-sync"], check=True, capture_output=True, timeout=120)
        for src, name in ((pki.server_cert, "server.pem"), (pki.server_key, "server.key")):
            shutil.copy(src, data / name)
            if run_as:
                shutil.chown(data / name, "postgres")
        subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-o",
                        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=server.pem "
                        "-c ssl_key_file=server.key -c fsync=off", "start"], check=True, capture_output=True,
                       timeout=120)
        yield lambda ca: (f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
                          f"?sslmode=verify-full&sslrootcert={ca}")
    finally:
        subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_service_reaches_postgresql_over_tls_with_sslmode_in_the_url(start_server, tls_postgres, pki):
    url = tls_postgres(pki.ca)
    srv = start_server(database={"url": url}, inference={"engine": "fake", "regions": False})
    key = srv.create_key("pg-tls")  # the CLI, on the same URL
    with srv.http(key) as http:
        assert http.get("/v1/jobs").status_code == 200
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            clients = dict(conn.exec_driver_sql(
                "select ssl, count(*) from pg_stat_ssl join pg_stat_activity using (pid) "
                "where backend_type = 'client backend' group by ssl").all())
    finally:
        engine.dispose()
    assert clients.get(True, 0) >= 2 and not clients.get(False), clients  # the service's pool and this one
    distrusting = db.make_engine(tls_postgres(pki.other_ca))
    try:
        with pytest.raises(DatabaseUnavailable) as refused:
            db.ping(distrusting)
        assert "certificate verify failed" in str(refused.value.__cause__)
    finally:
        distrusting.dispose()


def _read_until_closed(sock: socket.socket) -> bytes:
    """What the server sent before it closed the connection (a reset counts as closed)."""
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data
