/* Flowlet switching on top of the ECMP pipeline: the flowlet gap is a run-time parameter
 * (table FabricIngress.load_balancing.flowlet_gap, action set_flowlet_gap(gap in µs)). */
#define LB_MODE_FLOWLET
#include "include/fabric_main.p4"
