"""The commands of the documentation (README.md and docs/*.md), read the way docs/README.md ("Commands in these
pages") defines: fenced blocks with their language and marker, the commands in them, and a check of each command
against the parser of the program it calls. tests/test_docs.py runs the checks."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(run|illustrative(?::\s*(.*?))?)\s*-->\s*$")
COMMAND_LANGS = {"bash", "console"}
OPERATORS = {";", "&&", "||", "|", "&"}
NO_CHECK = {"cd", "echo", ".", "source", "ls", "cat", "mkdir", "git", "tar"}  # shell plumbing: nothing to check
WRAPPERS = {"env": {"-u"}, "time": set(), "/usr/bin/time": {"-o", "-f"}, "nice": {"-n"}, "nohup": set()}  # + valued options


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None = None  # "run", "illustrative" or None (checked)
    reason: str = ""  # an illustrative block's reason
    next_text: str | None = None  # the text of the block right after this one when that is a `text` block

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass
class Command:
    text: str  # as written, continuation lines joined
    output: list[str] = field(default_factory=list)  # a console command's output lines

    def pipeline(self) -> list[list[str]]:
        """The simple commands of the line (split at ; && || |), each as argv, comments dropped."""
        lex = shlex.shlex(self.text, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#"
        parts, current = [], []
        for token in lex:
            if token in OPERATORS:
                parts.append(current)
                current = []
            else:
                current.append(token)
        parts.append(current)
        return [p for p in parts if p]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, lang = len(match.group(1)), match.group(2)
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            line = lines[i]
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())  # a list item's block
            i += 1
        i += 1
        block = Block(path, start + 1, lang, "\n".join(body))
        previous = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        if marker := MARKER.match(previous):
            block.marker = "run" if marker.group(1) == "run" else "illustrative"
            block.reason = (marker.group(2) or "").strip()
        if found and found[-1].next_text is None and lang == "text" and _adjacent(lines, found[-1], start):
            found[-1].next_text = block.text
        found.append(block)
    return found


def _adjacent(lines: list[str], block: Block, start: int) -> bool:
    """Whether the block that opens at ``start`` follows ``block`` with only blank lines between them."""
    end = next(k for k in range(block.line, len(lines)) if re.match(r"^\s*```\s*$", lines[k]))
    return all(not line.strip() for line in lines[end + 1:start])


def all_blocks() -> list[Block]:
    return [b for path in doc_files() for b in blocks(path)]


def commands(block: Block) -> list[Command]:
    """The commands of a ``bash`` block (every logical line) or a ``console`` block (every ``$ `` line, with the
    output lines that follow it)."""
    logical, current = [], None
    for line in block.text.split("\n"):
        if current is not None:  # a continuation line
            current[0] += " " + line.strip().removesuffix("\\")
            if not line.rstrip().endswith("\\"):
                current = None
            continue
        if block.lang == "console" and not line.startswith("$ "):
            if logical:
                logical[-1][1].append(line)
            continue
        text = line[2:] if block.lang == "console" else line
        entry = [text.rstrip().removesuffix("\\"), []]
        if text.strip():
            logical.append(entry)
        if text.rstrip().endswith("\\"):
            current = entry
    return [Command(text.strip(), output) for text, output in logical if text.strip()]


# ---------------------------------------------------------------------------------------------------- checks


def unwrap(argv: list[str]) -> list[str]:
    """The command under ``VAR=value``, ``env [-u NAME]``, ``time [-v]``, ``nice [-n N]`` and ``nohup``."""
    while argv:
        head = argv[0]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", head):
            argv = argv[1:]
        elif head in WRAPPERS:
            argv = argv[1:]
            while argv and argv[0].startswith("-"):
                argv = argv[1 + (argv[0] in WRAPPERS[head]):]  # an option, and its value where it takes one
        else:
            break
    return argv


def check(argv: list[str]) -> str | None:
    """None when ``argv`` is a valid command of a program these docs know, else why not."""
    argv = unwrap(argv)
    if not argv or argv[0] in NO_CHECK:
        return None
    head = argv[0]
    if head in ("python", "python3"):
        if argv[1:3] == ["-m", "xeval"]:
            return check_xeval(argv[3:])
        if argv[1:3] == ["-m", "venv"]:
            return None
        if argv[1:3] == ["-m", "pip"]:
            return check_pip(argv[3:])
        if argv[1:3] == ["-m", "pytest"]:
            return check_pytest(argv[3:])
        if len(argv) > 1 and argv[1].startswith("bench/"):
            return check_bench(argv[1], argv[2:])
    if head == "xeval":
        return check_xeval(argv[1:])
    if head == "torchrun":
        return check_torchrun(argv[1:])
    if head == "pip":
        return check_pip(argv[1:])
    if head.startswith(".ci/") and head.endswith(".sh"):  # the project's own CI scripts: they exist, take no args
        script = ROOT / head
        if not script.is_file() or not os.access(script, os.X_OK):
            return f"{head}: no such executable script in the repository"
        return f"{shlex.join(argv)}: .ci scripts take no arguments (settings are CI_* variables)" if argv[1:] else None
    return (f"{shlex.join(argv)}: not a command tests/helpers/doc_commands.py knows how to check; mark the block "
            "<!-- illustrative: why --> or teach it")


def check_xeval(args: list[str]) -> str | None:
    from xeval.cli import build_parser

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(args)
        except SystemExit as stop:
            if stop.code not in (0, None):
                return f"xeval {shlex.join(args)}: {err.getvalue().strip().splitlines()[-1]}"
    return None


def check_torchrun(args: list[str]) -> str | None:
    from torch.distributed.run import get_args_parser

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            parsed = get_args_parser().parse_args(args)
        except SystemExit:
            return f"torchrun {shlex.join(args)}: {err.getvalue().strip().splitlines()[-1]}"
    if not (parsed.module and parsed.training_script == "xeval"):
        return f"torchrun {shlex.join(args)}: expected torchrun [options] -m xeval VERB ..."
    return check_xeval(list(parsed.training_script_args))


@functools.cache
def ci_torch_version() -> str:
    return re.search(r"torch==([\w.+]+)", (ROOT / ".ci" / "run").read_text(encoding="utf-8")).group(1)


@functools.cache
def extras() -> frozenset[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(project.get("optional-dependencies", {}))


def check_pip(args: list[str]) -> str | None:
    if not args or args[0] != "install":
        return f"pip {shlex.join(args)}: only pip install is checked"
    for arg in args[1:]:
        if (version := re.fullmatch(r"torch==(\S+)", arg)) and version.group(1) != ci_torch_version():
            return f"{arg}: .ci/run installs torch=={ci_torch_version()}"
        if wanted := re.fullmatch(r"(?:\.|xeval)\[([\w,-]+)\]", arg):
            unknown = set(wanted.group(1).split(",")) - extras()
            if unknown:
                return f"{arg}: pyproject.toml defines no extra {', '.join(sorted(unknown))}"
    return None


def check_pytest(args: list[str]) -> str | None:
    for arg in args:
        if not arg.startswith("-") and "/" in arg and not (ROOT / arg.split("::")[0]).exists():
            return f"pytest {arg}: no such test path"
    return None


@functools.cache
def bench_help(script: str) -> str:
    proc = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    return proc.stdout if proc.returncode == 0 else ""


def check_bench(script: str, args: list[str]) -> str | None:
    if not (ROOT / script).is_file():
        return f"{script}: no such script"
    usage = bench_help(script)
    if not usage:
        return f"{script} --help failed"
    for arg in args:
        option = arg.split("=", 1)[0]
        if option.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", usage):
            return f"{script}: its --help lists no option {option}"
    return None


# ---------------------------------------------------------------------------------------------------- anchors


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but - and _ dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^\s*```.*?^\s*```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*$", text, flags=re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out
