"""Wrong arguments to fabric-lab's commands."""

from tests.hostile.inputs import Case

CASES: list[Case] = [
    Case("perf-unknown-fabric", ["fabric-lab", "perf", "all_reduce", "--fabric", "nosuchfabric"],
         must_say="nosuchfabric"),
]
