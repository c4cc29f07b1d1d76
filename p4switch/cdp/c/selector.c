/* ActionProfile.select in C; see selector.h. */
#include "selector.h"

#include <stdlib.h>
#include <string.h>

#define MAX_GROUP_HANDLE (1u << 24) /* handles are dense, from 0: a table indexed by them */

struct group {
    uint32_t count;
    int watched; /* any member with a watch port */
    struct cdp_selector_member members[];
};

struct cdp_selector {
    struct group **groups; /* by group handle; NULL: none */
    uint32_t room;
};

struct cdp_selector *cdp_selector_new(void)
{
    return calloc(1, sizeof(struct cdp_selector));
}

void cdp_selector_clear(struct cdp_selector *s)
{
    for (uint32_t i = 0; i < s->room; i++) {
        free(s->groups[i]);
        s->groups[i] = NULL;
    }
}

void cdp_selector_free(struct cdp_selector *s)
{
    if (!s)
        return;
    cdp_selector_clear(s);
    free(s->groups);
    free(s);
}

static int by_handle(const void *a, const void *b)
{
    const struct cdp_selector_member *x = a, *y = b;
    if (x->handle != y->handle)
        return x->handle < y->handle ? -1 : 1;
    return (x->watch_port > y->watch_port) - (x->watch_port < y->watch_port);
}

int cdp_selector_set_group(struct cdp_selector *s, uint32_t group,
                           const struct cdp_selector_member *members, uint32_t count)
{
    if (group >= MAX_GROUP_HANDLE)
        return -1;
    if (group >= s->room) {
        uint32_t room = s->room ? s->room : 16;
        while (room <= group)
            room *= 2;
        struct group **groups = realloc(s->groups, room * sizeof *groups);
        if (!groups)
            return -1;
        memset(groups + s->room, 0, (room - s->room) * sizeof *groups);
        s->groups = groups;
        s->room = room;
    }
    struct group *g = malloc(sizeof *g + count * sizeof *members);
    if (!g)
        return -1;
    g->count = count;
    g->watched = 0;
    if (count)
        memcpy(g->members, members, count * sizeof *members);
    qsort(g->members, count, sizeof *members, by_handle);
    for (uint32_t i = 0; i < count; i++)
        g->watched |= g->members[i].watch_port >= 0;
    free(s->groups[group]);
    s->groups[group] = g;
    return 0;
}

int cdp_selector_remove_group(struct cdp_selector *s, uint32_t group)
{
    if (group >= s->room || !s->groups[group])
        return -1;
    free(s->groups[group]);
    s->groups[group] = NULL;
    return 0;
}

static int live(const struct cdp_selector_member *m, const uint64_t *ports_up, uint32_t nports)
{
    if (m->watch_port < 0)
        return 1;
    uint64_t port = (uint64_t)m->watch_port;
    return port < nports && (ports_up[port / 64] >> (port % 64) & 1);
}

int64_t cdp_selector_choose(const struct cdp_selector *s, uint32_t group, uint64_t hash,
                            const uint64_t *ports_up, uint32_t nports)
{
    const struct group *g = group < s->room ? s->groups[group] : NULL;
    if (!g)
        return CDP_SELECT_NO_GROUP;
    uint32_t h = (uint32_t)hash;
    uint32_t nlive = g->count;
    if (g->watched) {
        nlive = 0;
        for (uint32_t i = 0; i < g->count; i++)
            nlive += live(&g->members[i], ports_up, nports);
    }
    if (nlive == 0)
        return CDP_SELECT_NONE;
    uint32_t pick = h % nlive; /* the pick-th live member */
    if (!g->watched)
        return g->members[pick].handle;
    for (uint32_t i = 0;; i++)
        if (live(&g->members[i], ports_up, nports) && pick-- == 0)
            return g->members[i].handle;
}
