"""Checks of lab 3 (per-packet DLB): the student's spraying and tagging in the p4switch engine;
the tagged packets are read back with the lab's own scapy layers and ICRC check."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from scapy.layers.inet import IP

from fabric_lab.labkit import (
    LabSwitch,
    Step,
    StepFailed,
    Work,
    compiles,
    reference_program,
    roce_frame,
)
from traffic.frames import add_tag, icrc_ok, strip_tag
from traffic.headers import TAG_FLAG_HOST, TAG_FLAG_SWITCH, TAG_IP_PROTO, ReorderTag

TITLE = "Per-packet DLB: spraying and reorder tags"
MINUTES = 75
PREREQS = "labs 1-2; header insertion in P4 (docs/mechanisms/dlb.md)"
FILE = "dlb_lab.p4"
OWN_CONTROLS = ("PacketSpraying", "ReorderTagging")
WITHHELD = ("dlb.p4", "tagging.p4")

HOST_PORT = 9


def sprays_round_robin(work: Work) -> str:
    switch = work.switch([1, 2, 3], host_ports=[HOST_PORT])
    ports = [switch.egress_port(roce_frame(50000, psn=i), ingress_port=HOST_PORT)
             for i in range(12)]
    counts = Counter(ports)
    if sorted(counts.values()) != [4, 4, 4] or any(a == b for a, b in pairwise(ports)):
        raise StepFailed(f"12 packets of one flow over 3 paths went to ports {ports}; expected "
                         f"each port in turn (4 each, never the same twice in a row)")
    return f"ports {ports}"


def tags_at_host_ports(work: Work) -> str:
    switch = work.switch([1, 2], host_ports=[HOST_PORT])
    seqs: dict[int, list[int]] = {}
    for sport in (50000, 50001):
        for psn in range(5):
            _, out = switch.forward(roce_frame(sport, psn=psn), ingress_port=HOST_PORT)
            ip = IP(out[14:])
            if ip.proto != TAG_IP_PROTO or ReorderTag not in ip:
                raise StepFailed(f"a RoCEv2 packet from host port {HOST_PORT} left with IPv4 "
                                 f"protocol {ip.proto}, not the tag's {TAG_IP_PROTO}")
            tag = ip[ReorderTag]
            if tag.next_proto != 17 or tag.flags != TAG_FLAG_SWITCH:
                raise StepFailed(f"tag next_proto {tag.next_proto} (want 17, UDP), flags "
                                 f"{tag.flags} (want {TAG_FLAG_SWITCH}, tagged by a switch)")
            if ip.len != len(out) - 14:
                raise StepFailed(f"IPv4 total length {ip.len}, but {len(out) - 14} bytes follow "
                                 f"the Ethernet header")
            fixed = ip.copy()
            del fixed.chksum
            if IP(bytes(fixed)).chksum != ip.chksum:
                raise StepFailed("the IPv4 checksum is wrong after tagging")
            if not icrc_ok(strip_tag(out)):
                raise StepFailed("with the tag removed the packet's ICRC no longer matches")
            seqs.setdefault(sport, []).append(tag.seq)
    if seqs != {50000: [0, 1, 2, 3, 4], 50001: [0, 1, 2, 3, 4]}:
        raise StepFailed(f"sequence numbers per flow {seqs}; each flow counts 0, 1, 2, ...")
    return f"2 flows x 5 packets: seq 0..4 each, length and checksums right; {_hidden_tags(work)}"


def _address(rng) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def _hidden_tags(work: Work) -> str:
    """Hidden cases: flows drawn per run, their packets interleaved at random; every tag field
    (flow_id, seq, flags, next_proto) and the whole frame as p4src/dlb.p4 writes them."""
    rng = work.rng("dlb-tags")
    mine = work.switch([1, 2], host_ports=[HOST_PORT])
    lab = LabSwitch(reference_program("dlb"), [1, 2], host_ports=[HOST_PORT])
    flows = [(rng.randrange(1024, 65536), _address(rng), _address(rng)) for _ in range(5)]
    for packet in range(60):
        sport, src, dst = rng.choice(flows)
        frame = roce_frame(sport, src_ip=src, dst_ip=dst, psn=packet)
        _, got = mine.forward(frame, ingress_port=HOST_PORT)
        _, want = lab.forward(frame, ingress_port=HOST_PORT)
        if got != want:
            field = _tag_difference(got, want)
            raise StepFailed(f"hidden case: packet {packet}, flow {src} -> {dst} UDP source port "
                             f"{sport}: {field}")
    return "60 hidden packets of 5 flows tagged as p4src/dlb.p4 tags them"


def _tag_difference(got: bytes, want: bytes) -> str:
    mine, lab = IP(got[14:]), IP(want[14:])
    if ReorderTag not in mine:
        return "no reorder tag"
    for name in ("flow_id", "seq", "flags", "next_proto"):
        if getattr(mine[ReorderTag], name) != getattr(lab[ReorderTag], name):
            return (f"tag {name} {getattr(mine[ReorderTag], name)}, p4src/dlb.p4 writes "
                    f"{getattr(lab[ReorderTag], name)}" + (" (the low 16 bits of "
                    "meta.flow_index)" if name == "flow_id" else ""))
    return "the frame differs from the one p4src/dlb.p4 sends"


def tags_only_once(work: Work) -> str:
    switch = work.switch([1, 2], host_ports=[HOST_PORT])
    _, passed = switch.forward(roce_frame(50002), ingress_port=1)
    if IP(passed[14:]).proto != 17:
        raise StepFailed("a packet from a fabric port (not in host_ports) was tagged")
    first = work.switch([1, 2], host_ports=[HOST_PORT])
    second = work.switch([1, 2], host_ports=[HOST_PORT])
    _, once = first.forward(roce_frame(50000), ingress_port=HOST_PORT)
    if IP(once[14:]).proto != TAG_IP_PROTO:
        raise StepFailed("a RoCEv2 packet from a host port got no tag at all (step 3 first)")
    _, twice = second.forward(once, ingress_port=HOST_PORT)
    if len(twice) != len(once):
        raise StepFailed(f"a tagged packet was tagged again ({len(once)} -> {len(twice)} bytes)")
    return f"fabric ports and tagged packets pass untouched; {_hidden_untouched(work)}"


def _hidden_untouched(work: Work) -> str:
    """Hidden cases: packets a host tagged itself (flow ids and sequence numbers drawn per run)
    and UDP packets that are not RoCEv2 arrive on a host port: neither gets a (new) tag."""
    rng = work.rng("dlb-untouched")
    switch = work.switch([1, 2], host_ports=[HOST_PORT])
    for _ in range(8):
        flow_id, seq = rng.randrange(1 << 16), rng.randrange(1 << 32)
        tagged = add_tag(roce_frame(rng.randrange(1024, 65536), src_ip=_address(rng)), flow_id,
                         seq, TAG_FLAG_HOST)
        _, out = switch.forward(tagged, ingress_port=HOST_PORT)
        tag = IP(out[14:]).getlayer(ReorderTag)
        if tag is None or (tag.flow_id, tag.seq, tag.flags) != (flow_id, seq, TAG_FLAG_HOST) \
                or len(out) != len(tagged):
            seen = "none" if tag is None else f"flow_id {tag.flow_id}, seq {tag.seq}, flags " \
                f"{tag.flags}, {len(out)} bytes"
            raise StepFailed(f"hidden case: a packet its host tagged (flow_id {flow_id}, seq "
                             f"{seq}, flags {TAG_FLAG_HOST}, {len(tagged)} bytes) left with the "
                             f"tag {seen}: a tagged packet must pass untouched")
        plain = bytearray(roce_frame(rng.randrange(1024, 65536), src_ip=_address(rng)))
        plain[36:38] = rng.randrange(5000, 6000).to_bytes(2, "big")  # UDP, but not RoCEv2
        _, out = switch.forward(bytes(plain), ingress_port=HOST_PORT)
        if IP(out[14:]).proto != 17:
            raise StepFailed("hidden case: a UDP packet that is not RoCEv2 (no BTH) was tagged; "
                             "only RoCEv2 packets get a tag")
    return "8 hidden host-tagged and 8 non-RoCEv2 packets untouched"


STEPS = [
    Step("compiles, declaring the lab's controls itself", compiles,
         "fix the compiler's first error (`p4switch-compile dlb_lab.p4 -o /tmp/out` in your lab "
         "directory shows the same); declare the lab's controls in your file, never include "
         "them from p4src/"),
    Step("sprays one flow round robin over every path", sprays_round_robin,
         "TODO 1 and 2: the per-flow count goes up by one per packet and becomes lb_entropy"),
    Step("tags RoCEv2 packets from host ports, in sequence", tags_at_host_ports,
         "TODO 3: read-then-write next_seq, set every tag field, protocol and total length"),
    Step("tags only at the first switch, only once", tags_only_once,
         "TODO 4: apply host_ports only when hdr.bth is valid and hdr.dlb_tag is not"),
]
