-- Wireshark/tshark dissectors for AI Fabric Lab's own headers (p4src/include/headers.p4,
-- traffic/headers.py):
--   fabtag  the DLB reorder tag, 8 bytes after IPv4, IP protocol 253
--   fabint  in-band telemetry: a 4-byte shim (IP protocol 254, or after the tag) and
--           hop_count records of 24 bytes, the newest first
-- Whatever follows (UDP, then RoCEv2 on port 4791) is handed back to Wireshark.
-- Installed by scripts/provision.sh (`make setup`); or load it by hand:
--   tshark -X lua_script:tools/wireshark/fabric_lab.lua -r capture.pcap -V

local ip_proto = DissectorTable.get("ip.proto")
local TAG_PROTO, INT_PROTO, HOP_BYTES = 253, 254, 24

local function next_header(proto, tvb, pinfo, tree)
    if tvb:len() == 0 then return end
    local d = ip_proto:get_dissector(proto)
    if d then d:call(tvb, pinfo, tree) else Dissector.get("data"):call(tvb, pinfo, tree) end
end

-- Reorder tag ------------------------------------------------------------------------------
local tag = Proto("fabtag", "Fabric Lab reorder tag")
local tag_f = {
    next_proto = ProtoField.uint8("fabtag.next_proto", "Next protocol", base.DEC),
    flags = ProtoField.uint8("fabtag.flags", "Flags", base.HEX),
    by_host = ProtoField.bool("fabtag.flags.host", "Tagged by a host", 8, nil, 0x01),
    by_switch = ProtoField.bool("fabtag.flags.switch", "Tagged by a switch", 8, nil, 0x02),
    flow_id = ProtoField.uint16("fabtag.flow_id", "Flow id", base.DEC),
    seq = ProtoField.uint32("fabtag.seq", "Sequence", base.DEC),
}
tag.fields = { tag_f.next_proto, tag_f.flags, tag_f.by_host, tag_f.by_switch, tag_f.flow_id,
               tag_f.seq }

function tag.dissector(tvb, pinfo, tree)
    if tvb:len() < 8 then return 0 end
    local t = tree:add(tag, tvb(0, 8))
    t:add(tag_f.next_proto, tvb(0, 1))
    local flags = t:add(tag_f.flags, tvb(1, 1))
    flags:add(tag_f.by_host, tvb(1, 1))
    flags:add(tag_f.by_switch, tvb(1, 1))
    t:add(tag_f.flow_id, tvb(2, 2))
    t:add(tag_f.seq, tvb(4, 4))
    t:append_text(string.format(", flow %d, seq %d", tvb(2, 2):uint(), tvb(4, 4):uint()))
    next_header(tvb(0, 1):uint(), tvb(8):tvb(), pinfo, tree)
    return tvb:len()
end

-- In-band telemetry ------------------------------------------------------------------------
local int = Proto("fabint", "Fabric Lab in-band telemetry")
local int_f = {
    next_proto = ProtoField.uint8("fabint.next_proto", "Next protocol", base.DEC),
    flags = ProtoField.uint8("fabint.flags", "Flags", base.HEX),
    no_room = ProtoField.bool("fabint.flags.no_room", "A switch found no room", 8, nil, 0x01),
    max_hops = ProtoField.uint8("fabint.max_hops", "Max hops", base.DEC),
    hop_count = ProtoField.uint8("fabint.hop_count", "Hop count", base.DEC),
    switch_id = ProtoField.uint16("fabint.switch_id", "Switch id", base.DEC),
    ingress_port = ProtoField.uint16("fabint.ingress_port", "Ingress port", base.DEC),
    egress_port = ProtoField.uint16("fabint.egress_port", "Egress port", base.DEC),
    qdepth = ProtoField.uint16("fabint.qdepth", "Queue depth (packets)", base.DEC),
    egress_ts = ProtoField.uint64("fabint.egress_ts", "Egress timestamp (us)", base.DEC),
    hop_latency = ProtoField.uint16("fabint.hop_latency", "Hop latency (us)", base.DEC),
    tx_bytes = ProtoField.uint32("fabint.tx_bytes", "Tx bytes", base.DEC),
    link_mbps = ProtoField.uint32("fabint.link_mbps", "Link rate (Mb/s)", base.DEC),
}
int.fields = { int_f.next_proto, int_f.flags, int_f.no_room, int_f.max_hops, int_f.hop_count,
               int_f.switch_id, int_f.ingress_port, int_f.egress_port, int_f.qdepth,
               int_f.egress_ts, int_f.hop_latency, int_f.tx_bytes, int_f.link_mbps }

function int.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then return 0 end
    local count = tvb(3, 1):uint()
    local size = 4 + count * HOP_BYTES
    if tvb:len() < size then return 0 end
    local t = tree:add(int, tvb(0, size))
    t:add(int_f.next_proto, tvb(0, 1))
    local flags = t:add(int_f.flags, tvb(1, 1))
    flags:add(int_f.no_room, tvb(1, 1))
    t:add(int_f.max_hops, tvb(2, 1))
    t:add(int_f.hop_count, tvb(3, 1))
    local path = {}
    for i = 0, count - 1 do
        local at = 4 + i * HOP_BYTES
        local hop = t:add(tvb(at, HOP_BYTES),
                          string.format("Hop %d (record %d, newest first)", count - i, i))
        hop:add(int_f.switch_id, tvb(at, 2))
        hop:add(int_f.ingress_port, tvb(at + 2, 2))
        hop:add(int_f.egress_port, tvb(at + 4, 2))
        hop:add(int_f.qdepth, tvb(at + 6, 2))
        hop:add(int_f.egress_ts, tvb(at + 8, 6), tvb(at + 8, 6):uint64())
        hop:add(int_f.hop_latency, tvb(at + 14, 2))
        hop:add(int_f.tx_bytes, tvb(at + 16, 4))
        hop:add(int_f.link_mbps, tvb(at + 20, 4))
        table.insert(path, 1, tostring(tvb(at, 2):uint()))
    end
    t:append_text(string.format(", %d hop(s): %s", count, table.concat(path, " > ")))
    next_header(tvb(0, 1):uint(), tvb(size):tvb(), pinfo, tree)
    return tvb:len()
end

ip_proto:add(TAG_PROTO, tag)
ip_proto:add(INT_PROTO, int)
