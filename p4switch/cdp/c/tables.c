/* p4switch/runtime/lookup.py in C; see tables.h.
 *
 * One structure serves every table shape, lookup.py's tuple space search: entries are grouped
 * by their mask (a field's mask is all ones for exact and optional, the prefix for lpm, the
 * mask for ternary, none for range and don't care); a group is a hash map from masked key to a
 * bucket, the entries with that masked key best first. Groups are visited in order of their
 * best rank, and the search stops once no remaining group can beat the best match found.
 * An exact table is thus one hash map, an lpm table one per prefix length in use, longest
 * first. Range fields are checked per entry. */
#include "tables.h"

#include <stdlib.h>
#include <string.h>

#define ENTRY_INDEX(handle) ((handle) & 0xFFFFFF) /* BMv2's entry index, below its version */

struct field {
    uint32_t width, offset, size; /* bits; where its bytes are in the key, how many */
    enum cdp_match_kind kind;
    uint32_t range_offset;        /* range fields: where its ends are in an entry's ranges */
};

struct entry {
    struct entry *next; /* in its bucket, next best */
    struct bucket *bucket;
    uint64_t value;
    uint32_t handle, rank;
    uint8_t ranges[];   /* range fields: every low end, then every high end (range_size each) */
};

struct bucket {
    struct bucket *next; /* in its group's hash chain */
    struct group *group;
    uint64_t hash;
    struct entry *entries; /* best first */
    uint8_t key[];         /* the masked key */
};

struct group {
    struct bucket **slots; /* hash chains; nslots is a power of two */
    uint32_t nslots, nbuckets, nentries;
    uint32_t best, nbest; /* the highest rank of its entries, and how many have it */
    uint8_t mask[];
};

struct cdp_table {
    struct field *fields;
    uint32_t nfields;
    size_t key_size, range_size;
    int rank_by_priority;    /* else by the lpm field's prefix length (0 in exact tables) */
    struct group **groups;   /* by best rank, highest first */
    uint32_t ngroups, groups_room;
    struct entry **by_index; /* ENTRY_INDEX(handle) -> entry */
    uint32_t index_room, nentries;
    uint8_t *scratch;        /* an entry's mask and masked key while it is inserted */
};

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t word)
{
    h = (h ^ word) * 0xFF51AFD7ED558CCDu;
    return h ^ h >> 32;
}

static uint64_t hash_masked(const uint8_t *key, const uint8_t *mask, size_t size)
{
    uint64_t h = 0x9E3779B97F4A7C15u ^ size, k, m;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) { /* eight bytes at a time, the rest as one word */
        memcpy(&k, key + i, 8);
        memcpy(&m, mask + i, 8);
        h = mix(h, k & m);
    }
    if (i < size) {
        for (k = 0; i < size; i++)
            k = k << 8 | (key[i] & mask[i]);
        h = mix(h, k);
    }
    return mix(h, 0);
}

static int masked_equal(const uint8_t *key, const uint8_t *mask, const uint8_t *masked,
                        size_t size)
{
    for (size_t i = 0; i < size; i++)
        if ((key[i] & mask[i]) != masked[i])
            return 0;
    return 1;
}

