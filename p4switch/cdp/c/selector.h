/* Action selector member choice, as ActionProfile.select (p4switch/runtime/action_profiles.py).
 *
 * A group is the list of its BMv2 member handles (a weighted member contributes several), each
 * with an optional watch port, kept sorted by handle. A member whose watch port is down is
 * skipped; the choice is live[(hash & 0xFFFFFFFF) % number of live members]. Groups are known
 * by their BMv2 group handle. The caller passes the port states as a bitmap: port p is up if
 * p < nports and bit p % 64 of ports_up[p / 64] is set. */
#ifndef CDP_SELECTOR_H
#define CDP_SELECTOR_H

#include <stdint.h>

#define CDP_NO_WATCH_PORT (-1)
#define CDP_SELECT_NONE (-1)     /* no live member: the group runs no action */
#define CDP_SELECT_NO_GROUP (-2) /* no group with this handle */

struct cdp_selector_member {
    uint32_t handle;
    int64_t watch_port; /* < 0 (CDP_NO_WATCH_PORT): not watched */
};

struct cdp_selector;

struct cdp_selector *cdp_selector_new(void);
void cdp_selector_free(struct cdp_selector *s);
/* Create or replace a group (count 0: an empty group); -1 if out of memory. */
int cdp_selector_set_group(struct cdp_selector *s, uint32_t group,
                           const struct cdp_selector_member *members, uint32_t count);
int cdp_selector_remove_group(struct cdp_selector *s, uint32_t group); /* -1: no such group */
void cdp_selector_clear(struct cdp_selector *s);
/* The chosen member handle, or CDP_SELECT_NONE / CDP_SELECT_NO_GROUP. Does not allocate. */
int64_t cdp_selector_choose(const struct cdp_selector *s, uint32_t group, uint64_t hash,
                            const uint64_t *ports_up, uint32_t nports);

#endif
