"""The runtime CLI renews a pipeline's copy of the state (Device.note_write) after a command
that may write the runtime's state, and only then: reads and the switch's own queue and port
commands leave it (a copy is O(entries), and experiments read queues every 50 ms)."""

from __future__ import annotations

from pathlib import Path

from p4switch.switch.device import Device, load_program
from p4switch.switch.runtime_server import RuntimeCommandServer, SwitchCommands
from p4switch.switch.tm import TrafficManager

PROGRAM = Path(__file__).resolve().parent / "programs" / "switch_test.p4"


def test_reads_and_queue_commands_leave_the_copy_writes_renew_it() -> None:
    device = Device(cpu_port=None, drop_port=511, priority_queues=1, port_up=lambda _p: True,
                    pipeline="python")
    device.install(load_program(PROGRAM))
    commands = SwitchCommands(TrafficManager(1), {1: "p1", 2: "p2"}, lambda _p: True,
                              device.now_us)
    server = RuntimeCommandServer(device, commands, 0)
    try:
        before = device.writes
        for line in ("table_dump TestIngress.fwd", "table_num_entries TestIngress.fwd",
                     "show_tables", "register_read TestIngress.scratch 0",
                     "counter_read TestIngress.rx_port_counter 1", "queue_stats 1",
                     "set_queue_depth 64 1",
                     "set_queue_rate 100 1", "port_status"):
            server.execute(line)
        assert device.writes == before
        assert server.execute("register_read TestIngress.scratch 0").endswith("= 0")
        server.execute("table_add TestIngress.fwd TestIngress.forward 1 => 2")
        assert device.writes == before + 1
        assert "TestIngress.forward" in server.execute("table_dump TestIngress.fwd")
        assert device.writes == before + 1
    finally:
        server.sock.close()
