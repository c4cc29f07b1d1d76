/* Per-packet dynamic load balancing with reorder tags on top of the ECMP pipeline. */
#define LB_MODE_DLB
#include "include/fabric_main.p4"
