"""Bring a fabric up with the stand-in switch and wait: the process the clean-up tests kill.

usage: run_fabric.py FABRIC RUN_DIR PORT_SHIFT   (prints READY once up; exits on SIGTERM)
"""

import dataclasses
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from targets import P4SWITCH
from topos import build_fabric
from topos.mininet import FabricNetwork

FAKE = dataclasses.replace(P4SWITCH, name="fake", requires=(),
                           command=(sys.executable, str(Path(__file__).with_name("fake_switch.py"))))


def main() -> int:
    fabric, run_dir, shift = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    spec = build_fabric(fabric)
    for sw in spec.switches:
        sw.grpc_port += shift
        sw.thrift_port += shift
    with FabricNetwork(spec, FAKE, run_dir=run_dir, log_dir=run_dir / "logs"):
        print("READY", flush=True)
        signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
