/* A toy mechanism for tests/mechanisms: counts the IPv4 packets arriving on the ports the
 * controller lists, each port into the counter cell the controller gives it. */
#ifndef TOY_P4
#define TOY_P4

control ToyWatch(in headers_t hdr, in standard_metadata_t standard_metadata) {
    counter(64, CounterType.packets) watched_counter;

    action watch(bit<32> cell) {
        watched_counter.count(cell);
    }
    table watched_ports {
        key = { standard_metadata.ingress_port: exact; }
        actions = { watch; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            watched_ports.apply();
        }
    }
}

#endif
