"""Parser for p4c's STF test files, BMv2 dialect.

One statement per line; `#` starts a comment; keywords are case-insensitive. Every syntax error
of the file is collected and reported at once as `file:line:col: error: message`. A file that
cannot be read, is not text or is past `MAX_STF_BYTES` is one `file: error: message`.
"""

from __future__ import annotations

import re
from pathlib import Path

from p4switch.frontend.source import SourceError, read_source
from p4switch.stf import syntax as s

MAX_STF_BYTES = 8 << 20

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<num>0[xX][0-9a-fA-F*]+|0[bB][01*]+|[0-9]+)
  | (?P<id>[A-Za-z_$][A-Za-z_$0-9]*)
  | (?P<quoted>"[^"]+")
  | (?P<op>==|!=|<=|>=|[:,.\[\]()=</>])
    """,
    re.VERBOSE,
)
_PACKET_DATA = re.compile(r"[0-9a-fA-F*$ \t\r]*")
_COUNT_OPS = ("==", "!=", "<=", "<", ">=", ">")


class StfSyntaxError(ValueError):
    """The syntax errors of one file (or why it cannot be read); str() is one
    `file:line:col: error: message` per line."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


class _Error(Exception):
    def __init__(self, col: int, message: str) -> None:
        super().__init__(message)
        self.col = col
        self.message = message


class _Tokens:
    """The tokens of one line: (kind, text, column); `spaced` holds the indexes of the tokens
    that follow white space."""

    def __init__(self, text: str, start_col: int) -> None:
        self.items: list[tuple[str, str, int]] = []
        self.spaced: set[int] = set()
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise _Error(start_col + pos, f"unexpected character {text[pos]!r}")
            if m.lastgroup == "ws":
                self.spaced.add(len(self.items))
            elif m.lastgroup == "quoted":
                self.items.append(("id", m.group()[1:-1], start_col + pos))
            else:
                assert m.lastgroup is not None  # every alternative of _TOKEN is a named group
                self.items.append((m.lastgroup, m.group(), start_col + pos))
            pos = m.end()
        self.pos = 0
        self.end_col = start_col + len(text)

    def peek(self, offset: int = 0) -> tuple[str, str, int] | None:
        i = self.pos + offset
        return self.items[i] if i < len(self.items) else None

    def at_end(self) -> bool:
        return self.pos >= len(self.items)

    def col(self) -> int:
        tok = self.peek()
        return tok[2] if tok else self.end_col

    def next(self, kind: str, what: str) -> str:
        tok = self.peek()
        if tok is None or tok[0] != kind:
            found = f"{tok[1]!r}" if tok else "end of line"
            raise _Error(self.col(), f"expected {what}, found {found}")
        self.pos += 1
        return tok[1]

    def accept(self, text: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] == text:
            self.pos += 1
            return True
        return False

    def expect_op(self, text: str) -> None:
        if not self.accept(text):
            tok = self.peek()
            found = f"{tok[1]!r}" if tok else "end of line"
            raise _Error(self.col(), f"expected '{text}', found {found}")

    def name(self, what: str) -> str:
        """'.'? ID ('[' N ']')? ('.' ID ('[' N ']')?)*; a leading '.' (absolute P4 name) is
        dropped: STF names are matched against fully qualified names anyway."""
        self.accept(".")
        parts = [self._name_part(what)]
        while self.pos not in self.spaced and self.accept("."):
            parts.append(self._name_part(what))
        return ".".join(parts)

    def _name_part(self, what: str) -> str:
        part = self.next("id", what)
        if self.accept("["):
            part += "[" + self.next("num", "an index") + "]"
            self.expect_op("]")
        return part

    def number(self, what: str = "a number") -> str:
        return self.next("num", what)

    def decimal(self, what: str) -> int:
        text = self.number(what)
        if not text.isdigit():
            raise _Error(self.items[self.pos - 1][2], f"expected {what} in decimal, found {text}")
        return int(text)

    def done(self) -> None:
        tok = self.peek()
        if tok is not None:
            raise _Error(self.col(), f"unexpected {tok[1]!r} at end of statement")


