"""The readiness probe leaves no TIME_WAIT behind: the ephemeral port it connected from can be
bound by a switch starting right after (planned ports may lie in the ephemeral range)."""

from __future__ import annotations

import socket

from topos.mininet.procs import accepts


def test_probe_frees_its_source_port_at_once() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert accepts(server.getsockname()[1])
        conn, (_, probe_port) = server.accept()
        conn.close()
        with socket.socket() as switch:  # as gRPC binds: SO_REUSEADDR, then listen
            switch.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            switch.bind(("127.0.0.1", probe_port))
            switch.listen()


def test_nothing_listening_is_not_ready() -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))  # a port bound but not listening
        assert not accepts(placeholder.getsockname()[1])
