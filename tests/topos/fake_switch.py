"""A stand-in switch for the node tests: takes a switch's argv and behaves like one for readiness.

It checks every `-i PORT@INTF` interface exists, then listens on the `--grpc-server-addr` port
and accepts connections until SIGTERM (exit 0). `--mode` changes that: `stubborn` ignores
SIGTERM, `crash` exits with status 3 at once, `silent` never listens.
"""

import argparse
import os
import signal
import socket
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="normal")
    parser.add_argument("-i", dest="ports", action="append", default=[])
    parser.add_argument("--device-id", type=int, required=True)
    parser.add_argument("--thrift-port", type=int, required=True)
    parser.add_argument("--cpu-port", type=int)
    parser.add_argument("--no-p4", action="store_true", required=True)
    parser.add_argument("--grpc-server-addr", required=True)
    argv = [a for a in sys.argv[1:] if a != "--"]
    args = parser.parse_args(argv)
    print("argv:", " ".join(sys.argv[1:]), flush=True)
    missing = [p for p in args.ports if not os.path.exists(f"/sys/class/net/{p.split('@')[1]}")]
    if missing:
        print(f"missing interfaces: {missing}", flush=True)
        return 4
    if args.mode == "crash":
        print("crashing on purpose", flush=True)
        return 3
    if args.mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.mode == "silent":
        signal.pause()
        return 0
    host, port = args.grpc_server_addr.rsplit(":", 1)
    server = socket.create_server((host, int(port)))
    while True:
        conn, _ = server.accept()
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
