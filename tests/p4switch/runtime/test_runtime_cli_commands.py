"""The simple_switch_CLI interpreter: syntax, effect on the state, BMv2's output and errors."""

import pytest

from p4switch.runtime import ActionCall, GroupRef, MeterConfig
from p4switch.runtime.cli_commands import CliInterpreter

INT32_MAX = (1 << 31) - 1


class Hooks:
    def __init__(self):
        self.calls = []

    def set_queue_depth(self, depth, port=None, prio=None):
        self.calls.append(("depth", depth, port, prio))

    def set_queue_rate(self, rate, port=None, prio=None):
        self.calls.append(("rate", rate, port, prio))

    def time_elapsed_us(self):
        return 1234


@pytest.fixture
def hooks():
    return Hooks()


@pytest.fixture
def cli(state, hooks):
    return CliInterpreter(state, hooks)


def ip(s):
    return int.from_bytes(bytes(int(x) for x in s.split(".")), "big")


def test_table_add_lpm_output_and_effect(cli, state):
    out = cli.execute("table_add MyIngress.ipv4_lpm MyIngress.forward 10.0.0.0/8 => 3")
    assert out.splitlines() == [
        "Adding entry to lpm match table MyIngress.ipv4_lpm",
        "match key:           LPM-0a:00:00:00/8",
        "action:              MyIngress.forward",
        "runtime data:        00:03",
        "Entry has been added with handle 0",
    ]
    assert state.table("ipv4_lpm").lookup((ip("10.9.9.9"),)).action == \
        ActionCall("MyIngress.forward", (3,))


def test_value_notations(cli, state):
    cli.execute("table_add dmac forward 00:11:22:33:44:55 => 0x1ff")
    cli.execute("table_add dmac forward 0x0a0b0c0d0e0f => 0b101")
    cli.execute("table_add dmac forward 1234 => 7")
    t = state.table("dmac")
    assert t.lookup((0x001122334455,)).action.args == (0x1FF,)
    assert t.lookup((0x0A0B0C0D0E0F,)).action.args == (5,)
    assert t.lookup((1234,)).action.args == (7,)
    # 2 bytes for a 9-bit parameter: 0xffff fits the bytes and is masked to 9 bits, as BMv2 does
    cli.execute("table_set_default dmac forward 0xffff")
    assert t.default_entry.action.args == (0x1FF,)


def test_ternary_range_priority_is_bmv2_lower_wins(cli, state):
    cli.execute("table_add acl forward 10.0.0.0&&&255.0.0.0 0&&&0 0->65535 => 1 20")
    cli.execute("table_add acl forward 10.1.0.0&&&255.255.0.0 6&&&0xff 80->90 => 2 10")
    t = state.table("acl")
    assert t.lookup((ip("10.1.1.1"), 6, 85)).action.args == (2,)  # priority 10 beats 20
    assert t.lookup((ip("10.1.1.1"), 17, 85)).action.args == (1,)
    entries = t.entries()
    assert entries[0].keys[1] is None and entries[0].keys[2] is None  # zero mask, full range
    assert [e.priority for e in entries] == [INT32_MAX - 20, INT32_MAX - 10]
    out = cli.execute("table_dump_entry acl 1")
    assert out.splitlines() == [
        "Dumping entry 0x1",
        "Match key:",
        "* hdr.ipv4.srcAddr    : TERNARY   0a010000 &&& ffff0000",
        "* hdr.ipv4.protocol   : TERNARY   06 &&& ff",
        "* hdr.tcp.dstPort     : RANGE     0050 -> 005a",
        "Priority: 10",
        "Action entry: MyIngress.forward - 0002",
    ]
    assert "could not extract a valid priority" in cli.execute(
        "table_add acl forward 1&&&1 6&&&0xff 1->2 => 2 high")
    # as in BMv2 the last word is taken as the priority before the parameters are counted
    assert cli.execute("table_add acl forward 1&&&1 6&&&0xff 1->2 => 2") == \
        "Error: Action MyIngress.forward needs 1 parameters"


def test_table_modify_delete_clear_num_entries(cli, state):
    cli.execute("table_add dmac forward 1 => 1")
    cli.execute("table_add dmac forward 2 => 2")
    assert cli.execute("table_num_entries dmac") == "2"
    out = cli.execute("table_modify dmac drop 1")  # "drop": the table's only *.drop
    assert out == "Modifying entry 1 for exact match table dmac"
    assert state.table("dmac").lookup((2,)).action == ActionCall("MyIngress.drop")
    assert cli.execute("table_delete dmac 0") == "Deleting entry 0 from dmac"
    assert cli.execute("table_num_entries dmac") == "1"
    assert "INVALID_HANDLE" in cli.execute("table_delete dmac 0")
    cli.execute("table_clear dmac")
    assert cli.execute("table_num_entries dmac") == "0"