def parse_stf_file(path: str | Path) -> list[s.Statement]:
    """The statements of the file; StfSyntaxError also when it cannot be read or is not text."""
    try:
        text = read_source(path, MAX_STF_BYTES)
    except SourceError as exc:
        where = exc.file if exc.line == 0 else f"{exc.file}:{exc.line}:{exc.col}"
        raise StfSyntaxError([f"{where}: error: {exc.message}"]) from None
    return parse_stf(text, str(path))


def parse_stf(text: str, filename: str = "<stf>") -> list[s.Statement]:
    """The statements of an STF file; raises StfSyntaxError listing every error."""
    statements: list[s.Statement] = []
    errors: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        stripped = line.lstrip()
        if not stripped.strip():
            continue
        col = len(line) - len(stripped) + 1
        keyword = re.match(r"[A-Za-z_]+", stripped)
        if keyword is None:
            errors.append(f"{filename}:{lineno}:{col}: error: expected a statement keyword")
            continue
        word = keyword.group().lower()
        rest = stripped[keyword.end() :]
        rest_col = col + keyword.end()
        try:
            stmt = _statement(word, rest, rest_col, col)
        except _Error as exc:
            errors.append(f"{filename}:{lineno}:{exc.col}: error: {exc.message}")
            continue
        stmt.line = lineno
        statements.append(stmt)
    if errors:
        raise StfSyntaxError(errors)
    return statements


def _statement(word: str, rest: str, rest_col: int, col: int) -> s.Statement:
    if word in ("packet", "expect"):
        return _packet_or_expect(word, rest, rest_col)
    tokens = _Tokens(rest, rest_col)
    stmt: s.Statement
    if word == "add":
        stmt = _add(tokens)
    elif word == "setdefault":
        stmt = s.SetDefault(tokens.name("a table name"), _action(tokens))
    elif word == "remove":
        if tokens.next("id", "'all'").lower() != "all":
            raise _Error(rest_col, "only 'remove all' is supported by STF")
        stmt = s.Remove()
    elif word == "check_counter":
        stmt = _check_counter(tokens)
    elif word == "wait":
        stmt = s.Wait()
    elif word == "no_packet":
        stmt = s.NoPacket()
    elif word in s.CLI_COMMANDS:
        stmt = _cli(word, rest, rest_col)
        tokens.pos = len(tokens.items)
    else:
        raise _Error(col, f"unknown statement '{word}'")
    tokens.done()
    return stmt


def _packet_or_expect(word: str, rest: str, col: int) -> s.Statement:
    m = re.match(r"[ \t]*([0-9]+)", rest)
    if m is None:
        raise _Error(col, f"{word}: expected a port number")
    port = int(m.group(1))
    data = rest[m.end() :]
    data_col = col + m.end() + len(data) - len(data.lstrip())
    bad = _PACKET_DATA.match(data)
    assert bad is not None  # it matches the empty string
    if bad.end() != len(data):
        raise _Error(col + m.end() + bad.end(), f"invalid packet data {data[bad.end()]!r}")
    digits = re.sub(r"\s+", "", data)
    if word == "packet":
        if not digits:
            raise _Error(data_col, "packet: no data")
        wild = re.search(r"[*$]", data)
        if wild:
            raise _Error(col + m.end() + wild.start(), "packet: '*' and '$' are only allowed in expect")
        if len(digits) % 2:
            raise _Error(data_col, f"packet: odd number of hex digits ({len(digits)})")
        return s.Packet(port, bytes.fromhex(digits))
    exact = digits.endswith("$")
    body = digits[:-1] if exact else digits
    if "$" in body:
        raise _Error(col + m.end() + data.find("$"), "expect: '$' must be the last character")
    if exact and not body:
        raise _Error(data_col, "expect: '$' without data")
    return s.Expect(port, body.upper() if body else None, exact)


