"""The stateful v1model externs, one module each, listed in `EXTERNS`.

A module holds everything about its extern, as p4c's extern converters and BMv2's
`BM_REGISTER_EXTERN` keep one extern in one place: the control-plane model entry of a
declaration and the generated code of its method calls, its runtime state, its P4Info entry,
its P4Runtime entity (Read/Write) and its runtime-CLI commands, gathered in its `KIND`
(`base.ExternKind`). The code generator, `RuntimeState`, the P4Info builder, the P4Runtime
server and the runtime CLI look externs up here. Adding one: a module with a `KIND`, listed
below (the order is P4Info's: a table's direct counter comes before its direct meter).

What such a module provides (`tests/p4switch/runtime/test_runtime_new_extern_kind.py` adds a
kind from the test alone):
- `declare(ctx, sym, name, annos, eid, args, key)`: adds the instance's model entry with
  `ctx.model.add("<list name>", obj, key)` (a list of `ControlPlaneModel` or, for a new kind,
  one of its `extern_lists`) and returns the closure variable of its state, e.g.
  `ctx.program.closure(f"_state.externs['<type>'][{name!r}]", "X")`;
- `methods`: the generated code of each method call;
- `state_objects(model)` (e.g. `model.instances("<list name>")`) and `new_state(obj)`;
- for P4Info, P4Runtime and the CLI, when it has them: `p4info_kind`, `p4info_objects`,
  `p4info_entry`, `entity`, `cli`.
"""

from __future__ import annotations

from p4switch.externs import counter, direct_counter, direct_meter, meter, register
from p4switch.externs.base import ExternCodec, ExternKind, P4RuntimeEntity

__all__ = ["CLI_COMMANDS", "ENTITIES", "EXTERNS", "ExternCodec", "ExternKind"]

EXTERNS: dict[str, ExternKind] = {
    kind.type_name: kind
    for kind in (counter.KIND, direct_counter.KIND, meter.KIND, direct_meter.KIND, register.KIND)
}

# P4Runtime entity field (`counter_entry`) -> its extern's Read/Write
ENTITIES: dict[str, P4RuntimeEntity] = {k.entity.field: k.entity for k in EXTERNS.values()
                                        if k.entity}

# runtime-CLI command -> handler(cli, args)
CLI_COMMANDS = {name: fn for k in EXTERNS.values() for name, fn in k.cli.items()}
