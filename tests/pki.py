"""Certificates made for the tests with the ``cryptography`` package: a CA,
a server certificate it signed (for 127.0.0.1 and localhost), a client
certificate it signed, and a second CA that signed nothing the servers use
(a client trusting only it must refuse them). P-256 keys: quick to make and
to handshake with. Written as PEM files, the form every hop's setting takes.

Fixture: ``pki`` (session).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path           # the CA every server and client certificate chains to
    server_cert: Path  # for 127.0.0.1 and localhost
    server_key: Path
    client_cert: Path  # a client certificate (mutual TLS)
    client_key: Path
    other_ca: Path     # a CA that signed none of them


def make_pki(folder: Path) -> Pki:
    """Write the CA, the server and client certificates and the other CA under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("longdoc test CA")
    _, other_cert = _ca("some other CA")
    server_key, server_cert = _leaf(ca_key, ca_cert, "longdoc test server", ExtendedKeyUsageOID.SERVER_AUTH,
                                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    client_key, client_cert = _leaf(ca_key, ca_cert, "longdoc test client", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    paths = Pki(*(folder / name for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key",
                                             "other-ca.pem")))
    _write_cert(paths.ca, ca_cert)
    _write_cert(paths.other_ca, other_cert)
    _write_cert(paths.server_cert, server_cert)
    _write_key(paths.server_key, server_key)
    _write_cert(paths.client_cert, client_cert)
    _write_key(paths.client_key, client_key)
    return paths


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (_builder(subject, subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _leaf(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, name: str, usage: x509.ObjectIdentifier,
          names: list[x509.GeneralName]) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), ca_cert.subject,
                        key.public_key())
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                              critical=False))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2)))


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
