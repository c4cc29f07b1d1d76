"""`fabric-lab up FABRIC`: build the fabric in Mininet, route it, then hand over.

Stages, each timed: build the model, start Mininet (hosts, links, one switch process per switch,
each probed until its gRPC port accepts) while the P4 program compiles for the target, connect
the controller to every switch, and program them (pipeline + routes). Then one of:
- the Mininet CLI (default), with the controller rerouting when a link goes down or the link
  probes find it dropping; `link_fail A B`, `link_restore A B`, `link_drop A B PERCENT`,
  `switch_fail S`, `links` and `events` fail and show links by name; `lb ecmp|flowlet|dlb`
  switches the load-balancing mode (so does `fabric-lab lb` from another terminal) and
  `traffic SRC DST` sends RoCEv2 queue pairs between two NICs and reports what arrived;
- `--pingall`: every NIC pings every other once; exit 0 only when nothing was lost;
- `--run CMD`: run CMD (split like a shell would, not run by one) against the running fabric;
  its environment has FABRIC_LAB_FABRIC = the fabric model as JSON; the controller disconnects
  first so CMD can connect its own. Exits with CMD's status.
Any exit path (error, Ctrl-C, SIGTERM) takes the network down.
With --servers the fabric spreads over several machines (docs/cluster.md), taken down on each.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import targets
from controller.checks import pingall
from controller.fabric import FabricController, ProgrammingError
from controller.lb import LbError, LoadBalancing
from controller.p4rt import P4RuntimeError
from controller.pipeline import Pipeline, PipelineError, build_pipeline
from controller.queues import RuntimeCliError
from fabric_lab.arguments import FLOWLET_GAP_US, SWITCH_PROCESSES, dir_problem, number
from fabric_lab.commands.controller import add_program_args, apply_queue_args, load_fabric
from fabric_lab.web_options import add_web_args, check_web_port
from targets import Target
from topos.errors import FabricLabError, InputError
from topos.model import FabricSpec

LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")  # p4switch's and BMv2's -L

if TYPE_CHECKING:
    from experiments.framework.session import FabricSession, Setup
    from topos.mininet.cluster import ClusterOptions


class StageTimer:
    """Times named stages and prints each as it ends."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.stages: list[tuple[str, float]] = []
        self.out = out
        self.started = time.monotonic()

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.record(name, time.monotonic() - started)

    def record(self, name: str, took: float) -> None:
        self.stages.append((name, took))
        print(f"  {name:<32}{took:7.2f} s", file=self.out, flush=True)

    @property
    def total(self) -> float:
        """Wall time since the timer was made (stages may overlap)."""
        return time.monotonic() - self.started


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "up", help="bring a fabric up in Mininet, route it, and open the CLI",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("fabric", metavar="FABRIC", help="fabric name or fabric JSON file")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters, e.g. --scale segments=3")
    parser.add_argument("--target", default="auto", choices=targets.CHOICES,
                        help="switch target (default: auto = p4switch; bmv2 only when asked for)")
    parser.add_argument("--switch-processes", type=number(SWITCH_PROCESSES), metavar="N",
                        help="p4switch: serve all switches from N processes (e.g. one per core) "
                             "instead of one process each; a packet crossing switches of "
                             "one process is forwarded by each in one wake-up")
    add_program_args(parser)
    parser.add_argument("--flowlet-gap-us", type=number(FLOWLET_GAP_US), metavar="US",
                        help="flowlet gap in µs (with --program p4src/flowlet.p4)")
    parser.add_argument("--pcap", type=Path, metavar="DIR",
                        help="capture every switch port into DIR (made if missing): "
                             "<iface>_in.pcap and <iface>_out.pcap, e.g. leaf0-eth1_in.pcap")
    parser.add_argument("--log-dir", type=Path, metavar="DIR",
                        help="switch logs into DIR, one <switch>.log each (switches<N>.log per "
                             "process with --switch-processes)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, metavar="LEVEL",
                        help="switch log level (" + ", ".join(LOG_LEVELS) + "): trace logs "
                             "every packet and table hit; both p4switch and BMv2")
    add_web_args(parser, "with the CLI: also serve the web view (--web-port, --web-host); "
                         "open the URL it prints, with its token")
    add_cluster_args(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--pingall", action="store_true",
                      help="ping all NIC pairs, print the loss, tear down")
    what.add_argument("--run", metavar="CMD", help="run CMD against the fabric, then tear down")
    parser.set_defaults(func=run)


def add_cluster_args(parser: argparse.ArgumentParser, network: bool = True) -> None:
    """--servers and its companions (docs/cluster.md), shared by `up`, `run` and `show`
    (`network=False`: placement only)."""
    group = parser.add_argument_group("several servers (docs/cluster.md)")
    group.add_argument("--servers", metavar="LIST",
                       help="spread the fabric over these servers, e.g. localhost,host2 "
                            "(root ssh to each, same checkout and `make setup` on each)")
    group.add_argument("--placement", default="fabric", choices=("fabric", "switch"),
                       help="fabric: whole rails/segments per server (fewest tunnels, default); "
                            "switch: switch by switch")
    if network:
        group.add_argument("--tunnel", default="ssh", choices=("ssh", "gre"),
                           help="links between servers: ssh Ethernet tunnels (default) or "
                                "gretap (needs ip_gre)")
        group.add_argument("--ssh-config", type=Path, metavar="FILE",
                           help="ssh_config file for reaching the servers")


def cluster_options(args: argparse.Namespace):
    """ClusterOptions from the command line, None for this machine alone; ValueError when bad."""
    if not args.servers:
        return None
    from topos.mininet.cluster import ClusterOptions

    options = ClusterOptions(args.servers, placement=args.placement, tunnel=args.tunnel,
                             ssh_config=args.ssh_config)
    return None if options.servers == ("localhost",) else options