def test_table_errors(cli):
    cli.execute("table_add dmac forward 1 => 1")
    assert not cli.failed
    out = cli.execute("table_add dmac forward 1 => 1")
    assert cli.failed and out.splitlines()[0] == "Adding entry to exact match table dmac"
    assert out.splitlines()[-1].startswith("Invalid table operation (DUPLICATE_ENTRY)")
    assert cli.execute("table_add nope forward 1 => 1") == "Error: Invalid table name (nope)"
    assert cli.execute("table_add dmac set_nhop 1 => 1 2") == \
        "Error: Table dmac has no action set_nhop"
    assert cli.execute("table_add dmac forward 1 => 1 2") == \
        "Error: Action MyIngress.forward needs 1 parameters"
    assert cli.execute("table_add dmac forward 1 2 => 1") == "Error: Table dmac needs 1 key fields"
    assert "Invalid match key: Error while parsing zz" in cli.execute(
        "table_add dmac forward zz => 1")
    assert "Invalid MAC address" in cli.execute("table_add dmac forward 1:2:3 => 1")
    assert "Invalid IPv4 address" in cli.execute(
        "table_add ipv4_lpm forward 10.0.0.300/8 => 1")
    assert "use '/' to separate" in cli.execute("table_add ipv4_lpm forward 10.0.0.0 => 1")
    assert "Parameter is too large" in cli.execute("table_add dmac forward 1 => 0x10000")
    assert "start is less than end" in cli.execute(
        "table_add acl forward 0&&&0 0&&&0 9->8 => 1 1")
    assert "DEFAULT_ACTION_IS_CONST" in cli.execute("table_set_default fixed drop")
    assert "IMMUTABLE_TABLE_ENTRIES" in cli.execute("table_add fixed forward 0x806 => 1")
    assert "Invalid table operation (ERROR): cannot use @defaultonly" in cli.execute(
        "table_add scoped only_default 0x800 =>")
    assert cli.execute("table_num_entries") == \
        "Error: Wrong number of args, expected 1 but got 0"
    assert cli.execute("no_such_command 1") == "*** Unknown syntax: no_such_command 1"
    assert cli.failed
    assert cli.execute("pvs_add vs 1") == "Error: unsupported: pvs_add (parser value sets)"
    assert cli.failed
    assert cli.execute("") == "" and cli.execute("# comment") == ""


def test_set_and_reset_default(cli, state):
    out = cli.execute("table_set_default dmac forward 5")
    assert out.splitlines() == ["Setting default action of dmac",
                                "action:              forward",
                                "runtime data:        00:05"]
    assert state.table("dmac").default_entry.action == ActionCall("MyIngress.forward", (5,))
    cli.execute("table_reset_default dmac")
    assert state.table("dmac").default_entry.action == ActionCall("MyIngress.drop")


def test_table_dump_and_lpm_default(cli):
    cli.execute("table_add ipv4_lpm forward 0.0.0.0/0 => 4")
    assert cli.execute("table_dump ipv4_lpm").splitlines() == [
        "==========",
        "TABLE ENTRIES",
        "**********",
        "Dumping entry 0x0",
        "Match key:",
        "* hdr.ipv4.dstAddr    : LPM       00000000/0",
        "Action entry: MyIngress.forward - 0004",
        "==========",
        "Dumping default entry",
        "Action entry: MyIngress.drop - ",
        "==========",
    ]


