/* Queue-aware per-packet dynamic load balancing (AIPod-style DLB) with reorder tags.
 *
 * Every packet takes the less loaded of two members of its route's equal-cost set (power of two
 * choices): the next one in round-robin order, and the one this flow's previous packet took.
 * Ties go to round robin, so under even load the mode sprays like `dlb.p4`; when one member's
 * queue grows (a slower link, a background flow, a link that degrades) its packets go elsewhere.
 *
 * Load, per egress port (global registers, so ingress and egress share them):
 *   dlb_port_depth  packets queued: egress writes the depth each dequeue leaves behind
 *                   (deq_qdepth, the truth at that moment); ingress adds one for every packet it
 *                   sends there, so a burst sees its own packets before they leave.
 * Members: the routing selector hashes meta.lb_entropy with the identity hash, so entropy e
 * picks live member e mod n. The ports behind entropies 0..DLB_CHOICES-1 are learnt from the
 * selector's own answers (dlb_member_port, per destination slot; 0 = not seen yet, which
 * counts as idle so every member gets tried), so a member that leaves the set (watch port down)
 * is relearnt by the next packet that uses its entropy. Nothing here needs the controller.
 *
 * Knob: `load_balancing.dlb_params` (default action set_dlb_params(queue_aware)); 0 turns the
 * load comparison off (pure round robin), for comparisons in one program. */
#ifndef FABRIC_QDLB_P4
#define FABRIC_QDLB_P4

#define ROUTING_SELECTOR_ALGO HashAlgorithm.identity
#define ROUTING_SELECTOR_KEYS meta.lb_entropy: selector;

#include "flow.p4"
#include "tagging.p4"

#define DLB_CHOICES 16            /* entropies 0..15: up to 16 members reachable */
#define DLB_DEST_SLOTS 256        /* destinations whose member ports are learnt apart */
const bit<32> DLB_PORTS = 512;
const bit<9> DLB_DROP_PORT = 511;  /* v1model's drop port (mark_to_drop) on both targets */

register<bit<32>>(DLB_PORTS) dlb_port_depth;
register<bit<9>>(DLB_DEST_SLOTS * DLB_CHOICES) dlb_member_port;  /* port + 1; 0 = unknown */

control QueueAwareDlb(in headers_t hdr, inout local_metadata_t meta) {
    register<bit<16>>(FLOW_TABLE_SIZE) packets_sent;
    register<bit<8>>(FLOW_TABLE_SIZE) last_choice;
    bit<1> queue_aware = 1;

    action set_dlb_params(bit<1> aware) {
        queue_aware = aware;
    }
    table dlb_params {
        actions = { set_dlb_params; }
        default_action = set_dlb_params(1);
    }

    apply {
        dlb_params.apply();
        bit<16> count;
        packets_sent.read(count, meta.flow_index);
        packets_sent.write(meta.flow_index, count + 1);
        bit<8> rr = (bit<8>) (count & (DLB_CHOICES - 1));
        bit<8> last;
        last_choice.read(last, meta.flow_index);

        bit<16> slot;
        hash(slot, HashAlgorithm.crc16, 16w0, { hdr.ipv4.dst_addr }, 32w256);
        bit<32> base = (bit<32>) slot * DLB_CHOICES;
        bit<9> rr_port;
        bit<9> last_port;
        dlb_member_port.read(rr_port, base + (bit<32>) rr);
        dlb_member_port.read(last_port, base + (bit<32>) last);
        bit<32> rr_load = 0;
        bit<32> last_load = 0;
        if (rr_port != 0) {
            dlb_port_depth.read(rr_load, (bit<32>) (rr_port - 1));
        }
        if (last_port != 0) {
            dlb_port_depth.read(last_load, (bit<32>) (last_port - 1));
        }
        bit<8> choice = rr;
        if (queue_aware == 1 && last_load < rr_load) {
            choice = last;
        }
        last_choice.write(meta.flow_index, choice);
        meta.lb_entropy = (bit<16>) choice;
        meta.dlb_cell = base + (bit<32>) choice;
    }
}

/* After routing: learn which port the chosen entropy maps to, and count the packet queued. */
control QueueAwareDlbLearn(in local_metadata_t meta,
                           in standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_spec == DLB_DROP_PORT || standard_metadata.egress_spec == CPU_PORT) {
            return;
        }
        dlb_member_port.write(meta.dlb_cell, standard_metadata.egress_spec + 1);
        bit<32> port = (bit<32>) standard_metadata.egress_spec;
        bit<32> depth;
        dlb_port_depth.read(depth, port);
        dlb_port_depth.write(port, depth + 1);
    }
}

/* Egress: the depth the dequeue left behind replaces the ingress estimate. */
control DlbPortLoad(in standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type != 0 || standard_metadata.egress_port == CPU_PORT) {
            return;
        }
        dlb_port_depth.write((bit<32>) standard_metadata.egress_port,
                             (bit<32>) standard_metadata.deq_qdepth);
    }
}

#endif
