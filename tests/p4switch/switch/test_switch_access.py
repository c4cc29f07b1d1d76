"""Who may drive a p4switch process: P4Runtime over TLS with client certificates, the runtime
CLI's shared secret and its bounds, and the warning for a server bound beyond loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from sw_p4rt import Client
from sw_proc import REPO, SwitchProcess, wait_port

from p4switch.switch.access import exposure_warnings
from p4switch.switch.options import parse_args
from tests.ports import loose_port

PROGRAM = Path(__file__).resolve().parent / "programs" / "switch_test.p4"
SECRET = "s3cret-for-this-test"
BIG = 99999999999999999999


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _issue(tmp: Path, name: str, ca: str, san: str = "") -> None:
    """name.key and name.pem, signed by ca.key/ca.pem."""
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=tmp)
    ext = tmp / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "1", "-out", f"{name}.pem", "-extfile", ext.name,
             cwd=tmp)


def _ca(tmp: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1", "-subj",
             f"/CN={name}", cwd=tmp)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pki")
    _ca(tmp, "ca")
    _issue(tmp, "server", "ca", san="IP:127.0.0.1")
    _issue(tmp, "client", "ca")
    _ca(tmp, "rogue-ca")
    _issue(tmp, "rogue", "rogue-ca")
    return tmp


def _credentials(pki: Path, client: str | None) -> grpc.ChannelCredentials:
    root = (pki / "ca.pem").read_bytes()
    if client is None:
        return grpc.ssl_channel_credentials(root)
    return grpc.ssl_channel_credentials(root, (pki / f"{client}.key").read_bytes(),
                                        (pki / f"{client}.pem").read_bytes())


def _capabilities(client: Client) -> str:
    try:
        client.stub.Capabilities(pb.CapabilitiesRequest(), timeout=5)
    except grpc.RpcError as exc:
        return exc.code().name
    return "OK"


# -- P4Runtime over TLS ---------------------------------------------------------------------
def test_p4runtime_over_tls_serves_only_clients_with_a_certificate_of_its_ca(pki):
    tls = ["--grpc-server-ssl", "--grpc-server-cert", str(pki / "server.pem"),
           "--grpc-server-key", str(pki / "server.key"), "--grpc-server-cacert",
           str(pki / "ca.pem"), "--grpc-server-with-client-auth"]
    with SwitchProcess(["--no-p4", "--", *tls]) as sw:
        good = Client(sw.addr, election=1, credentials=_credentials(pki, "client"))
        assert good.next("arbitration").status.code == code_pb2.OK
        assert _capabilities(good) == "OK"
        refused = [Client(sw.addr, election=None),  # plaintext
                   Client(sw.addr, election=None, credentials=_credentials(pki, None)),
                   Client(sw.addr, election=None, credentials=_credentials(pki, "rogue"))]
        assert [_capabilities(c) for c in refused] == ["UNAVAILABLE"] * 3
        for c in [good, *refused]:
            c.close()
        assert "beyond this machine" not in sw.stderr()


def test_a_grpc_server_bound_beyond_loopback_is_warned_about(tmp_path):
    port = loose_port()
    argv = [sys.executable, "-m", "p4switch.cli.switch", "--thrift-port", str(loose_port()),
            "--no-p4", "--", "--grpc-server-addr", f"0.0.0.0:{port}"]
    with (tmp_path / "stderr").open("w+") as err:
        proc = subprocess.Popen(argv, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                                stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_port(port, proc)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        err.seek(0)
        warnings = [line for line in err if "warning" in line]
    assert len(warnings) == 1 and f"0.0.0.0:{port} is reachable beyond this machine" in \
        warnings[0]


def test_no_warning_on_loopback_or_with_client_certificates(pki):
    loopback = parse_args(["--no-p4", "--", "--grpc-server-addr", "[::1]:9559"])
    assert exposure_warnings(loopback.grpc_addr, loopback.grpc_tls) == []
    tls = ["--grpc-server-ssl", "--grpc-server-cert", str(pki / "server.pem"),
           "--grpc-server-key", str(pki / "server.key"), "--grpc-server-cacert",
           str(pki / "ca.pem")]
    exposed = parse_args(["--no-p4", "--", *tls, "--grpc-server-addr", "0.0.0.0:9559"])
    assert len(exposure_warnings(exposed.grpc_addr, exposed.grpc_tls)) == 1  # TLS alone lets anyone in
    checked = parse_args(["--no-p4", "--", *tls, "--grpc-server-with-client-auth",
                          "--grpc-server-addr", "0.0.0.0:9559"])
    assert exposure_warnings(checked.grpc_addr, checked.grpc_tls) == []


# -- the runtime CLI ------------------------------------------------------------------------
class Line:
    """A raw connection to the runtime CLI: one line out, one JSON reply in."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.file = self.sock.makefile("rwb")

    def ask(self, line: bytes) -> dict | None:
        """The reply to `line`, None if the switch closed the connection."""
        self.file.write(line + b"\n")
        self.file.flush()
        return self.reply()

    def reply(self) -> dict | None:
        raw = self.file.readline()
        return json.loads(raw) if raw else None

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _cli(sw: SwitchProcess, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli", "--thrift-port",
                           str(sw.thrift_port), *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=30, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture(scope="module")
def open_switch():
    with SwitchProcess(["--no-p4"]) as sw:
        yield sw


@pytest.mark.parametrize("megabytes", [1, 8])
def test_an_over_long_line_is_refused_unparsed_and_the_connection_serves_on(open_switch,
                                                                             megabytes):
    line = Line(open_switch.thrift_port)
    try:
        reply = line.ask(b"table_add " + b"'x " * (megabytes * 1024 * 1024 // 3))
        assert reply == {"ok": False, "output": "command line longer than 65536 bytes: refused"}
        assert line.ask(b"show_ports")["ok"] is True
    finally:
        line.close()


def test_numeric_arguments_out_of_range_are_refused(open_switch):
    line = Line(open_switch.thrift_port)
    try:
        for command, says in [(f"set_queue_depth {BIG}", "must be in 0..2147483647"),
                              ("set_queue_depth -1", "must be in 0..2147483647"),
                              ("set_queue_rate nan", "queue rate must be in"),
                              ("set_queue_rate inf 1", "queue rate must be in"),
                              (f"queue_pause 1 0 {BIG}", "must be in 0..2147483647"),
                              (f"port_status {BIG}", "must be in 0..2147483647")]:
            reply = line.ask(command.encode())
            assert reply["ok"] is False and says in reply["output"], (command, reply)
        assert line.ask(b"set_queue_depth 64  # a comment")["ok"] is True
    finally:
        line.close()


def test_connections_beyond_the_limit_are_refused_and_a_freed_slot_serves_again(open_switch):
    held = [Line(open_switch.thrift_port) for _ in range(32)]
    try:
        for c in held:  # each one served: the server counted it
            assert c.ask(b"show_ports")["ok"] is True
        extra = Line(open_switch.thrift_port)
        reply = extra.reply()
        assert reply["ok"] is False and "too many runtime CLI connections" in reply["output"]
        assert extra.reply() is None
        extra.close()
        held.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the slot frees once the switch has seen the connection end
            again = Line(open_switch.thrift_port)
            reply = again.ask(b"show_ports")
            again.close()
            if reply is not None and reply["ok"]:
                break
            assert time.monotonic() < deadline, reply
    finally:
        for c in held:
            c.close()


@pytest.fixture(scope="module")
def secret_switch(tmp_path_factory):
    secret = tmp_path_factory.mktemp("secret") / "runtime.secret"
    secret.write_text(SECRET + "\n")
    with SwitchProcess(["--runtime-secret-file", str(secret), str(PROGRAM)]) as sw:
        yield sw, secret


def test_the_runtime_cli_needs_the_secret_first(secret_switch):
    sw, _ = secret_switch
    for first in (b"show_ports", b"auth wrong-secret", b"auth", b"auth " + SECRET.encode() + b"x"):
        line = Line(sw.thrift_port)
        reply = line.ask(first)
        assert reply["ok"] is False and "authentication failed" in reply["output"], first
        assert line.reply() is None  # and the connection is closed
        line.close()
    line = Line(sw.thrift_port)
    assert line.ask(b"auth " + SECRET.encode()) == {"ok": True, "output": "authenticated"}
    assert line.ask(b"show_ports")["ok"] is True
    line.close()


def test_a_connection_that_never_authenticates_is_closed(secret_switch):
    sw, _ = secret_switch
    line = Line(sw.thrift_port, timeout=20)
    start = time.monotonic()
    assert line.reply() is None
    assert time.monotonic() - start < 15
    line.close()


def test_p4switch_cli_sends_the_secret_and_the_interpreter_checks_ranges(secret_switch):
    sw, secret = secret_switch
    done = _cli(sw, "show_ports")
    assert done.returncode == 1 and "authentication failed" in done.stderr
    done = _cli(sw, "--secret-file", str(secret), "show_pipeline")
    assert done.returncode == 0 and done.stdout.strip() != "no program", done.stderr
    done = _cli(sw, "--secret-file", str(secret), "set_queue_depth", str(BIG))
    assert done.returncode == 1 and "must be in 0..2147483647" in done.stderr, done.stderr
