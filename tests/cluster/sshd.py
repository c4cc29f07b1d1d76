"""A second 'server' on this machine: an sshd on 127.0.0.2 (a free port) with throw-away host and
user keys, root login by key only, tunnels allowed; and an ssh_config that reaches it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.ports import loose_port
from topos.mininet.procs import stop_child

ADDRESS = "127.0.0.2"
SSHD = Path("/usr/sbin/sshd")


@dataclass
class SecondServer:
    address: str
    port: int
    ssh_config: Path
    proc: subprocess.Popen


def available() -> str | None:
    """Why a second server cannot be made here, or None."""
    missing = [p for p in ("ssh", "ssh-keygen") if not shutil.which(p)]
    if not SSHD.exists():
        missing.append(str(SSHD))
    if missing:
        return f"needs openssh-server and openssh-client ({', '.join(missing)} missing)"
    if not Path("/dev/net/tun").exists():
        return "needs /dev/net/tun (ssh Ethernet tunnels)"
    return None


def _listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.2):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def second_server(workdir: Path, address: str = ADDRESS,
                  settings: Mapping[str, str] | None = None) -> Iterator[SecondServer]:
    """Run the sshd for the block; stop it (SIGTERM, then SIGKILL) afterwards. `settings`
    (sshd_config keyword -> value) replace the defaults below, to make a misconfigured
    server."""
    workdir.mkdir(parents=True, exist_ok=True)
    host_key, user_key = workdir / "host_ed25519", workdir / "id_ed25519"
    for key in (host_key, user_key):
        for old in (key, key.with_suffix(".pub")):
            old.unlink(missing_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True)
    (workdir / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    port = loose_port()
    config = workdir / "sshd_config"
    # sshd keeps the first value it reads for a keyword: the overrides come first
    config.write_text("\n".join([
        *(f"{key} {value}" for key, value in (settings or {}).items()),
        f"ListenAddress {address}:{port}", f"HostKey {host_key}",
        f"PidFile {workdir / 'sshd.pid'}", f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
        "PermitTunnel yes", "AllowTcpForwarding yes", "MaxSessions 500", "MaxStartups 100",
        "LogLevel ERROR", "Subsystem sftp internal-sftp", ""]))
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    ssh_config = workdir / "ssh_config"
    ssh_config.write_text("\n".join([
        f"Host {address}", f"  Port {port}", "  User root", f"  IdentityFile {user_key}",
        "  IdentitiesOnly yes", "  StrictHostKeyChecking no", "  UserKnownHostsFile /dev/null",
        "  LogLevel ERROR", ""]))
    log = open(workdir / "sshd.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _listening(address, port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(workdir / 'sshd.log').read_text()}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        yield SecondServer(address, port, ssh_config, proc)
    finally:
        stop_child(proc, 5.0)
        log.close()


def sshd_children(server: SecondServer) -> list[int]:
    """Pids of sessions the sshd still serves (its child processes)."""
    out = subprocess.run(["pgrep", "-P", str(server.proc.pid)], capture_output=True, text=True,
                         check=False).stdout.split()
    return [int(p) for p in out if int(p) != os.getpid()]
