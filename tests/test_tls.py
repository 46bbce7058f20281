"""longdoc/tls.py: a TLS file that does not load is a configuration error
naming its setting, when the client, the listener or the Redis connection
is set up, not a failure of its first connection. (The hops themselves are
tested for real in tests/service/test_tls.py, test_rate_limit_redis.py,
tests/runner/test_fleet.py and tests/storage/test_s3_store_moto.py.)"""

from __future__ import annotations

import ssl
import subprocess
import sys

import pytest

from longdoc.client import LongdocClient
from longdoc.errors import EXIT_CONFIG, ConfigError
from longdoc.tls import client_context, redis_options, server_context
from tests.pki import Pki, pki  # noqa: F401  (fixture)


def test_the_client_context_trusts_the_ca_file_alone_and_presents_the_certificate(pki: Pki):
    context = client_context(str(pki.ca), str(pki.client_cert), str(pki.client_key))
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "longdoc test CA"),),)]


@pytest.mark.parametrize(("files", "named"), [
    ({"ca_file": "missing.pem"}, "client.ca_file"),
    ({"ca_file": "server.key"}, "client.ca_file"),  # a key, no certificate in it
    ({"cert_file": "client.pem", "key_file": "server.key"}, "client.cert_file"),  # not its key
    ({"key_file": "client.key"}, "client.key_file"),  # a key without its certificate
])
def test_client_files_that_do_not_load_are_config_errors(pki: Pki, files, named):
    paths = {k: str(pki.ca.parent / v) for k, v in files.items()}
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        client_context(**paths)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        LongdocClient("https://127.0.0.1:1", "ld_x", **paths)


def test_longdoc_submit_reports_a_missing_ca_file_before_sending_anything(pki: Pki, tmp_path):
    done = subprocess.run([sys.executable, "-m", "longdoc.cli", "submit", str(pki.ca), "--url", "https://127.0.0.1:1",
                           "--api-key", "ld_x", "--ca-file", str(tmp_path / "missing.pem")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == EXIT_CONFIG and "error [invalid_config]" in done.stderr, done.stderr
    assert "client.ca_file" in done.stderr


def test_the_server_context_requires_client_certificates_only_with_a_client_ca(pki: Pki):
    assert server_context(str(pki.server_cert), str(pki.server_key)).verify_mode == ssl.CERT_NONE
    mutual = server_context(str(pki.server_cert), str(pki.server_key), str(pki.ca))
    assert mutual.verify_mode == ssl.CERT_REQUIRED and mutual.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_redis_options_check_the_certificate_of_rediss_urls_only(pki: Pki, tmp_path):
    assert redis_options("redis://127.0.0.1:6379/0", str(pki.ca)) == {}
    assert redis_options("rediss://r:6380/0", None) == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    assert redis_options("rediss://r:6380/0", str(pki.ca)) == {"ssl_cert_reqs": ssl.CERT_REQUIRED,
                                                               "ssl_ca_certs": str(pki.ca)}
    with pytest.raises(ConfigError, match=r"queue\.tls_ca_file"):
        redis_options("rediss://r:6380/0", str(tmp_path / "missing.pem"))
