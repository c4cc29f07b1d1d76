/* Queue telemetry in egress, readable on both targets through the runtime CLI
 * (`register_read` / `register_write`; P4Runtime cannot read registers on BMv2 or p4switch).
 *
 * Per egress queue, cell = port * 8 + priority (ports 0..63):
 *   queue_depth_max  the deepest enqueue (enq_qdepth, packets) since the reader last zeroed it
 *   queue_depth_last the depth the last packet left behind (deq_qdepth)
 *   queue_delay_max  the longest queueing delay (deq_timedelta, µs) since last zeroed
 * Packets, ECN marks and PFC frames are counters elsewhere (port_io, ecn, pfc). */
#ifndef FABRIC_TELEMETRY_P4
#define FABRIC_TELEMETRY_P4

const bit<32> TELEMETRY_QUEUES = 512;

control QueueTelemetry(in standard_metadata_t standard_metadata) {
    register<bit<32>>(TELEMETRY_QUEUES) queue_depth_max;
    register<bit<32>>(TELEMETRY_QUEUES) queue_depth_last;
    register<bit<32>>(TELEMETRY_QUEUES) queue_delay_max;

    apply {
        if (standard_metadata.instance_type != 0 || standard_metadata.egress_port == CPU_PORT) {
            return;
        }
        bit<32> cell = ((bit<32>) standard_metadata.egress_port[5:0] << 3)
                       | (bit<32>) standard_metadata.priority;
        bit<32> depth = (bit<32>) standard_metadata.enq_qdepth;
        bit<32> deepest;
        queue_depth_max.read(deepest, cell);
        if (depth > deepest) {
            queue_depth_max.write(cell, depth);
        }
        queue_depth_last.write(cell, (bit<32>) standard_metadata.deq_qdepth);
        bit<32> longest;
        queue_delay_max.read(longest, cell);
        if (standard_metadata.deq_timedelta > longest) {
            queue_delay_max.write(cell, standard_metadata.deq_timedelta);
        }
    }
}

#endif
