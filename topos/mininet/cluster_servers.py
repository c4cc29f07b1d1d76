"""The servers of a fabric spread over several machines, and running things on them.

`LocalServer` is the machine the lab runs on (Mininet's `localhost`). `SshServer` is another one,
reached as root over one ssh connection (a ControlMaster) that every remote node shell, command
and port forward of the run shares; tunnels open their own connections (ssh cannot multiplex
`-w`). A process started on another server through ssh is a `RemotePopen`: its remote pid is
written to the run's directory on that server, so signals reach the process itself (ssh does not
forward them) and `sweep` can stop whatever is left at the end. The sweep runs this module on
the server (`python -m topos.mininet.cluster_servers sweep DIR`), which is why every server needs
the same checkout and `make setup`.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from topos.errors import FabricLabError
from topos.mininet.procs import spawn, stop_pid
from topos.mininet.runstate import running

REMOTE_ENV = ("PYTHONPATH",)  # variables a remote process gets from the caller's `env`
SCRIPT = "echo $$ $(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20) > {pidfile}; {cd}exec {cmd}"


class ClusterError(FabricLabError, RuntimeError):
    """A server that cannot be reached or used."""


class LocalServer:
    """This machine: commands run directly."""

    local = True

    def __init__(self, name: str = "localhost", ip: str = "127.0.0.1"):
        self.name, self.ip = name, ip

    def run(self, argv: Sequence[str], input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(list(argv), input=input, capture_output=True, text=True,
                              check=False)
        if check and done.returncode != 0:
            raise ClusterError(f"{self.name}: {shlex.join(argv)}: {done.stderr.strip()}")
        return done

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """A process on this machine, ending with us (`topos.mininet.procs.spawn`)."""
        return spawn(list(argv), **kwargs)

    def __repr__(self) -> str:
        return f"LocalServer({self.name})"


class SshServer:
    """Another machine, reached as `user@ip` over a shared ssh connection."""

    local = False

    def __init__(self, name: str, ip: str, run_dir: str, control_dir: Path, *,
                 user: str = "root", ssh_config: Path | None = None,
                 connect_timeout: float = 10.0):
        self.name, self.ip, self.user = name, ip, user
        self.run_dir = run_dir  # on the server: pid files of the processes started there
        self.control_path = str(control_dir / f"{name}.sock")
        self.ssh_config = ssh_config
        self.connect_timeout = connect_timeout
        self.master: subprocess.Popen | None = None
        self._count = 0

    @property
    def dest(self) -> str:
        return f"{self.user}@{self.ip}"

    def ssh_options(self) -> list[str]:
        """Options of every ssh this run starts (config file, no password prompts)."""
        opts = ["-F", str(self.ssh_config)] if self.ssh_config else []
        return [*opts, "-o", "BatchMode=yes", "-o",
                f"ConnectTimeout={max(1, int(self.connect_timeout))}"]

    def ssh(self, *extra: str) -> list[str]:
        """`ssh ... dest` through the shared connection."""
        return ["ssh", *self.ssh_options(), "-o", f"ControlPath={self.control_path}",
                "-o", "ControlMaster=no", *extra, self.dest]

    # ---- the shared connection ----------------------------------------------------------
    def connect(self) -> None:
        """Open the shared connection; readiness = `ssh -O check` succeeds."""
        argv = ["ssh", *self.ssh_options(), "-M", "-N", "-o", f"ControlPath={self.control_path}",
                "-o", "ControlPersist=no", "-o", "ServerAliveInterval=5", self.dest]
        self.master = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True)
        deadline = time.monotonic() + self.connect_timeout + 5
        check = ["ssh", *self.ssh_options(), "-o", f"ControlPath={self.control_path}",
                 "-O", "check", self.dest]
        while subprocess.run(check, stdin=subprocess.DEVNULL, capture_output=True,
                             check=False).returncode != 0:
            if self.master.poll() is not None:
                assert self.master.stderr is not None  # started with stderr=PIPE
                err = self.master.stderr.read().decode(errors="replace").strip()
                self.master = None
                raise ClusterError(f"cannot ssh to {self.dest} ({self.name}): "
                                   f"{err or 'ssh exited'}; see docs/cluster.md")
            if time.monotonic() > deadline:
                self.close()
                raise ClusterError(f"ssh to {self.dest} ({self.name}) not ready after "
                                   f"{self.connect_timeout:g} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.master.wait(timeout=0.05)
        self.run(["mkdir", "-p", self.run_dir])

    def forward(self, ports: Sequence[tuple[int, str, int]]) -> None:
        """Listen on 127.0.0.1:LOCAL here and connect to HOST:REMOTE from the server, for each
        (LOCAL, HOST, REMOTE); the listeners belong to the shared connection."""
        if not ports:
            return
        argv = ["ssh", *self.ssh_options(), "-o", f"ControlPath={self.control_path}",
                "-O", "forward"]
        for local, host, remote in ports:
            argv += ["-L", f"127.0.0.1:{local}:{host}:{remote}"]
        done = subprocess.run([*argv, self.dest], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise ClusterError(f"{self.name}: forwarding management ports failed: "
                               f"{done.stderr.strip()}")

    def close(self) -> None:
        """End the shared connection (and with it every session and forward riding on it)."""
        if self.master is None:
            return
        subprocess.run(["ssh", *self.ssh_options(), "-o", f"ControlPath={self.control_path}",
                        "-O", "exit", self.dest], stdin=subprocess.DEVNULL, capture_output=True,
                       check=False)
        try:
            self.master.wait(5)
        except subprocess.TimeoutExpired:
            self.master.kill()
            self.master.wait()
        self.master = None

    # ---- commands -----------------------------------------------------------------------
    def run(self, argv: Sequence[str], input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run a root-namespace command on the server and wait for it."""
        done = subprocess.run([*self.ssh(), shlex.join(argv)], input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise ClusterError(f"{self.name}: {shlex.join(argv)}: {done.stderr.strip()}")
        return done

    def popen(self, argv: Sequence[str], *, cwd: str | None = None,
              env: Mapping[str, str] | None = None, tty: bool = False,
              **kwargs: Any) -> RemotePopen:
        """Start `argv` on the server (root namespace unless argv enters one with mnexec).
        `cwd` and the `REMOTE_ENV` variables of `env` apply there; with `tty` the process ends
        when this ssh session does (a hard-killed run cannot leave it behind)."""
        self._count += 1
        pidfile = f"{self.run_dir}/{self._count}.pid"
        sets = [f"{k}={env[k]}" for k in REMOTE_ENV if env and k in env]
        cmd = shlex.join(["env", *sets, *argv] if sets else list(argv))
        script = SCRIPT.format(pidfile=shlex.quote(pidfile), cmd=cmd,
                               cd=f"cd {shlex.quote(cwd)} && " if cwd else "")
        kwargs.setdefault("stdin", subprocess.DEVNULL)  # never the terminal's: ssh would eat it
        ssh = self.ssh("-tt") if tty else self.ssh()
        return RemotePopen([*ssh, shlex.join(["sh", "-c", script])], server=self,
                           pidfile=pidfile, **kwargs)

    def signal_pidfile(self, pidfile: str, sig: int) -> None:
        """Send `sig` to the process recorded in `pidfile` (waiting briefly for the file)."""
        # the file appears as the process starts; a recycled pid has another start time
        script = (f"f={shlex.quote(pidfile)}; i=0; while [ ! -s $f ] && [ $i -lt 100 ]; "
                  f"do sleep 0.02; i=$((i+1)); done; read p t < $f && "
                  f"[ \"$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f20)\" = \"$t\" ] && "
                  f"kill -{int(sig)} $p")
        self.run(["sh", "-c", script], check=False)

    def sweep(self, interfaces: Sequence[str] = (), timeout: float = 5.0,
              final: bool = True) -> str:
        """Stop every process this run started on the server, wait for `interfaces` to go,
        and (`final`) remove the run's directory there; returns what it did."""
        argv = [sys.executable, "-m", "topos.mininet.cluster_servers", "sweep", "--timeout",
                str(timeout), *([] if final else ["--keep"]), self.run_dir, *interfaces]
        done = self.run(argv, check=False)
        if done.returncode != 0:
            print(f"fabric-lab: warning: cleaning up on {self.name} failed: "
                  f"{done.stderr.strip()}", file=sys.stderr)
        return done.stdout.strip()

    def __repr__(self) -> str:
        return f"SshServer({self.name}, {self.dest})"


class RemotePopen(subprocess.Popen):
    """The local ssh client of a process on another server; signals go to the remote process
    (its pid file), and the client ends when the remote process does."""

    def __init__(self, argv: list[str], *, server: SshServer, pidfile: str, **kwargs: Any):
        self.server, self.pidfile = server, pidfile
        kwargs.setdefault("start_new_session", True)  # Ctrl-C reaches us, not the ssh clients
        super().__init__(argv, **kwargs)

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            self.server.signal_pidfile(self.pidfile, sig)

    def stop(self, timeout: float) -> int:
        """SIGTERM, SIGKILL after `timeout`, and the ssh client is gone too."""
        if self.poll() is not None:
            return self.returncode
        self.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.send_signal(signal.SIGKILL)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            super().send_signal(signal.SIGKILL)  # the connection itself hangs
            return self.wait()


def _sweep(directory: Path, interfaces: list[str], timeout: float,
           keep: bool = False) -> list[str]:
    """On a server: stop the recorded processes still alive, wait for the interfaces."""
    done = []
    for pidfile in sorted(directory.glob("*.pid")) if directory.is_dir() else []:
        fields = pidfile.read_text().split()
        if len(fields) == 2 and running(int(fields[0]), int(fields[1])):
            done.append(f"stopped pid {fields[0]} ({stop_pid(int(fields[0]), timeout)})")
    deadline = time.monotonic() + timeout
    left = [i for i in interfaces if Path("/sys/class/net", i).exists()]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel removes a veth of a deleted namespace a little later
        left = [i for i in left if Path("/sys/class/net", i).exists()]
    for intf in left:  # still in the root namespace: a tunnel end nobody deleted
        subprocess.run(["ip", "link", "del", "dev", intf], capture_output=True, check=False)
        done.append(f"removed interface {intf}")
    if directory.is_dir() and not keep:
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()
        with contextlib.suppress(OSError):
            directory.parent.rmdir()  # only when no other run uses it
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m topos.mininet.cluster_servers")
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("sweep", help="stop what a cluster run left on this server")
    sweep.add_argument("directory", type=Path)
    sweep.add_argument("interfaces", nargs="*")
    sweep.add_argument("--timeout", type=float, default=5.0)
    sweep.add_argument("--keep", action="store_true", help="keep the run's directory")
    args = parser.parse_args(argv)
    for line in _sweep(args.directory, args.interfaces, args.timeout, args.keep):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
