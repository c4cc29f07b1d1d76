/* Lab 4 — ECN marking (RED on the egress queue depth).
 *
 * The controller installs the marking profile (kmin, kmax, pmax) as range entries of the
 * ecn_profile table over the queue depth at enqueue (standard_metadata.enq_qdepth, packets): a hit
 * gives a threshold; a packet is marked when a random draw from [0, 65534] is below it. Below kmin
 * no entry matches; from kmax on the threshold is 65535 (every packet). You write what happens
 * to a packet: only ECN-capable packets (ECT(0)/ECT(1)) are marked, to CE, and each mark is
 * counted per egress port. The receiver turns CE marks into CNPs; DCQCN senders slow down.
 *
 * Check:  fabric-lab lab check 4 --program ecn_lab.p4
 * Run:    sudo fabric-lab run incast --quick   (the lab's program; see the handout) */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"

/* This file provides what include/ecn.p4 would. */
#define FABRIC_ECN_P4

const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;

control EcnMarking(inout headers_t hdr, in standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) ecn_marked_counter;   /* per egress port */
    bit<16> mark_threshold = 0;

    /* Keep the names: the controller (controller/congestion.py) and the checker write them. */
    action set_mark_threshold(bit<16> threshold) {
        mark_threshold = threshold;
    }
    table ecn_profile {
        key = { standard_metadata.enq_qdepth: range; }
        actions = { set_mark_threshold; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    apply {
        /* TODO 1: only for IPv4 packets that are ECN-capable and not marked yet
         *         (hdr.ipv4.ecn is neither ECN_NOT_ECT nor ECN_CE) ... */
        if (ecn_profile.apply().hit) {
            /* TODO 2: draw a random bit<16> in [0, 65534] (extern random(out, lo, hi)); when it
             *         is below mark_threshold, set hdr.ipv4.ecn to ECN_CE and count the mark in
             *         ecn_marked_counter at the egress port. */
        }
    }
}

#include "include/fabric_main.p4"
