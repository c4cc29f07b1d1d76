"""Who may drive the switch: P4Runtime's TLS files (BMv2's --grpc-server-ssl options), the
runtime CLI's shared secret, and the warning for a server reachable beyond loopback."""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass

MAX_SECRET_BYTES = 4096


class OptionsError(Exception):
    """Bad or conflicting command-line arguments; the message says which."""


@dataclass(frozen=True)
class GrpcTls:
    """BMv2's --grpc-server-cert/--grpc-server-key/--grpc-server-cacert (PEM paths) and
    --grpc-server-with-client-auth."""

    cert: str
    key: str
    ca: str | None = None
    client_auth: bool = False


def grpc_tls(ns: argparse.Namespace) -> tuple[GrpcTls | None, list[str]]:
    """The TLS settings after '--', their PEM files loaded once to check them."""
    import ssl  # only here: a switch without TLS does not load it

    given = [f"--{name.replace('_', '-')}" for name in ("grpc_server_cert", "grpc_server_key",
             "grpc_server_cacert", "grpc_server_with_client_auth") if getattr(ns, name)]
    if not ns.grpc_server_ssl:
        return None, [f"{', '.join(given)} without --grpc-server-ssl"] if given else []
    if not ns.grpc_server_cert or not ns.grpc_server_key:
        return None, ["--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key"]
    if ns.grpc_server_with_client_auth and not ns.grpc_server_cacert:
        return None, ["--grpc-server-with-client-auth needs --grpc-server-cacert (the CA that "
                      "signs the clients' certificates)"]
    files = [("--grpc-server-cert", ns.grpc_server_cert), ("--grpc-server-key", ns.grpc_server_key)]
    if ns.grpc_server_cacert:
        files.append(("--grpc-server-cacert", ns.grpc_server_cacert))
    errors = []
    for flag, path in files:
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            errors.append(f"{flag} {path}: {exc.strerror}")
    if errors:
        return None, errors
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(ns.grpc_server_cert, ns.grpc_server_key)
    except ssl.SSLError:
        errors.append(f"--grpc-server-cert {ns.grpc_server_cert} / --grpc-server-key "
                      f"{ns.grpc_server_key}: not a PEM certificate and its private key")
    if ns.grpc_server_cacert:
        try:
            context.load_verify_locations(ns.grpc_server_cacert)
        except ssl.SSLError:
            errors.append(f"--grpc-server-cacert {ns.grpc_server_cacert}: not a PEM certificate")
    if errors:
        return None, errors
    return GrpcTls(ns.grpc_server_cert, ns.grpc_server_key, ns.grpc_server_cacert,
                   ns.grpc_server_with_client_auth), []


def read_secret(path: str) -> bytes:
    """A shared secret: the first line of the file `path`. Raises OptionsError."""
    try:
        with open(path, "rb") as f:
            first = f.readline(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise OptionsError(f"{path}: {exc.strerror}") from None
    secret = first.strip()
    if not secret or len(first) > MAX_SECRET_BYTES or any(b <= 32 or b > 126 for b in secret):
        raise OptionsError(f"{path}: its first line must be a secret of 1 to "
                           f"{MAX_SECRET_BYTES} printable ASCII characters without spaces")
    return secret


def exposure_warnings(grpc_addr: str, tls: GrpcTls | None) -> list[str]:
    """What the switch serves beyond this machine without a client check."""
    host = grpc_addr.rpartition(":")[0].strip("[]")
    if _is_loopback(host) or (tls is not None and tls.client_auth):
        return []
    return [f"P4Runtime on {grpc_addr} is reachable beyond this machine and anyone who "
            "reaches it can program the switch; bind it to 127.0.0.1 or require client "
            "certificates (-- --grpc-server-ssl ... --grpc-server-with-client-auth)"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