def test_action_profile_commands(cli, state):
    out = cli.execute("act_prof_create_member ecmp_selector set_nhop 00:00:00:00:00:0a 10")
    assert out == "Member has been created with handle 0"
    cli.execute("act_prof_create_member ecmp_selector set_nhop 00:00:00:00:00:0b 11")
    assert cli.execute("act_prof_create_group ecmp_selector") == \
        "Group has been created with handle 0"
    assert "Invalid table operation (EMPTY_GRP)" in cli.execute(
        "table_indirect_add_with_group ecmp 10.0.0.0/8 => 0")
    cli.execute("act_prof_add_member_to_group ecmp_selector 0 0")
    cli.execute("act_prof_add_member_to_group ecmp_selector 1 0")
    assert "MBR_ALREADY_IN_GRP" in cli.execute("act_prof_add_member_to_group ecmp_selector 1 0")
    out = cli.execute("table_indirect_add_with_group ecmp 10.0.0.0/8 => 0")
    assert out.splitlines()[-1] == "Entry has been added with handle 0"
    p = state.action_profile("ecmp_selector")
    entry = state.table("ecmp").lookup((ip("10.0.0.1"),))
    assert isinstance(entry.action, GroupRef)
    assert p.select(entry.action, 1).args == (0x0B, 11)
    assert "GRP_STILL_USED" in cli.execute("act_prof_delete_group ecmp_selector 0")
    cli.execute("act_prof_remove_member_from_group ecmp_selector 1 0")
    assert p.select(entry.action, 1).args == (0x0A, 10)
    assert "MBR_NOT_IN_GRP" in cli.execute("act_prof_remove_member_from_group ecmp_selector 1 0")
    cli.execute("act_prof_modify_member ecmp_selector set_nhop 0 => 00:00:00:00:00:0c 12")
    assert p.select(entry.action, 1).args == (0x0C, 12)
    assert cli.execute("act_prof_dump_group ecmp_selector 0").splitlines() == [
        "Dumping group 0", "Members: [0]"]
    assert cli.execute("act_prof_dump_member ecmp_selector 1").splitlines() == [
        "Dumping member 1", "Action entry: MyIngress.set_nhop - 00000000000b, 000b"]
    assert "INVALID_MBR_HANDLE" in cli.execute("act_prof_delete_member ecmp_selector 7")
    cli.execute("act_prof_delete_member ecmp_selector 1")
    assert list(p.members()) == [0]
    assert "has no action 'forward'" in cli.execute(
        "act_prof_create_member ecmp_selector forward 1")
    assert "without selector" in cli.execute("act_prof_create_group profile")
    cli.execute("act_prof_create_member profile forward 3")
    out = cli.execute("table_indirect_add indirect 0x800 => 0")
    assert out.splitlines()[-1] == "Entry has been added with handle 0"
    assert p.select(state.table("indirect").lookup((0x800,)).action, 0) is not None


def test_multicast_commands(cli, state):
    assert cli.execute("mc_mgrp_create 1") == "Creating multicast group 1"
    out = cli.execute("mc_node_create 5 3 1 2")
    assert out.splitlines() == ["Creating node with rid 5 , port map 1110 and lag map ",
                                "node was created with handle 0"]
    cli.execute("mc_node_create 6 4")
    assert cli.execute("mc_node_associate 1 1") == "Associating node 1 to multicast group 1"
    cli.execute("mc_node_associate 1 0")
    assert state.pre.replicas(1) == [(4, 6), (1, 5), (2, 5), (3, 5)]
    assert cli.execute("mc_dump").splitlines() == [
        "==========", "MC ENTRIES", "**********", "mgrp(1)",
        "  -> (L1h=1, rid=6) -> (ports=[4], lags=[])",
        "  -> (L1h=0, rid=5) -> (ports=[1, 2, 3], lags=[])",
        "==========", "LAGS", "==========",
    ]
    cli.execute("mc_node_update 0 7")
    cli.execute("mc_node_dissociate 1 1")
    assert state.pre.replicas(1) == [(7, 5)]
    assert cli.execute("mc_node_associate 9 1").splitlines() == [
        "Associating node 1 to multicast group 9", "Invalid PRE operation (INVALID_MGRP_HANDLE)"]
    assert cli.execute("mc_node_destroy 9") == \
        "Destroying node 9\nInvalid PRE operation (INVALID_L1_HANDLE)"
    assert "duplicate port number" in cli.execute("mc_node_create 1 2 2")
    assert "'512' is not a valid port number" in cli.execute("mc_node_create 1 512")
    assert cli.execute("mc_node_create 70000 1").splitlines()[-1] == \
        "Invalid PRE operation (ERROR)"
    assert "unsupported: LAG" in cli.execute("mc_node_create 1 2 | 1")
    cli.execute("mc_node_destroy 0")
    assert state.pre.replicas(1) == []