def _add(tokens: _Tokens) -> s.Add:
    table = tokens.name("a table name")
    priority = None
    tok = tokens.peek()
    if tok is not None and tok[0] == "num":
        priority = tokens.decimal("a priority")
    matches: list[s.KeyMatch] = []
    while True:
        # A key match is `name :`; the action is `name (`.
        save = tokens.pos
        name = tokens.name("a key field or an action")
        if tokens.accept(":"):
            value = tokens.number("a key value")
            prefix = tokens.number("a prefix length") if tokens.accept("/") else None
            matches.append(s.KeyMatch(name, value, prefix))
            continue
        tokens.pos = save
        break
    if not matches:
        raise _Error(tokens.col(), "add: expected at least one key match 'field:value'")
    action = _action(tokens)
    entry_id = None
    if tokens.accept("="):
        entry_id = tokens.next("id", "an entry id")
    return s.Add(table, priority, matches, action, entry_id)


def _action(tokens: _Tokens) -> s.ActionSpec:
    name = tokens.name("an action name")
    tokens.expect_op("(")
    args: list[tuple[str, str]] = []
    if not tokens.accept(")"):
        while True:
            arg = tokens.next("id", "a parameter name")
            tokens.expect_op(":")
            args.append((arg, tokens.number("a parameter value")))
            if tokens.accept(")"):
                break
            if not tokens.accept(","):
                tok = tokens.peek()
                found = f"{tok[1]!r}" if tok else "end of line"
                raise _Error(tokens.col(), f"expected ',' or ')', found {found}")
    return s.ActionSpec(name, args)


def _check_counter(tokens: _Tokens) -> s.CheckCounter:
    name = tokens.next("id", "a counter name")
    tokens.expect_op("(")
    tok = tokens.peek()
    index = tokens.number() if tok and tok[0] == "num" else tokens.next("id", "an index or id")
    tokens.expect_op(")")
    if tokens.at_end():
        return s.CheckCounter(name, index)
    count_type = tokens.next("id", "'packets' or 'bytes'").lower()
    if count_type not in ("packets", "bytes"):
        raise _Error(tokens.items[tokens.pos - 1][2], "expected 'packets' or 'bytes'")
    op = tokens.next("op", "a comparison")
    if op not in _COUNT_OPS:
        raise _Error(tokens.items[tokens.pos - 1][2], f"expected a comparison, found {op!r}")
    return s.CheckCounter(name, index, count_type, op, tokens.decimal("a count"))


_NUM = r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)"
_RATE = r"[0-9]+(?:\.[0-9]+)?:[0-9]+"
_NAME = r"[A-Za-z_$][A-Za-z_$0-9]*(?:\[[0-9]+\])?(?:\.[A-Za-z_$][A-Za-z_$0-9]*(?:\[[0-9]+\])?)*"
# Argument patterns of the pass-through commands, one regex per argument ('+': one or more).
_CLI_ARGS = {
    "mirroring_add": [_NUM, _NUM],
    "mirroring_add_mc": [_NUM, _NUM],
    "mirroring_delete": [_NUM],
    "mirroring_get": [_NUM],
    "mc_mgrp_create": [_NUM],
    "mc_node_create": [_NUM, _NUM + "+"],
    "mc_node_update": [_NUM, _NUM + "+"],
    "mc_node_associate": [_NUM, _NUM],
    "counter_read": [_NAME, _NUM],
    "counter_write": [_NAME, _NUM, _NUM, _NUM],
    "register_read": [_NAME, _NUM],
    "register_write": [_NAME, _NUM, _NUM],
    "register_reset": [_NAME],
    "meter_get_rates": [_NAME, _NUM],
    "meter_set_rates": [_NAME, _NUM, _RATE + "+"],
    "meter_array_set_rates": [_NAME, _RATE + "+"],
}


def _cli(word: str, rest: str, col: int) -> s.CliCommand:
    args = rest.split()
    patterns = _CLI_ARGS[word]
    i = 0
    for pattern in patterns:
        repeat = pattern.endswith("+")
        regex = re.compile(pattern[:-1] if repeat else pattern)
        if i >= len(args) or not regex.fullmatch(args[i]):
            found = repr(args[i]) if i < len(args) else "end of line"
            raise _Error(col, f"{word}: bad argument {i + 1}: {found}")
        i += 1
        while repeat and i < len(args) and regex.fullmatch(args[i]):
            i += 1
    if i != len(args):
        raise _Error(col, f"{word}: unexpected argument {args[i]!r}")
    return s.CliCommand(word, args)
