"""`register<T>(size)`: arrays of bit<W> / int<W> (or serializable enum) cells.

Cells hold the W-bit pattern (0 .. 2**W - 1); `read_signed` gives the int<W> view. As in BMv2,
a data-plane read out of range yields None (the result stays unwritten) and a write out of
range does nothing; the control-plane `get`/`set` raise OUT_OF_RANGE instead. P4Runtime
RegisterEntry Read/Write are not supported (BMv2's PI does not implement them either).
"""

from __future__ import annotations

from typing import Any

from p4switch import cpmodel as cp
from p4switch.externs.base import Cells, ExternCodec, ExternKind, P4RuntimeEntity, cli_index
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.p4info import ids
from p4switch.runtime.cli_parsing import CliError
from p4switch.runtime.errors import RuntimeApiError, out_of_range, unimplemented


class RegisterArray:
    """The runtime state of one register."""

    def __init__(self, name: str, width: int, size: int, signed: bool = False) -> None:
        self.name = name
        self.width = width
        self.size = size
        self.signed = signed
        self._mask = (1 << width) - 1
        self._cells: Cells = [0] * size

    def read(self, index: int) -> int | None:
        if 0 <= index < self.size:
            return self._cells[index]
        return None

    def read_signed(self, index: int) -> int | None:
        value = self.read(index)
        if value is not None and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self._cells[index] = value & self._mask

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise out_of_range(f"register {self.name}: index {index} out of range "
                               f"(size {self.size})")

    def get(self, index: int) -> int:
        self._check(index)
        return self._cells[index]

    def set(self, index: int, value: int) -> None:
        self._check(index)
        self._cells[index] = value & self._mask

    def reset(self) -> None:
        self._cells[:] = [0] * self.size  # in place: the generated code holds the list

    def share(self, cells: Cells) -> None:
        """The cells live in `cells` from now on (the C data plane's memory), with their
        values; a pipeline made before keeps the old ones."""
        cells[:] = self._cells
        self._cells = cells


# ---- declaration and generated code ---------------------------------------------------------

def declare(ctx, sym, name: str, annos: list, eid: int | None, args: list, key: tuple) -> str:
    from p4switch.frontend.types import Bits, EnumType, bit_width

    et = sym.type.targs.get("T")
    enum = isinstance(et, EnumType) and et.width is not None
    if not isinstance(et, Bits) and not enum:
        raise UnsupportedConstruct(sym.decl.pos, f"register of {et} (BMv2 registers hold bit<W> or "
                                        "int<W>)")
    ctx.model.add("registers", cp.Register(
        name, annos, eid, bit_width(et), args[0], bool(getattr(et, "signed", False)),
        et.name if enum else None), key)
    if enum:
        ctx.enums_used[et.name] = et
    return ctx.program.closure(f"_registers[{name!r}]", "R")


def _cells(ctx, r: str) -> tuple[str, str]:
    """Closure variables of a register's cell list and size: reads and writes are inlined."""
    return ctx.program.closure(f"{r}._cells", "Rc"), ctx.program.closure(f"{r}.size", "Rn")


def _read(ctx, c, obj, env) -> None:
    out, index = ctx.extern.args(c)
    r = ctx.extern.instance(obj, env)
    v = ctx.em.fresh("rv")
    if getattr(out.type, "signed", False):
        ctx.em.line(f"{v} = {r}.read_signed({ctx.expr.ex(index, env)})")
        ctx.em.line(f"if {v} is not None:")
    else:  # RegisterArray.read inlined
        cells, size = _cells(ctx, r)
        at = ctx.em.fresh("ri")
        ctx.em.line(f"{at} = {ctx.expr.ex(index, env)}")
        ctx.em.line(f"if 0 <= {at} < {size}:")
        with ctx.em.indent():
            ctx.em.line(f"{v} = {cells}[{at}]")
    with ctx.em.indent():
        ctx.stmt.assign(out, v, env)


def _write(ctx, c, obj, env) -> None:
    """RegisterArray.write inlined (index, then value evaluated, as for the call)."""
    index, value = ctx.extern.args(c)
    r = ctx.extern.instance(obj, env)
    cells, size = _cells(ctx, r)
    mask = ctx.program.closure(f"{r}._mask", "Rm")
    at, v = ctx.em.fresh("ri"), ctx.em.fresh("rw")
    ctx.em.line(f"{at} = {ctx.expr.ex(index, env)}")
    ctx.em.line(f"{v} = {ctx.expr.ex(value, env)}")
    ctx.em.line(f"if 0 <= {at} < {size}:")
    with ctx.em.indent():
        ctx.em.line(f"{cells}[{at}] = {v} & {mask}")


# ---- P4Info and P4Runtime -------------------------------------------------------------------

def p4info_entry(builder, register: cp.Register) -> None:
    msg = builder.p4info.registers.add()
    builder.preamble(msg, ids.REGISTER, register.name, register)
    msg.size = register.size
    if register.type_name is not None:
        msg.type_spec.serializable_enum.name = register.type_name
        return
    bits = msg.type_spec.bitstring
    (bits.int if register.signed else bits.bit).bitwidth = register.bitwidth


def _p4rt_read(codec: ExternCodec, msg: Any) -> list:
    raise unimplemented("Register reads are not supported yet")


def _p4rt_write(codec: ExternCodec, kind: int, msg: Any) -> None:
    raise unimplemented("Register writes are not supported yet")


# ---- runtime CLI ------------------------------------------------------------------------------

def register_read(cli, args: list[str]) -> None:
    cli.at_least(args, 1)
    register = cli.resolve("register", args[0])
    read = register.read_signed if register.signed else register.read
    if len(args) == 1:
        values = (read(i) for i in range(register.size))
        cli.p(f"{args[0]}= " + ", ".join(str(v) for v in values))
        return
    cli.exactly(args, 2)
    index = cli_index(args[1])
    try:
        register.get(index)  # OUT_OF_RANGE check
        cli.p(f"{args[0]}[{index}]=", read(index))
    except RuntimeApiError:
        raise CliError("Invalid register operation (INVALID_INDEX)") from None


def register_write(cli, args: list[str]) -> None:
    cli.exactly(args, 3)
    register = cli.resolve("register", args[0])
    index = cli_index(args[1])
    try:
        value = int(args[2], 0)
    except ValueError:
        raise CliError("Error: Bad format for value, must be an integer") from None
    try:
        register.set(index, value)
    except RuntimeApiError:
        raise CliError("Invalid register operation (INVALID_INDEX)") from None


def register_reset(cli, args: list[str]) -> None:
    cli.exactly(args, 1)
    cli.resolve("register", args[0]).reset()


KIND = ExternKind(
    type_name="register",
    declare=declare,
    methods={"read": _read, "write": _write},
    p4info_kind=ids.REGISTER,
    p4info_objects=lambda model: model.registers,
    p4info_entry=p4info_entry,
    state_objects=lambda model: model.registers,
    new_state=lambda r: RegisterArray(r.name, r.bitwidth, r.size, r.signed),
    entity=P4RuntimeEntity("register_entry", _p4rt_read, _p4rt_write),
    cli={"register_read": register_read, "register_write": register_write,
         "register_reset": register_reset},
)
