"""The commands, flags, files and P4 names the documentation shows exist in the code.

Every `fabric-lab`, `p4switch*` and `make` command of README.md, CONTRIBUTING.md, docs/, labs/
and the package READMEs is parsed with the real argparse parsers (nothing that needs root or a
network is run); experiment names and `-p` parameters, fabric names and `--scale` parameters are
resolved as `fabric-lab` resolves them; `make` targets must be in the Makefile; repository paths,
`file:line` citations and `FabricIngress.*`/`FabricEgress.*` names must exist. Commands that run
without root (`show`, `run --list`, `lab list`) are run, and every subcommand's `--help`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.doc_commands import (
    REPO,
    DocCommand,
    all_commands,
    doc_pages,
    extract,
    mininet_lines,
    page_text_lines,
)
from tests.docs.doc_refs import path_problems

BIN = Path(sys.executable).parent


class ArgvError(Exception):
    pass


@contextlib.contextmanager
def raising_parsers() -> Iterator[None]:
    """argparse errors raise ArgvError instead of printing usage and exiting."""
    def error(self: argparse.ArgumentParser, message: str) -> None:
        raise ArgvError(f"{self.prog}: {message}")

    original = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original  # type: ignore[method-assign]


def _subparser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The deepest (sub)parser the leading words of argv name."""
    while argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or argv[0] not in subs[0].choices:
            break
        parser, argv = subs[0].choices[argv[0]], argv[1:]
    return parser


def _unknown_flags(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    known = {opt for action in parser._actions for opt in action.option_strings}
    flags = [tok.split("=", 1)[0] for tok in argv if tok.startswith("-") and tok != "--"]
    return [flag for flag in flags if flag not in known and not re.fullmatch(r"-\d.*", flag)]


def _parse(parser: argparse.ArgumentParser, argv: list[str], inline: bool) -> argparse.Namespace | None:
    """Parse argv; an inline fragment that only lacks operands passes when its flags exist."""
    argv = [tok for tok in argv if tok not in ("-h", "--help")]
    try:
        with raising_parsers():
            return parser.parse_args(argv)
    except ArgvError as err:
        fragment = re.search(r"arguments are required|expected (one|at least one) argument", str(err))
        if not (inline and fragment):
            raise
        sub = _subparser(parser, argv)
        unknown = _unknown_flags(sub, argv)
        if unknown:
            raise ArgvError(f"{sub.prog}: unrecognized arguments: {' '.join(unknown)}") from None
        return None


def check_fabric_lab(command: DocCommand) -> None:
    from experiments.framework import resolve_params
    from experiments.framework.registry import all_experiments
    from fabric_lab.cli import build_parser
    from fabric_lab.labkit import lab
    from topos import FABRICS, build_fabric
    from topos.builders import parse_scale

    args = _parse(build_parser(), list(command.argv[1:]), command.inline)
    if args is None:
        return
    if args.command == "run" and not args.list and (args.experiment or not command.inline):
        experiments = all_experiments()
        if args.experiment not in experiments:
            raise ArgvError(f"unknown experiment {args.experiment!r}")
        experiment = experiments[args.experiment]
        overrides = dict(item.split("=", 1) for item in args.param)
        resolve_params(experiment, args.quick, overrides)
        if args.fabric and experiment.fabrics and args.fabric not in experiment.fabrics:
            raise ArgvError(f"{experiment.name} does not run on {args.fabric}")
    fabric = getattr(args, "fabric", None)
    if args.command in ("show", "up", "lb") and fabric and not fabric.endswith(".json"):
        if fabric not in FABRICS:
            raise ArgvError(f"unknown fabric {fabric!r}")
        build_fabric(fabric, **parse_scale(args.scale))
    if args.command == "lab" and getattr(args, "number", None) is not None:
        lab(args.number)


def check_p4switch(command: DocCommand) -> None:
    """Each command line of it (several switches' are joined by `::`) as the switch parses it."""
    from p4switch.switch.options import main_parser, split_group, target_parser

    for argv in split_group(list(command.argv[1:])):
        main_argv, target_argv = argv, []
        if "--" in argv:
            cut = argv.index("--")
            main_argv, target_argv = argv[:cut], argv[cut + 1:]
        with raising_parsers():
            for parser, part in ((main_parser(), main_argv), (target_parser(), target_argv)):
                _, rest = parser.parse_known_args(part)
                if rest:
                    raise ArgvError(f"{parser.prog}: unrecognized arguments: {' '.join(rest)}")


def check_p4switch_tool(command: DocCommand) -> None:
    from p4switch.cli import compile as compile_cli
    from p4switch.cli import stf as stf_cli

    parser = {"p4switch-compile": compile_cli, "p4switch-stf": stf_cli}[command.argv[0]].build_parser()
    _parse(parser, list(command.argv[1:]), command.inline)


def runtime_cli_commands() -> set[str]:
    from p4switch.runtime.cli_commands import CliInterpreter
    from p4switch.switch.runtime_server import SwitchCommands

    names = {name[3:] for name in dir(CliInterpreter) if name.startswith("do_")}
    return names | set(SwitchCommands.NAMES)


def check_p4switch_cli(command: DocCommand, help_text: str) -> None:
    """p4switch-cli builds its parser inside main(): its flags are read from its --help."""
    argv = list(command.argv[1:])
    flags = set(re.findall(r"(?<![\w-])--?[\w][\w-]*", help_text.split("options:", 1)[-1]))
    assert "--thrift-port" in flags, help_text
    words: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token.startswith("-"):
            if token.split("=", 1)[0] not in flags:
                raise ArgvError(f"p4switch-cli: unrecognized argument {token}")
            skip = "=" not in token
        else:
            words.append(token)
    if words and words[0] not in runtime_cli_commands():
        raise ArgvError(f"p4switch-cli: unknown runtime command {words[0]!r}")


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, flags=re.M))


