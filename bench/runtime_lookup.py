"""Table lookups, selector choice and replica lists per second (p4switch.runtime hot paths).

Run: .venv/bin/python bench/runtime_lookup.py [--entries N] [--seconds S]
Prints one line per case: lookups/s (hits and misses mixed as stated).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from p4switch.cpmodel import (
    Action,
    ActionCall,
    ActionProfile,
    ActionRef,
    ControlPlaneModel,
    FieldMatch,
    MatchField,
    Param,
    Table,
)
from p4switch.runtime import Entry, GroupRef, RuntimeState

FWD = ActionRef("fwd")


def build_model(size: int) -> ControlPlaneModel:
    def t(name, fields, **kw):
        return Table(name, match_fields=fields, action_refs=[FWD], size=size, **kw)

    return ControlPlaneModel(
        program="bench",
        actions=[Action("fwd", params=[Param("port", bitwidth=9)])],
        tables=[
            t("exact", [MatchField("dmac", bitwidth=48)]),
            t("lpm", [MatchField("dst", bitwidth=32, match_kind="lpm")]),
            t("vrf_lpm", [MatchField("vrf", bitwidth=8),
                          MatchField("dst", bitwidth=32, match_kind="lpm")]),
            t("ternary", [MatchField("src", bitwidth=32, match_kind="ternary"),
                          MatchField("proto", bitwidth=8, match_kind="ternary")]),
            t("range", [MatchField("proto", bitwidth=8, match_kind="optional"),
                        MatchField("dport", bitwidth=16, match_kind="range")]),
            Table("ecmp", match_fields=[MatchField("dst", bitwidth=32, match_kind="lpm")],
                  action_refs=[FWD], implementation="sel", size=size),
        ],
        action_profiles=[ActionProfile("sel", table_names=["ecmp"], with_selector=True,
                                       max_group_size=64, selector_algorithm="crc16")],
    )


def fill(state: RuntimeState, n: int, rng: random.Random) -> dict[str, list[tuple]]:
    """Install n entries per table; returns lookup keys per table (about 80% hits)."""
    fwd = ActionCall("fwd", (1,))
    keys: dict[str, list[tuple]] = {}
    exact = state.tables["exact"]
    macs = rng.sample(range(1 << 48), n)
    for m in macs:
        exact.insert(Entry(keys=(FieldMatch("exact", value=m),), action=fwd))
    keys["exact"] = [(m,) for m in macs[: n * 4 // 5]] + [(rng.getrandbits(48),)
                                                         for _ in range(n // 5)]
    lpm, vrf = state.tables["lpm"], state.tables["vrf_lpm"]
    lengths = [8, 16, 20, 24, 24, 24, 28, 32]
    seen = set()
    addrs = []
    while len(seen) < n:
        plen = rng.choice(lengths)
        value = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if (value, plen) in seen:
            continue
        seen.add((value, plen))
        lpm.insert(Entry(keys=(FieldMatch("lpm", value=value, prefix_len=plen),), action=fwd))
        vrf.insert(Entry(keys=(FieldMatch("exact", value=plen),
                               FieldMatch("lpm", value=value, prefix_len=plen)), action=fwd))
        addrs.append(value | rng.getrandbits(32 - plen) if plen < 32 else value)
    keys["lpm"] = [(a,) for a in addrs]
    keys["vrf_lpm"] = [(rng.choice(lengths), a) for a in addrs]
    tern = state.tables["ternary"]
    masks = [0xFF000000, 0xFFFF0000, 0xFFFFFF00, 0xFFFFFFFF]
    for i in range(n):
        m = masks[i % len(masks)]
        tern.insert(Entry(keys=(FieldMatch("ternary", value=rng.getrandbits(32) & m, mask=m),
                                FieldMatch("ternary", value=i % 256, mask=0xFF)),
                          priority=1 + i, action=fwd))
    keys["ternary"] = [(rng.getrandbits(32), rng.randrange(256)) for _ in range(n)]
    rtab = state.tables["range"]
    for i in range(min(n, 1000)):
        lo = rng.randrange(65000)
        rtab.insert(Entry(keys=(FieldMatch("optional", value=i % 256),
                                FieldMatch("range", low=lo, high=lo + rng.randrange(500))),
                          priority=1 + i, action=fwd))
    keys["range"] = [(rng.randrange(256), rng.randrange(65536)) for _ in range(n)]
    for items in keys.values():
        rng.shuffle(items)
    return keys


def rate(fn, items, seconds: float) -> float:
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for item in items:
            fn(item)
        done += len(items)
        now = time.perf_counter()
        if now >= deadline:
            return done / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(1)
    state = RuntimeState(build_model(args.entries))
    t0 = time.perf_counter()
    keys = fill(state, args.entries, rng)
    print(f"installed {sum(len(t) for t in state.tables.values())} entries "
          f"in {time.perf_counter() - t0:.2f} s")
    for name, table in state.tables.items():
        if name == "ecmp":
            continue
        hits = sum(table.lookup(k) is not None for k in keys[name][:2000])
        r = rate(table.lookup, keys[name], args.seconds)
        print(f"{name:8} {len(table):6} entries  {r:12,.0f} lookups/s  "
              f"(hit rate {hits / min(2000, len(keys[name])):.0%})")
    sel = state.action_profiles["sel"]
    for mid in range(16):
        sel.insert_member(mid, ActionCall("fwd", (mid,)))
    sel.insert_group(1, [(mid, 1 + mid % 3, None) for mid in range(16)])
    flows = [[(rng.getrandbits(32), 32), (rng.getrandbits(32), 32), (6, 8),
              (rng.getrandbits(16), 16), (rng.getrandbits(16), 16)] for _ in range(5000)]
    print(f"selector_hash (5-tuple, crc16) {rate(sel.selector_hash, flows, args.seconds):12,.0f}/s")
    ref = GroupRef(1)
    hashes = [rng.getrandbits(32) for _ in range(5000)]
    print(f"select (32 slots)              "
          f"{rate(lambda h: sel.select(ref, h), hashes, args.seconds):12,.0f}/s")
    state.pre.insert_multicast_group(1, [(p, 0) for p in range(8)])
    print(f"pre.replicas (8 ports)         "
          f"{rate(state.pre.replicas, [1] * 1000, args.seconds):12,.0f}/s")


if __name__ == "__main__":
    main()
