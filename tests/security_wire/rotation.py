"""Certificates for key-store rotation tests: more server key stores signed by the CA of
kafkascope.local.security.make_certs, with the subject, SubjectAltNames and lifetime a test asks for."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafkascope.local.security import make_certs


def certs_or_skip(directory: Path) -> dict[str, Path]:
    """make_certs' CA and certificates in `directory` / certs; the test is skipped without the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make test certificates")
    return make_certs(directory / "certs")


def issue(certs: dict[str, Path], out: Path, subject: str = "/CN=localhost",
          san: str = "IP:127.0.0.1,DNS:localhost", days: int = 3, key_password: str | None = None) -> Path:
    """A PEM key store at `out` (PKCS#8 key, encrypted with `key_password` if given, then the certificate and the
    CA), signed by the CA of `certs` (make_certs' files)."""
    d = out.parent
    d.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    ca_dir = certs["ca"].parent

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    (d / f"{stem}.ext").write_text(f"subjectAltName={san}\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{stem}.key0", "-out", f"{stem}.csr")
    crypt = ["-v2", "aes-256-cbc", "-passout", f"pass:{key_password}"] if key_password else ["-nocrypt"]
    openssl("pkcs8", "-topk8", *crypt, "-in", f"{stem}.key0", "-out", f"{stem}.key")
    openssl("x509", "-req", "-in", f"{stem}.csr", "-CA", str(certs["ca"]), "-CAkey", str(ca_dir / "ca.key"),
            "-CAcreateserial", "-days", str(days), "-extfile", f"{stem}.ext", "-out", f"{stem}.crt")
    out.write_text((d / f"{stem}.key").read_text() + (d / f"{stem}.crt").read_text() + certs["ca"].read_text())
    return out


def certificate_pem(keystore: Path) -> str:
    """The first certificate of a PEM key store."""
    text = keystore.read_text()
    start = text.index("-----BEGIN CERTIFICATE-----")
    end = text.index("-----END CERTIFICATE-----", start) + len("-----END CERTIFICATE-----")
    return text[start:end] + "\n"