def check_make(command: DocCommand) -> None:
    targets = [tok for tok in command.argv[1:] if not tok.startswith("-") and "=" not in tok]
    missing = [target for target in targets if target not in make_targets()]
    if missing:
        raise ArgvError(f"make: no target {', '.join(missing)} in the Makefile")


def check(command: DocCommand, cli_help: str = "") -> str | None:
    """None when the command is valid, else why not."""
    program = command.argv[0]
    try:
        if program == "fabric-lab":
            check_fabric_lab(command)
        elif program == "p4switch":
            check_p4switch(command)
        elif program == "p4switch-cli":
            check_p4switch_cli(command, cli_help)
        elif program == "make":
            check_make(command)
        else:
            check_p4switch_tool(command)
    except (ArgvError, ValueError, KeyError) as err:  # parse errors, bad --scale/-p, unknown names
        return f"{command}\n    -> {err}"
    except Exception as err:  # a fabric that fails validation, an unknown lab, ...
        return f"{command}\n    -> {type(err).__name__}: {err}"
    return None


def run_tool(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run an installed command of the project (its console script beside this Python)."""
    script = BIN / argv[0]
    modules = {"fabric-lab": "fabric_lab.cli", "p4switch": "p4switch.cli.switch",
               "p4switch-compile": "p4switch.cli.compile", "p4switch-stf": "p4switch.cli.stf",
               "p4switch-cli": "p4switch.cli.runtime_cli"}
    head = [str(script)] if script.exists() else [sys.executable, "-m", modules[argv[0]]]
    return subprocess.run([*head, *argv[1:]], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def commands() -> list[DocCommand]:
    found = all_commands()
    programs = {command.argv[0] for command in found}
    assert {"fabric-lab", "make", "p4switch", "p4switch-compile"} <= programs, programs
    return found


@pytest.fixture(scope="module")
def cli_help() -> str:
    result = run_tool("p4switch-cli", "--help")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_documented_command_parses(commands: list[DocCommand], cli_help: str) -> None:
    errors = [error for command in commands if (error := check(command, cli_help))]
    assert not errors, "documented commands the CLI rejects:\n" + "\n".join(errors)


def _subcommand_words(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, ...]:
    """The leading words of argv that name (nested) subcommands: ("traffic", "send")."""
    words: list[str] = []
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
        words.append(word)
    return tuple(words)


def test_help_of_every_documented_subcommand(commands: list[DocCommand]) -> None:
    """`--help` of every subcommand the pages use: fabric-lab's in this process (its parser is
    the one the command builds), the other programs as commands."""
    from fabric_lab.cli import build_parser

    parser = build_parser()
    used = {_subcommand_words(parser, list(command.argv[1:])) for command in commands
            if command.argv[0] == "fabric-lab"} - {()}
    assert {("show",), ("up",), ("run",), ("perf",), ("traffic", "send")} <= used, used
    failed = []
    for words in sorted(used):
        help_text = _subparser(parser, list(words)).format_help()
        if not help_text.startswith(f"usage: fabric-lab {' '.join(words)}"):
            failed.append(f"fabric-lab {' '.join(words)} --help: {help_text[:200]}")
    for program in sorted({c.argv[0] for c in commands} - {"fabric-lab", "make"}):
        result = run_tool(program, "--help")
        if result.returncode != 0 or "usage:" not in result.stdout:
            failed.append(f"{program} --help: exit {result.returncode}: {result.stderr[-300:]}")
    assert not failed, "\n".join(failed)


def _dry_run(argv: tuple[str, ...], out: Path) -> list[str] | None:
    """The argv to run for a command that is safe without root and network, else None."""
    if argv[0] != "fabric-lab" or len(argv) < 2:
        return None
    args = list(argv[1:])
    if args[0] == "show" and "--servers" not in args and len(args) > 1 and not args[1].startswith("-"):
        while "--out" in args:
            del args[args.index("--out"):args.index("--out") + 2]
        return [*args, "--out", str(out)]
    if args[:2] in (["run", "--list"], ["lab", "list"]):
        return args
    return None


def test_documented_commands_that_need_no_root_run(commands: list[DocCommand], tmp_path: Path) -> None:
    runs: dict[tuple[str, ...], DocCommand] = {}
    for command in commands:
        argv = _dry_run(command.argv, tmp_path)
        if argv and not check(command):
            runs.setdefault(tuple(argv), command)
    assert any(argv[0] == "show" for argv in runs), "no `fabric-lab show` command found to run"
    from fabric_lab.cli import main

    failed = []
    for argv, command in runs.items():  # in this process: one import for all of them
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(argv))
            except SystemExit as exit_:  # argparse's own exits (usage errors: status 2)
                status = exit_.code if isinstance(exit_.code, int) else 1
        if status != 0:
            failed.append(f"{command}\n    -> exit {status}: {err.getvalue().strip()[-400:]}")
    assert not failed, "\n".join(failed)


def test_makefile_targets_are_found() -> None:
    assert {"setup", "demo", "test", "bench"} <= make_targets()


def test_referenced_files_exist() -> None:
    problems = [problem for page in doc_pages() for problem in path_problems(page)]
    assert not problems, "\n".join(problems)


def _cli_commands(path: Path) -> set[str]:
    return set(re.findall(r"^    def do_(\w+)\(", path.read_text(), flags=re.M))


def test_the_pages_show_the_prompt_the_cli_prints() -> None:
    """`fabric-lab up`'s CLI prompts `fabric>`: no page shows Mininet's `mininet>` for it."""
    cli = (REPO / "topos" / "mininet" / "cli.py").read_text()
    assert 'prompt = "fabric> "' in cli
    shown = [f"{page.relative_to(REPO)}:{number}" for page in doc_pages()
             for number, _ in mininet_lines(page, prompt="mininet>")]
    assert not shown, f"mininet> shown where the prompt is fabric>: {shown}"


def test_mininet_cli_lines_name_real_commands_and_nodes() -> None:
    """`fabric> ...` lines: a command of the lab's CLI (or Mininet's), on nodes a fabric has."""
    from topos import FABRICS, build_fabric

    mininet_cli = pytest.importorskip("mininet.cli")
    commands = _cli_commands(REPO / "topos" / "mininet" / "cli.py")
    assert {"link_fail", "link_restore", "link_drop", "events"} <= commands
    commands |= {name[3:] for name in dir(mininet_cli.CLI) if name.startswith("do_")}
    nodes = {node for name in FABRICS for spec in [build_fabric(name)]
             for node in [*(sw.name for sw in spec.switches), *(nic.name for nic in spec.host_nics())]}
    problems, seen = [], 0
    for page in doc_pages():
        for number, argv in mininet_lines(page):
            seen += 1
            where = f"{page.relative_to(REPO)}:{number}: fabric> {' '.join(argv)}"
            if argv[0] not in commands:
                problems.append(f"{where}: no CLI command {argv[0]!r}")
            elif argv[0] in ("link_fail", "link_restore", "link_drop", "switch_fail", "traffic"):
                names = [tok for tok in argv[1:] if not tok.startswith("-") and not tok.isdigit()]
                unknown = [tok for tok in names[:2] if tok not in nodes]
                if unknown:
                    problems.append(f"{where}: {', '.join(unknown)} in no default fabric")
    assert seen, "no fabric> lines found"
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def p4_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("p4info")
    names: set[str] = set()
    for program in ("ecmp", "flowlet", "dlb", "qdlb"):
        result = run_tool("p4switch-compile", f"p4src/{program}.p4", "-o", str(out))
        assert result.returncode == 0, result.stderr
        names |= set(re.findall(r'name: "([^"]+)"', (out / f"{program}.p4info.txtpb").read_text()))
    return names


def test_p4_names_in_the_pages_exist(p4_names: set[str]) -> None:
    assert "FabricIngress.routing.ipv4_lpm" in p4_names
    problems = []
    for page in doc_pages():
        for number, line in page_text_lines(page):
            for name in re.findall(r"\b(Fabric(?:Ingress|Egress)\.[\w.]*\w)", line):
                if name not in p4_names:
                    problems.append(f"{page.relative_to(REPO)}:{number}: {name} is in no lab program")
    assert not problems, "\n".join(problems)


def test_a_made_up_flag_fails(tmp_path: Path, cli_help: str) -> None:
    page = tmp_path / "made-up.md"
    page.write_text("```sh\nsudo fabric-lab run lb-compare --quick --made-up-flag\n"
                    "fabric-lab show hpn7 --scale no_such_param=3\nmake no-such-target\n"
                    "p4switch -i 1@veth1 --no-p4 -- --made-up-target-flag\n```\n"
                    "Inline: `fabric-lab up FABRIC --made-up`, `fabric-lab run lb-compare -p nope=1`,"
                    " `p4switch-cli --made-up 9090`, `fabric-lab demo --kind nothing`, "
                    "`fabric-lab show --servers` stays a valid fragment.\n")
    found = extract(page)
    assert len(found) == 9, found
    verdicts = [check(command, cli_help) for command in found]
    assert all(verdicts[:8]), verdicts
    assert verdicts[8] is None, verdicts[8]
    assert "--made-up-flag" in verdicts[0] and "no_such_param" in verdicts[1]
    assert "no-such-target" in verdicts[2] and "--made-up-target-flag" in verdicts[3]
    assert "--made-up" in verdicts[4] and "nope" in verdicts[5]


def test_readme_experiment_table_lists_every_experiment() -> None:
    from experiments.framework.registry import all_experiments

    text = (REPO / "README.md").read_text()
    section = text.split("### Experiments", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \|", section, flags=re.M)
    assert sorted(rows) == sorted(all_experiments()), rows