def test_mirroring_commands(cli, state):
    cli.execute("mirroring_add 5 3")
    assert state.pre.clone_targets(5) == [(3, 0)]
    assert cli.execute("mirroring_get 5") == "MirroringSessionConfig(port=3, mgid=None)"
    cli.execute("mc_mgrp_create 2")
    cli.execute("mc_node_create 0 1 2")
    cli.execute("mc_node_associate 2 0")
    cli.execute("mirroring_add_mc 6 2")
    assert state.pre.clone_targets(6) == [(1, 0), (2, 0)]
    cli.execute("mirroring_delete 5")
    assert state.pre.clone_session(5) is None
    assert cli.execute("mirroring_delete 5") == "Invalid mirroring operation (SESSION_NOT_FOUND)"


def test_counter_register_meter_commands(cli, state):
    state.counter("port_counter").count(2, 100)
    assert cli.execute("counter_read port_counter 2") == "port_counter[2]= (100 bytes, 1 packets)"
    assert cli.execute("counter_write port_counter 1 5 500") == "port_counter[1] has been updated"
    assert state.counter("port_counter").read(1) == (5, 500)
    assert cli.execute("counter_read port_counter 9") == \
        "Invalid counter operation (INVALID_INDEX)"
    cli.execute("counter_reset port_counter")
    assert state.counter("port_counter").read(2) == (0, 0)
    # direct counter: index = entry handle
    cli.execute("table_add ipv4_lpm forward 10.0.0.0/8 => 3")
    state.table("ipv4_lpm").by_handle(0).direct_counter[:] = [2, 128]
    assert cli.execute("counter_read lpm_counter 0").splitlines() == [
        "this is the direct counter for table MyIngress.ipv4_lpm",
        "lpm_counter[0]= (128 bytes, 2 packets)"]
    cli.execute("counter_reset MyIngress.lpm_counter")
    assert state.table("ipv4_lpm").by_handle(0).direct_counter == [0, 0]

    assert cli.execute("register_write flow_reg 2 0x1234") == ""
    assert cli.execute("register_read flow_reg 2") == "flow_reg[2]= 4660"
    assert cli.execute("register_read flow_reg") == "flow_reg= 0, 0, 4660, 0, 0, 0, 0, 0"
    assert cli.execute("register_read flow_reg 8") == "Invalid register operation (INVALID_INDEX)"
    cli.execute("register_write signed_reg 1 0xfe")
    assert cli.execute("register_read signed_reg 1") == "signed_reg[1]= -2"  # int<8>
    cli.execute("register_reset flow_reg")
    assert state.register("flow_reg").read(2) == 0

    assert cli.execute("meter_set_rates port_meter 1 0.001:2 0.002:4") == ""
    assert state.meter("port_meter").config(1) == MeterConfig(1000, 2, 2000, 4)
    assert cli.execute("meter_get_rates port_meter 1").splitlines() == [
        "0: info rate = 0.001, burst size = 2", "1: info rate = 0.002, burst size = 4"]
    assert "INVALID_INFO_RATE_VALUE" in cli.execute("meter_set_rates port_meter 1 0.5:2 0.1:4")
    assert "expected 2 but got 1" in cli.execute("meter_set_rates port_meter 1 0.5:2")
    assert "INVALID_INFO_RATE_VALUE" in cli.execute("meter_set_rates port_meter 1 nan:2 inf:4")
    assert "Invalid meter operation (INVALID_INDEX)" in cli.execute(
        "meter_get_rates port_meter 4")
    # direct meter: index = entry handle
    cli.execute("table_add acl drop 0&&&0 6&&&0xff 0->65535 => 1")
    cli.execute("meter_set_rates acl_meter 0 1:100 2:200")
    assert state.table("acl").by_handle(0).meter_config == MeterConfig(1_000_000, 100,
                                                                       2_000_000, 200)


def test_queue_commands_go_to_hooks(cli, hooks, state):
    cli.execute("set_queue_depth 64")
    cli.execute("set_queue_depth 16 2")
    cli.execute("set_queue_rate 1000 3 1")
    assert hooks.calls == [("depth", 64, None, None), ("depth", 16, 2, None),
                           ("rate", 1000, 3, 1)]
    assert cli.execute("get_time_elapsed") == "1234"
    assert "Bad format for nb_pkts" in cli.execute("set_queue_depth x")
    bare = CliInterpreter(state)
    assert "not available here" in bare.execute("set_queue_rate 100")


def test_reset_state_and_help(cli, state):
    cli.execute("table_add dmac forward 1 => 1")
    cli.execute("reset_state")
    assert len(state.table("dmac")) == 0
    assert "table_add" in cli.execute("help")