def run(args: argparse.Namespace) -> int:
    from experiments.framework.session import FabricSession
    from topos.mininet import SwitchStartError
    from topos.mininet.cluster_servers import ClusterError

    timer = StageTimer()
    print(f"fabric-lab up {args.fabric}:", flush=True)
    try:
        spec, target, cluster, pipeline = _checked(args, timer)
    except FabricLabError:
        raise  # fabric_lab.cli reports it with its class's exit status
    except (ValueError, RuntimeError) as err:
        print(f"fabric-lab up: {err}", file=sys.stderr)
        return 2
    setup: dict[str, Setup] = {
        "load-balancing knobs": lambda s: LoadBalancing(s.connected()).configure(
            args.flowlet_gap_us)}
    if args.queue_depth is not None or args.queue_rate is not None:
        setup["queues"] = lambda s: apply_queue_args(args, spec, target)
    try:
        session = FabricSession(spec, program=pipeline, target=target, log_dir=args.log_dir,
                                pcap_dir=args.pcap, cluster=cluster, setup=setup, timer=timer,
                                controller={"election_id": (0, args.election_id),
                                            "hash_seed": args.hash_seed})
    except ValueError as err:
        print(f"fabric-lab up: {err}", file=sys.stderr)
        return 2
    if cluster is not None:  # options that leave this machine (`cluster_options`)
        from topos.mininet.cluster import ClusterNetwork

        assert isinstance(session.net, ClusterNetwork)
        print(session.net.placement.describe(spec).split("\n", 1)[0], flush=True)
    try:
        with session:
            writes = sum(r.writes for r in session.reports)
            print(f"  {'total':<32}{timer.total:7.2f} s  ({len(spec.switches)} switches, "
                  f"{len(spec.host_nics())} NICs, {writes} entities written)", flush=True)
            try:
                return _hand_over(args, session)
            except KeyboardInterrupt:
                print("fabric-lab up: interrupted; taking the fabric down", file=sys.stderr)
                return 130
    except (PipelineError, LbError) as err:
        print(f"fabric-lab up: {err}", file=sys.stderr)
        return 2
    except (SwitchStartError, ProgrammingError, P4RuntimeError, RuntimeCliError,
            ClusterError) as err:
        print(f"fabric-lab up: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fabric-lab up: interrupted; taking the fabric down", file=sys.stderr)
        return 130


def _checked(args: argparse.Namespace, timer: StageTimer) -> tuple[FabricSpec, Target,
                                                                  ClusterOptions | None,
                                                                  Pipeline]:
    """Everything `up` is given, checked before anything starts: the fabric (every field), the
    target installed, the directories, and the program compiled by the target's compiler."""
    with timer.stage("fabric model"):
        spec = load_fabric(args.fabric, args.scale)
        problems = [p for p in (dir_problem(args.pcap, "--pcap") if args.pcap else None,
                                dir_problem(args.log_dir, "--log-dir") if args.log_dir else None)
                    if p]
        if problems:
            raise InputError("; ".join(problems))
        check_web_port(args)
        target = targets.get_target(args.target).ensure_available().with_log_level(
            args.log_level).sharing_processes(args.switch_processes)
        cluster = cluster_options(args)
    with timer.stage(f"compile ({target.name})"):
        pipeline = build_pipeline(args.program, target)
    if args.pcap is not None:
        args.pcap = args.pcap.resolve()
        try:
            args.pcap.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"--pcap {args.pcap}: {err.strerror or err}") from None
    return spec, target, cluster, pipeline


def _hand_over(args: argparse.Namespace, session: FabricSession) -> int:
    spec, net = session.spec, session.net

    def popen(nic: str, argv: list[str]) -> subprocess.Popen:
        return net.host(nic).popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    if args.pingall:
        started = time.monotonic()
        result = pingall(spec, popen)
        print(f"{result} ({time.monotonic() - started:.1f} s)", flush=True)
        return 0 if not result.lost else 1
    if args.run:
        session.disconnect()  # the fabric stays routed; CMD may connect a controller of its own
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="fabric-") as model:
            model.write(spec.to_json())
            model.flush()
            env = {**os.environ, "FABRIC_LAB_FABRIC": model.name}
            try:
                return subprocess.run(shlex.split(args.run), env=env, check=False).returncode
            except OSError as err:
                print(f"fabric-lab up: cannot run {args.run!r}: {err.strerror}", file=sys.stderr)
                return 127
    from fabric_lab.commands.lb import LbServer
    from topos.mininet.cli import FabricCLI

    # reroute on port changes and on links the probes find dropping; `link_fail`, `link_drop`,
    # `links` and `events` in the CLI; `lb` there or `fabric-lab lb` elsewhere switch the mode
    session.start_loops(reconverge=True, probes=True)
    ctl, rc, prober = session.connected(), session.rc, session.prober
    assert rc is not None and prober is not None
    lb = LbServer(ctl).start()
    session.on_stop(lb.stop)
    with _web_view(args, spec, ctl, rc, prober, lb.handle):
        FabricCLI(net.net, spec, events=lambda: [str(e) for e in rc.events], lb=lb.handle)
    return 0


def _web_view(args: argparse.Namespace, spec, ctl: FabricController, rc, prober, lb):
    """The web view (`--web`) for as long as the CLI runs; nothing without --web."""
    if not args.web:
        return contextlib.nullcontext()
    from fabric_lab.web import up_view

    return up_view(spec, ctl, rc, prober, lb=lb, port=args.web_port, host=args.web_host)