/* Set the first `nbits` bits of a field of `width` bits held in `size` bytes. */
static void set_prefix(uint8_t *bytes, uint32_t size, uint32_t width, uint32_t nbits)
{
    uint32_t first = size * 8 - width;
    for (uint32_t bit = first; bit < first + nbits; bit++)
        bytes[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
}

/* a before b: higher rank, then lower entry index */
static int before(const struct entry *a, const struct entry *b)
{
    if (a->rank != b->rank)
        return a->rank > b->rank;
    return ENTRY_INDEX(a->handle) < ENTRY_INDEX(b->handle);
}

static int in_ranges(const struct cdp_table *t, const struct entry *e, const uint8_t *key)
{
    const uint8_t *low = e->ranges, *high = e->ranges + t->range_size;
    for (uint32_t i = 0; i < t->nfields && t->range_size; i++) {
        const struct field *f = &t->fields[i];
        if (f->kind != CDP_MATCH_RANGE)
            continue;
        const uint8_t *v = key + f->offset;
        if (memcmp(v, low + f->range_offset, f->size) < 0 ||
            memcmp(v, high + f->range_offset, f->size) > 0)
            return 0;
    }
    return 1;
}

/* ---- groups and buckets --------------------------------------------------------------------- */

static struct bucket *find_bucket(const struct cdp_table *t, const struct group *g,
                                  const uint8_t *key, uint64_t hash)
{
    struct bucket *b = g->slots[hash & (g->nslots - 1)];
    while (b && !(b->hash == hash && masked_equal(key, g->mask, b->key, t->key_size)))
        b = b->next;
    return b;
}

static struct bucket *add_bucket(const struct cdp_table *t, struct group *g,
                                 const uint8_t *masked, uint64_t hash)
{
    if (g->nbuckets >= g->nslots) { /* load factor 1: twice the chains */
        uint32_t nslots = g->nslots * 2;
        struct bucket **slots = calloc(nslots, sizeof *slots);
        if (!slots)
            return NULL;
        for (uint32_t i = 0; i < g->nslots; i++) {
            for (struct bucket *b = g->slots[i], *next; b; b = next) {
                next = b->next;
                b->next = slots[b->hash & (nslots - 1)];
                slots[b->hash & (nslots - 1)] = b;
            }
        }
        free(g->slots);
        g->slots = slots;
        g->nslots = nslots;
    }
    struct bucket *b = calloc(1, sizeof *b + t->key_size);
    if (!b)
        return NULL;
    memcpy(b->key, masked, t->key_size);
    b->group = g;
    b->hash = hash;
    b->next = g->slots[hash & (g->nslots - 1)];
    g->slots[hash & (g->nslots - 1)] = b;
    g->nbuckets++;
    return b;
}

static void drop_bucket(struct group *g, struct bucket *b)
{
    struct bucket **p = &g->slots[b->hash & (g->nslots - 1)];
    while (*p != b)
        p = &(*p)->next;
    *p = b->next;
    g->nbuckets--;
    free(b);
}

static void free_group(struct group *g)
{
    for (uint32_t i = 0; i < g->nslots; i++) {
        for (struct bucket *b = g->slots[i], *next; b; b = next) {
            next = b->next;
            for (struct entry *e = b->entries, *enext; e; e = enext) {
                enext = e->next;
                free(e);
            }
            free(b);
        }
    }
    free(g->slots);
    free(g);
}

static struct group *find_group(const struct cdp_table *t, const uint8_t *mask)
{
    for (uint32_t i = 0; i < t->ngroups; i++)
        if (memcmp(t->groups[i]->mask, mask, t->key_size) == 0)
            return t->groups[i];
    return NULL;
}

static struct group *add_group(struct cdp_table *t, const uint8_t *mask)
{
    if (t->ngroups == t->groups_room) {
        uint32_t room = t->groups_room ? t->groups_room * 2 : 4;
        struct group **groups = realloc(t->groups, room * sizeof *groups);
        if (!groups)
            return NULL;
        t->groups = groups;
        t->groups_room = room;
    }
    struct group *g = calloc(1, sizeof *g + t->key_size);
    if (g) {
        g->nslots = 8;
        g->slots = calloc(g->nslots, sizeof *g->slots);
    }
    if (!g || !g->slots) {
        free(g);
        return NULL;
    }
    memcpy(g->mask, mask, t->key_size);
    t->groups[t->ngroups++] = g; /* empty, it sorts last */
    return g;
}

static void drop_group(struct cdp_table *t, struct group *g)
{
    uint32_t i = 0;
    while (t->groups[i] != g)
        i++;
    memmove(&t->groups[i], &t->groups[i + 1], (t->ngroups - i - 1) * sizeof *t->groups);
    t->ngroups--;
    free_group(g);
}

/* Restore the order of the groups by best rank after one group's best changed. */
static void sort_groups(struct cdp_table *t)
{
    for (uint32_t i = 1; i < t->ngroups; i++) {
        struct group *g = t->groups[i];
        uint32_t j = i;
        for (; j > 0 && t->groups[j - 1]->best < g->best; j--)
            t->groups[j] = t->groups[j - 1];
        t->groups[j] = g;
    }
}

static void count_best(struct group *g, uint32_t rank)
{
    if (rank > g->best || g->nbest == 0) {
        g->best = rank;
        g->nbest = 0;
    }
    if (rank == g->best)
        g->nbest++;
}

static void recount_best(struct group *g)
{
    g->best = g->nbest = 0;
    for (uint32_t i = 0; i < g->nslots; i++)
        for (const struct bucket *b = g->slots[i]; b; b = b->next)
            for (const struct entry *e = b->entries; e && e->rank >= g->best; e = e->next)
                count_best(g, e->rank);
}

/* ---- the table ------------------------------------------------------------------------------ */

struct cdp_table *cdp_table_new(const struct cdp_key_field *fields, uint32_t nfields)
{
    for (uint32_t i = 0; i < nfields; i++)
        if (fields[i].width == 0 || fields[i].kind > CDP_MATCH_OPTIONAL)
            return NULL;
    struct cdp_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nfields = nfields;
    t->fields = calloc(nfields ? nfields : 1, sizeof *t->fields);
    uint32_t lpm = 0, exact = 0;
    for (uint32_t i = 0; t->fields && i < nfields; i++) {
        struct field *f = &t->fields[i];
        f->width = fields[i].width;
        f->kind = fields[i].kind;
        f->size = (f->width + 7) / 8;
        f->offset = (uint32_t)t->key_size;
        t->key_size += f->size;
        if (f->kind == CDP_MATCH_RANGE) {
            f->range_offset = (uint32_t)t->range_size;
            t->range_size += f->size;
        }
        lpm += f->kind == CDP_MATCH_LPM;
        exact += f->kind == CDP_MATCH_EXACT;
    }
    /* lookup.py's make_index: ExactIndex, LpmIndex or else PriorityIndex */
    t->rank_by_priority = !(exact == nfields || (lpm == 1 && lpm + exact == nfields));
    t->scratch = malloc(2 * t->key_size + 1);
    if (!t->fields || !t->scratch) {
        cdp_table_free(t);
        return NULL;
    }
    return t;
}

void cdp_table_clear(struct cdp_table *t)
{
    for (uint32_t i = 0; i < t->ngroups; i++)
        free_group(t->groups[i]);
    t->ngroups = 0;
    if (t->by_index)
        memset(t->by_index, 0, t->index_room * sizeof *t->by_index);
    t->nentries = 0;
}

void cdp_table_free(struct cdp_table *t)
{
    if (!t)
        return;
    cdp_table_clear(t);
    free(t->groups);
    free(t->by_index);
    free(t->scratch);
    free(t->fields);
    free(t);
}

size_t cdp_table_key_size(const struct cdp_table *t)
{
    return t->key_size;
}

uint32_t cdp_table_entries(const struct cdp_table *t)
{
    return t->nentries;
}

static int reserve_index(struct cdp_table *t, uint32_t index)
{
    if (index < t->index_room)
        return 1;
    uint32_t room = t->index_room ? t->index_room : 64;
    while (room <= index)
        room *= 2;
    struct entry **by_index = realloc(t->by_index, room * sizeof *by_index);
    if (!by_index)
        return 0;
    memset(by_index + t->index_room, 0, (room - t->index_room) * sizeof *by_index);
    t->by_index = by_index;
    t->index_room = room;
    return 1;
}

/* Fill `mask`, `masked` and the entry's rank and ranges from `match`; 0 if it is invalid. */
static int place(const struct cdp_table *t, const struct cdp_field_match *match,
                 uint32_t priority, uint8_t *mask, uint8_t *masked, struct entry *e)
{
    uint8_t *low = e->ranges, *high = e->ranges + t->range_size;
    memset(mask, 0, t->key_size);
    memset(masked, 0, t->key_size);
    e->rank = t->rank_by_priority ? priority : 0;
    for (uint32_t i = 0; i < t->nfields; i++) {
        const struct field *f = &t->fields[i];
        const struct cdp_field_match *m = &match[i];
        uint8_t *fmask = mask + f->offset;
        if (!m->value) { /* don't care: mask 0, a range of everything */
            if (f->kind == CDP_MATCH_EXACT)
                return 0;
            if (f->kind == CDP_MATCH_RANGE)
                memset(high + f->range_offset, 0xFF, f->size);
            continue;
        }
        switch (f->kind) {
        case CDP_MATCH_EXACT:
        case CDP_MATCH_OPTIONAL:
            set_prefix(fmask, f->size, f->width, f->width);
            break;
        case CDP_MATCH_LPM:
            if (m->prefix_len > f->width)
                return 0;
            set_prefix(fmask, f->size, f->width, m->prefix_len);
            if (!t->rank_by_priority)
                e->rank = m->prefix_len;
            break;
        case CDP_MATCH_TERNARY:
            if (!m->mask)
                return 0;
            memcpy(fmask, m->mask, f->size);
            break;
        case CDP_MATCH_RANGE:
            if (!m->high)
                return 0;
            memcpy(low + f->range_offset, m->value, f->size);
            memcpy(high + f->range_offset, m->high, f->size);
            break;
        }
        for (uint32_t j = 0; j < f->size; j++)
            masked[f->offset + j] = m->value[j] & fmask[j];
    }
    return 1;
}

int cdp_table_insert(struct cdp_table *t, uint32_t handle, uint32_t priority,
                     const struct cdp_field_match *match, uint64_t value)
{
    uint32_t index = ENTRY_INDEX(handle);
    if (index < t->index_room && t->by_index[index])
        return CDP_TABLE_EXISTS;
    struct entry *e = calloc(1, sizeof *e + 2 * t->range_size);
    if (!e)
        return CDP_TABLE_NO_MEMORY;
    e->handle = handle;
    e->value = value;
    uint8_t *mask = t->scratch, *masked = t->scratch + t->key_size;
    if (!place(t, match, priority, mask, masked, e)) {
        free(e);
        return CDP_TABLE_INVALID;
    }
    uint64_t hash = hash_masked(masked, mask, t->key_size);
    struct group *g = find_group(t, mask);
    struct bucket *b = g ? find_bucket(t, g, masked, hash) : NULL;
    for (const struct entry *x = b ? b->entries : NULL; x; x = x->next) {
        if (x->rank == e->rank && memcmp(x->ranges, e->ranges, 2 * t->range_size) == 0) {
            free(e); /* the same match and rank: the runtime's ALREADY_EXISTS */
            return CDP_TABLE_EXISTS;
        }
    }
    if (!reserve_index(t, index) || (!g && !(g = add_group(t, mask))) ||
        (!b && !(b = add_bucket(t, g, masked, hash)))) {
        if (g && !g->nentries)
            drop_group(t, g);
        free(e);
        return CDP_TABLE_NO_MEMORY;
    }
    struct entry **p = &b->entries;
    while (*p && before(*p, e))
        p = &(*p)->next;
    e->next = *p;
    *p = e;
    e->bucket = b;
    g->nentries++;
    count_best(g, e->rank);
    sort_groups(t);
    t->by_index[index] = e;
    t->nentries++;
    return CDP_TABLE_OK;
}

static struct entry *by_handle(const struct cdp_table *t, uint32_t handle)
{
    uint32_t index = ENTRY_INDEX(handle);
    struct entry *e = index < t->index_room ? t->by_index[index] : NULL;
    return e && e->handle == handle ? e : NULL;
}

int cdp_table_remove(struct cdp_table *t, uint32_t handle)
{
    struct entry *e = by_handle(t, handle);
    if (!e)
        return CDP_TABLE_NOT_FOUND;
    struct bucket *b = e->bucket;
    struct group *g = b->group;
    struct entry **p = &b->entries;
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    if (!b->entries)
        drop_bucket(g, b);
    if (--g->nentries == 0)
        drop_group(t, g);
    else if (e->rank == g->best && --g->nbest == 0)
        recount_best(g);
    sort_groups(t);
    t->by_index[ENTRY_INDEX(handle)] = NULL;
    t->nentries--;
    free(e);
    return CDP_TABLE_OK;
}

int cdp_table_set_value(struct cdp_table *t, uint32_t handle, uint64_t value)
{
    struct entry *e = by_handle(t, handle);
    if (!e)
        return CDP_TABLE_NOT_FOUND;
    e->value = value;
    return CDP_TABLE_OK;
}

int cdp_table_lookup(const struct cdp_table *t, const uint8_t *key, uint64_t *value,
                     uint32_t *handle)
{
    const struct entry *best = NULL;
    for (uint32_t i = 0; i < t->ngroups; i++) {
        const struct group *g = t->groups[i];
        if (best && g->best < best->rank)
            break; /* no entry of this group or the next ones can win */
        const struct bucket *b = find_bucket(t, g, key, hash_masked(key, g->mask, t->key_size));
        for (const struct entry *e = b ? b->entries : NULL; e; e = e->next) {
            if (best && !before(e, best))
                break;
            if (in_ranges(t, e, key)) {
                best = e;
                break;
            }
        }
    }
    if (!best)
        return 0;
    *value = best->value;
    if (handle)
        *handle = best->handle;
    return 1;
}
