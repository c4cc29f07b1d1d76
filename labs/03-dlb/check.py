"""Checks of lab 3 (per-packet DLB): the student's spraying and tagging in the p4switch engine;
the tagged packets are read back with the lab's own scapy layers and ICRC check."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from scapy.layers.inet import IP

from fabric_lab.labkit import Step, StepFailed, Work, compiles, roce_frame
from traffic.frames import icrc_ok, strip_tag
from traffic.headers import TAG_FLAG_SWITCH, TAG_IP_PROTO, ReorderTag

TITLE = "Per-packet DLB: spraying and reorder tags"
MINUTES = 75
PREREQS = "labs 1-2; header insertion in P4 (docs/mechanisms/dlb.md)"
FILE = "dlb_lab.p4"

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
    return "2 flows x 5 packets: seq 0..4 each, length and checksums right"


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
    return "fabric ports and tagged packets pass untouched"


STEPS = [
    Step("compiles", compiles, "fix the compiler's first error; `p4switch-compile -I p4src "
         "dlb_lab.p4 -o /tmp/out` shows the same"),
    Step("sprays one flow round robin over every path", sprays_round_robin,
         "TODO 1 and 2: the per-flow count goes up by one per packet and becomes lb_entropy"),
    Step("tags RoCEv2 packets from host ports, in sequence", tags_at_host_ports,
         "TODO 3: read-then-write next_seq, set every tag field, protocol and total length"),
    Step("tags only at the first switch, only once", tags_only_once,
         "TODO 4: apply host_ports only when hdr.bth is valid and hdr.dlb_tag is not"),
]
