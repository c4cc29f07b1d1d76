/* ECMP baseline: IPv4 longest-prefix match to equal-cost next-hop groups (action selector over
 * the 5-tuple and a per-switch seed), TTL decrement, IPv4 checksum update, per-port counters,
 * controller packet I/O. */
#define LB_MODE_ECMP
#include "include/fabric_main.p4"
