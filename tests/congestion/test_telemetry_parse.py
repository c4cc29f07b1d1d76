"""Runtime-CLI output of both targets, read into telemetry values."""

from __future__ import annotations

from experiments.framework.telemetry import _commands, parse_cli_values, telemetry_cell


def test_p4switch_and_bmv2_outputs_parse_alike() -> None:
    p4switch = ("FabricEgress.telemetry.queue_depth_max[11]= 17\n"
                "FabricEgress.ecn.ecn_marked_counter[1]= (4328 bytes, 4 packets)\n")
    bmv2 = ("RuntimeCmd: FabricEgress.telemetry.queue_depth_max[11]= 17\n"
            "RuntimeCmd: FabricEgress.ecn.ecn_marked_counter[1]=  "
            "BmCounterValue(packets=4, bytes=4328)\nRuntimeCmd: \n")
    want = {"FabricEgress.telemetry.queue_depth_max[11]": 17,
            "FabricEgress.ecn.ecn_marked_counter[1]": 4}
    assert parse_cli_values(p4switch) == want
    assert parse_cli_values(bmv2) == want


def test_one_batch_reads_then_resets() -> None:
    lines = _commands([(1, 3), (5, 3)])
    assert telemetry_cell(1, 3) == 11 and telemetry_cell(5, 3) == 43
    reads = [line for line in lines if not line.startswith("register_write")]
    assert lines[:len(reads)] == reads  # every read before any reset
    assert len(reads) == 2 * 8
    assert lines[len(reads):] == [
        "register_write FabricEgress.telemetry.queue_depth_max 11 0",
        "register_write FabricEgress.telemetry.queue_delay_max 11 0",
        "register_write FabricEgress.telemetry.queue_depth_max 43 0",
        "register_write FabricEgress.telemetry.queue_delay_max 43 0"]
