"""A serializable enum over int<8> with a negative member holds its bits, as in BMv2 (p4c's
JSON gives the member as -0x03 of a signed 8-bit field): the packet's 0xFD is NEG in select and
==, and NEG is emitted as 0xFD (programs/signed_enum.p4)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("e, seen, as_int", [(0xFD, 0x31, 0xFD), (0x05, 0x40, 0x05),
                                             (0x03, 0x00, 0x03)])
def test_a_negative_member_is_its_twos_complement_bits(switch, e, seen, as_int):
    sw = switch("signed_enum.p4")
    ((port, data),) = sw.send(1, bytes([e, 0, 0, 0, 0]))
    assert port == 2
    assert data == bytes([e, seen, as_int, 0xFD, 0xFD])
