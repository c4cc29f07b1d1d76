"""The stateful v1model externs, one module each, listed in `EXTERNS`.

A module holds everything about its extern, as p4c's extern converters and BMv2's
`BM_REGISTER_EXTERN` keep one extern in one place: the control-plane model entry of a
declaration and the generated code of its method calls, its runtime state, its P4Info entry,
its P4Runtime entity (Read/Write) and its runtime-CLI commands, gathered in its `KIND`
(`base.ExternKind`). The code generator, `RuntimeState`, the P4Info builder, the P4Runtime
server and the runtime CLI look externs up here. Adding one: a module with a `KIND`, listed
below (the order is P4Info's: a table's direct counter comes before its direct meter).
"""

from __future__ import annotations

from p4switch.externs import counter, direct_counter, direct_meter, meter, register
from p4switch.externs.base import ExternCodec, ExternKind

__all__ = ["CLI_COMMANDS", "ENTITIES", "EXTERNS", "ExternCodec", "ExternKind"]

EXTERNS: dict[str, ExternKind] = {
    kind.type_name: kind
    for kind in (counter.KIND, direct_counter.KIND, meter.KIND, direct_meter.KIND, register.KIND)
}

# P4Runtime entity field (`counter_entry`) -> its extern
ENTITIES: dict[str, ExternKind] = {k.entity.field: k for k in EXTERNS.values() if k.entity}

# runtime-CLI command -> handler(cli, args)
CLI_COMMANDS = {name: fn for k in EXTERNS.values() for name, fn in k.cli.items()}
