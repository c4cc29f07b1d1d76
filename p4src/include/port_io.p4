/* Port-level concerns: controller packet I/O, per-port counters, source MAC rewrite. */
#ifndef FABRIC_PORT_IO_P4
#define FABRIC_PORT_IO_P4

/* Packet-out: the controller names the egress port; the packet skips the rest of ingress. */
control PacketOutHandler(inout headers_t hdr,
                         inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
    }
}

/* Counts packets and bytes received per ingress port. */
control IngressPortCounters(in standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) rx_port_counter;
    apply {
        rx_port_counter.count((bit<32>) standard_metadata.ingress_port);
    }
}

/* Counts packets and bytes sent per egress port, adds packet_in towards the controller and
 * rewrites the source MAC to the egress port's own address. */
control EgressPortIo(inout headers_t hdr,
                     inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) tx_port_counter;

    action set_source_mac(mac_addr_t mac) {
        hdr.ethernet.src_addr = mac;
    }
    table source_mac {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_source_mac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            return;
        }
        tx_port_counter.count((bit<32>) standard_metadata.egress_port);
        if (hdr.ethernet.isValid()) {
            source_mac.apply();
        }
    }
}

#endif
