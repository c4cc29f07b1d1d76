/* Match tables of the C data plane, exact against p4switch/runtime/lookup.py.
 *
 * A key is one byte string: each field big-endian in ceil(width / 8) bytes (the bits above its
 * width zero), the fields concatenated in key order. Among the entries matching a key, the one
 * of highest rank wins and, on equal rank, the one of lowest handle & 0xFFFFFF (BMv2's entry
 * index). The rank is what lookup.py's index for the table's shape compares:
 *   - every field exact (ExactIndex): keys are unique, rank 0;
 *   - one lpm field, the others exact (LpmIndex): the prefix length, so the longest prefix wins;
 *   - anything else (PriorityIndex): the entry's priority.
 * Entries are expected in the runtime's canonical form (p4switch/runtime/entries.py), as the
 * runtime's Table passes them on. A lookup does not allocate; writes must not run concurrently
 * with lookups on the same table. */
#ifndef CDP_TABLES_H
#define CDP_TABLES_H

#include <stddef.h>
#include <stdint.h>

enum cdp_match_kind { CDP_MATCH_EXACT, CDP_MATCH_LPM, CDP_MATCH_TERNARY, CDP_MATCH_RANGE,
                      CDP_MATCH_OPTIONAL };

struct cdp_key_field {
    uint32_t width; /* bits, any number (> 64 too) */
    enum cdp_match_kind kind;
};

/* One field of an entry's match; each byte string is big-endian in the field's bytes. */
struct cdp_field_match {
    const uint8_t *value; /* NULL: don't care (the runtime's None). exact, optional, lpm and
                             ternary: the value; range: the low end */
    const uint8_t *mask;  /* ternary: the mask */
    const uint8_t *high;  /* range: the high end */
    uint32_t prefix_len;  /* lpm */
};

/* What insert, remove and set_value return. */
enum { CDP_TABLE_OK = 0, CDP_TABLE_EXISTS = -1, CDP_TABLE_NOT_FOUND = -2,
       CDP_TABLE_INVALID = -3, CDP_TABLE_NO_MEMORY = -4 };

struct cdp_table;

/* NULL if out of memory, or a width is 0 or a kind unknown. */
struct cdp_table *cdp_table_new(const struct cdp_key_field *fields, uint32_t nfields);
void cdp_table_free(struct cdp_table *t);
size_t cdp_table_key_size(const struct cdp_table *t);
uint32_t cdp_table_entries(const struct cdp_table *t);

/* Add an entry: `match` has one element per key field; `value` is the caller's (the data
 * plane's action data index). EXISTS: an entry with this handle's index, or with the same
 * match and rank, is there; INVALID: a match the field's kind cannot have. */
int cdp_table_insert(struct cdp_table *t, uint32_t handle, uint32_t priority,
                     const struct cdp_field_match *match, uint64_t value);
int cdp_table_remove(struct cdp_table *t, uint32_t handle);      /* NOT_FOUND: no such handle */
int cdp_table_set_value(struct cdp_table *t, uint32_t handle, uint64_t value);
void cdp_table_clear(struct cdp_table *t);

/* 1 and the winning entry's value (and handle, unless NULL) on a hit, 0 on a miss. */
int cdp_table_lookup(const struct cdp_table *t, const uint8_t *key, uint64_t *value,
                     uint32_t *handle);

#endif
