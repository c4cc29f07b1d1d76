/* p4switch's P4-16 core library: the declarations every P4-16 program sees.
 * Names and signatures follow the P4-16 specification (same as p4c's core.p4). */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Standard error codes; programs may add more with their own `error { ... }`. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

/* The packet being assembled by the deparser. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* Parser check: when `check` is false the parser stops with `toSignal`. */
extern void verify(in bool check, in error toSignal);

@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif
