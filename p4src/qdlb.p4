/* Queue-aware per-packet dynamic load balancing (AIPod-style DLB) with reorder tags. */
#define LB_MODE_QDLB
#include "include/fabric_main.p4"
