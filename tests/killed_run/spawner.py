"""A process that starts children the ways the lab does, from a worker thread that then ends,
prints their pids as JSON and waits to be killed: what the parent-death tests kill.

usage: spawner.py plain            -> `sleep` through `spawn` (no root needed)
       spawner.py host NAME        -> a Mininet host (FabricHost) named NAME, and in it a
                                      `sleep` through its `popen` and a traffic agent
                                      (`traffic.worker`, through `PidHost`, as `fabric-lab
                                      traffic` reaches a host)
"""

import json
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from topos.mininet.procs import spawn


def main() -> int:
    pids: dict[str, int] = {}
    host = None
    if sys.argv[1] == "host":
        from topos.mininet.nodes import FabricHost
        from topos.model import Nic

        nic = Nic(name=sys.argv[2], ip="10.255.0.1", mac="02:00:00:00:00:01")
        host = FabricHost(sys.argv[2], nic=nic, peers=[])
        pids["shell"] = host.pid

    def worker() -> None:
        if host is None:
            pids["sleep"] = spawn(["sleep", "600"]).pid
            return
        from traffic.agent import Agent
        from traffic.hosts import PidHost

        pids["sleep"] = host.popen(["sleep", "600"]).pid
        agent = Agent(PidHost(host.name, host.pid, "10.255.0.1", "lo"))
        pids["agent"] = agent.proc.pid

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()  # the thread that asked for the children has ended
    print(json.dumps(pids), flush=True)
    signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
