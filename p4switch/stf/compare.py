"""Comparing the packets a test expects with the packets the switch sent, as p4c's tools do.

Per port, in order: the counts must be equal and each packet must match its expectation (hex
prefix match, `*` = any nibble, `$` = no longer than the pattern). Every port that appears in a
`packet` or `expect` statement is checked; ports without expectations must send nothing.
"""

from __future__ import annotations

from p4switch.stf.syntax import Expect


def match_packet(expect: Expect, data: bytes) -> int | None:
    """None if `data` matches; else the index of the first differing nibble (or length issue)."""
    if expect.pattern is None:
        return None
    got = data.hex().upper()
    pattern = expect.pattern
    for i, want in enumerate(pattern):
        if i >= len(got):
            return i
        if want != "*" and want != got[i]:
            return i
    if expect.exact and len(got) > len(pattern):
        return len(pattern)
    return None


def describe_mismatch(port: int, index: int, expect: Expect, data: bytes, nibble: int) -> str:
    got = data.hex().upper()
    pattern = expect.pattern or ""
    if nibble >= len(got):
        head = (f"port {port} packet {index}: too short, {len(got) // 2} bytes, "
                f"expected at least {len(pattern) / 2:g}")
    elif nibble >= len(pattern):
        head = f"port {port} packet {index}: too long, {len(got) // 2} bytes, expected exactly " \
               f"{len(pattern) / 2:g} ($)"
    else:
        head = (f"port {port} packet {index}: differs at byte {nibble // 2} (hex digit {nibble}): "
                f"expected {pattern[nibble]}, got {got[nibble]}")
    return "\n".join([
        head,
        f"  expected {pattern}{'$' if expect.exact else ''}  (line {expect.line})",
        f"  got      {got}",
        f"           {' ' * nibble}^",
    ])


def compare_outputs(
    ports: set[int], expects: dict[int, list[Expect]], outputs: dict[int, list[bytes]]
) -> list[str]:
    """Every mismatch, as messages; empty when the outputs are as expected."""
    problems: list[str] = []
    for port in sorted(ports):
        want = expects.get(port, [])
        got = outputs.get(port, [])
        if len(want) != len(got):
            problems.append(_count_message(port, want, got))
            continue
        for index, (expect, data) in enumerate(zip(want, got, strict=False)):
            nibble = match_packet(expect, data)
            if nibble is not None:
                problems.append(describe_mismatch(port, index, expect, data, nibble))
    return problems


def _count_message(port: int, want: list[Expect], got: list[bytes]) -> str:
    lines = [f"port {port}: expected {len(want)} packet(s), got {len(got)}"]
    for i, data in enumerate(got):
        verdict = ""
        if i < len(want):
            verdict = " (matches)" if match_packet(want[i], data) is None else " (differs)"
        lines.append(f"  got      {data.hex().upper()}{verdict}")
    for expect in want[len(got):]:
        lines.append(f"  missing  {expect.pattern or '<any packet>'}  (line {expect.line})")
    return "\n".join(lines)
