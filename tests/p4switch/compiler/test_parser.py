"""Parsers: stacks, lookahead, advance, select keysets, and parser errors as BMv2 has them
(parser_error set, the packet continues to ingress with what was extracted)."""

from __future__ import annotations

REPORT = bytes(5)


def tag(kind: int, value: int, bos: bool) -> bytes:
    return bytes([kind, value << 1 | int(bos)])


def report(err: int, tags: int, peeked: int = 0, last: int = 0, branch: int = 0) -> bytes:
    return bytes([err, tags, peeked, last, branch])


def test_stack_loop_and_select_branches(switch):
    sw = switch("parsing.p4")
    tags = tag(1, 5, False) + tag(2, 6, False) + tag(2, 9, True)
    # lookahead 0xFF: skip one byte, then the body
    out = sw.send(0, REPORT + tags + b"\xff\x12\x34rest")
    assert out == [(1, report(0, 3, 0xFF, 9, 1) + tags + b"\x12\x34rest")]
    # masked match 0xA0 &&& 0xF0 (the peeked byte is not consumed)
    out = sw.send(0, REPORT + tags + b"\xa7\x00")
    assert out == [(1, report(0, 3, 0xA7, 9, 2) + tags + b"\xa7\x00")]
    # range with a tuple: 0x10..0x1F and tags[0].kind == 2
    t2 = tag(2, 1, True)
    assert sw.send(0, REPORT + t2 + b"\x15\x00\x00") == [
        (1, report(0, 1, 0x15, 1, 3) + t2 + b"\x15\x00\x00")]
    # 0x00: accept without a body; the remaining bytes are payload
    assert sw.send(0, REPORT + t2 + b"\x00xyz") == [
        (1, report(0, 1, 0, 1, 0) + t2 + b"\x00xyz")]


def test_no_match_and_explicit_reject(switch):
    sw = switch("parsing.p4")
    t1 = tag(1, 3, True)
    assert sw.send(0, REPORT + t1 + b"\x55\x00") == [
        (1, report(2, 1, 0x55, 3) + t1 + b"\x55\x00")]
    # `reject` behaves as BMv2 runs it: the parser stops, parser_error stays NoError
    t7 = tag(7, 3, True)
    assert sw.send(0, REPORT + t7 + b"\x55\x00") == [
        (1, report(0, 1, 0x55, 3) + t7 + b"\x55\x00")]


def test_packet_too_short_keeps_the_unparsed_bytes(switch):
    sw = switch("parsing.p4")
    tags = tag(1, 1, False) + b"\x02"  # the second tag is cut short
    assert sw.send(0, REPORT + tags) == [(1, report(1, 1, 0, 1) + tag(1, 1, False) + b"\x02")]
    # lookahead past the end is PacketTooShort too
    t1 = tag(1, 1, True)
    assert sw.send(0, REPORT + t1) == [(1, report(1, 1, 0, 1) + t1)]


def test_stack_out_of_bounds_and_verify(switch):
    sw = switch("parsing.p4")
    four = tag(1, 1, False) * 3 + tag(1, 1, True)
    assert sw.send(0, REPORT + four) == [(1, report(3, 3, 0, 1) + four)]
    bad = tag(0xEE, 1, True)
    assert sw.send(0, REPORT + bad + b"\x00") == [(1, report(4, 1, 0, 1) + bad + b"\x00")]


def test_push_front_and_pop_front(switch):
    sw = switch("parsing.p4")
    t1, t2 = tag(1, 5, False), tag(2, 6, True)
    out = sw.send(0, REPORT + t1 + t2 + b"\xff\x50\x50")
    # push_front(1): a new, zeroed element 0 (valid), the old ones shift up; the byte the
    # parser advanced over is gone
    assert out == [(1, report(0, 2, 0xFF, 6, 1) + tag(0x99, 0, False) + t1 + t2 + b"\x50\x50")]
    out = sw.send(0, REPORT + t1 + t2 + b"\xff\x60\x60")
    assert out == [(1, report(0, 2, 0xFF, 6, 1) + t2 + b"\x60\x60")]
