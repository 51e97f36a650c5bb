"""The twin's TLS identity: a certificate authority made for one twin and the serving certificate it signs
for 127.0.0.1, as kubeadm gives every cluster its own CA.

A real API server is only spoken to over TLS, and kubectl sends a bearer token to nothing else: clients
trust the CA through the kubeconfig's ``certificate-authority-data``. Keys come from the OS, never from the
seed, and exist only in the serving process (and, for the moment the server loads them, in a private
temporary directory).
"""

from __future__ import annotations

import ipaddress
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Generous both ways: clocks of one machine agree, but a twin may serve for days.
NOT_BEFORE_SLACK = timedelta(hours=1)
VALIDITY = timedelta(days=365)
HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class ServingCertificates:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    @contextmanager
    def files(self) -> Iterator[tuple[Path, Path]]:
        """The certificate and key as files (in an owner-only temporary directory) while the block runs,
        for a server that loads them from paths."""
        with tempfile.TemporaryDirectory(prefix="marathon-twin-tls-") as directory:
            cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
            cert.write_bytes(self.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            yield cert, key


def issue(*, now: datetime, hosts: tuple[str, ...] = HOSTS) -> ServingCertificates:
    """A fresh CA and a serving certificate it signs for ``hosts``, valid from around ``now`` (wall time:
    TLS clients check validity against their own clock)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "marathon-twin-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - NOT_BEFORE_SLACK)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - NOT_BEFORE_SLACK)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificates(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
