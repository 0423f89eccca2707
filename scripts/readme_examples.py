#!/usr/bin/env python3
"""Runs every example command of the READMEs, as shown, from the repository root.

The examples are read from the Markdown itself, so there is no second list to
drift: every fenced block whose language is `sh` (```sh; `bash` and
`shell` too) is a list of commands, one per line (a trailing backslash continues a line; `#` lines are
comments). The blocks of a file run in order, each in one bash process (state
such as background jobs lasts for the block), so a later example may use what
an earlier one wrote, as a reader following the README would. Each command
must exit 0; a command ending in `&` runs in the background and its status is
checked when the block ends (after the block's own `wait`, if it has one).

Markers: an HTML comment (invisible on GitHub) on the lines just before a
block changes how it runs:

  <!-- readme-examples: skip (REASON) -->
      not run (printed with its reason); still syntax-checked with `bash -n`,
      and the repository scripts it calls must exist.
  <!-- readme-examples: runs-until-interrupted [SECONDS] -->
      each command runs for SECONDS (default 3), then gets SIGINT, and must
      then exit 0 (tickgate's commands stop cleanly on SIGINT/SIGTERM).

The unmarked blocks of bench/README.md and tests/fuzz/README.md (benchmarks,
fuzzing: long runs all) count as skipped, see SKIPPED_FILES.

Output: a trailing comment `# → TEXT` on a command means its stdout must
contain TEXT.

The commands say `build/` (where scripts/test.sh builds). With --build-dir
DIR, `build/` at the start of a word is replaced by DIR, so that a test run
from another build directory uses its own binaries (and writes its files
there). Nothing leaves the machine: the tools send multicast only on 127.x
with TTL 0, and the examples' metrics endpoint listens on 127.0.0.1.

usage: scripts/readme_examples.py [--build-dir DIR] [--list] [FILE.md ...]
exit: 0 every example ran as shown, 1 an example failed, 2 a marker or usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Every README.md of the repository (build trees and .git aside): a new one is covered without a list to edit.
DEFAULT_FILES = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("README.md")
                       if not any(part.startswith(("build", ".git")) for part in p.relative_to(REPO).parts))
# Files whose unmarked blocks are long runs by nature (a marker in the file
# still applies to its block). Printed like any other skipped block.
SKIPPED_FILES = {
    "bench/README.md": "benchmarks: minutes each, meant for a quiet machine (bench/run.sh)",
    "tests/fuzz/README.md": "fuzzing: minutes to hours (tests/fuzz/run.sh; CI: scripts/check.sh fuzz)",
}
COMMAND_LANGUAGES = {"sh", "bash", "shell"}
BLOCK_TIMEOUT_S = 60
DEFAULT_INTERRUPT_AFTER_S = 3
MARKER = re.compile(r"^\s*<!--\s*readme-examples:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
EXPECTED_OUTPUT = "→"


class MarkupError(Exception):
    pass


@dataclasses.dataclass
class Command:
    line: int       # README line of its first physical line
    text: str       # as shown (continuations joined, comment kept)
    code: str       # without the trailing comment
    expect: str | None
    background: bool


@dataclasses.dataclass
class Block:
    file: str
    line: int       # line of the opening fence
    body: str
    commands: list[Command]
    skip: str | None = None            # reason
    interrupt_after: float | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def split_comment(line: str) -> tuple[str, str | None]:
    """Splits a shell line into code and trailing comment (outside quotes)."""
    quote = None
    escaped = False
    for i, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), None


def parse_commands(file: str, first_line: int, lines: list[str]) -> list[Command]:
    commands = []
    i = 0
    while i < len(lines):
        start = i
        text = lines[i].rstrip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        code, comment = split_comment(text.strip())
        expect = None
        if comment and comment.startswith(EXPECTED_OUTPUT):
            expect = comment[len(EXPECTED_OUTPUT):].strip()
            if not expect:
                raise MarkupError(f"{file}:{first_line + start}: `# {EXPECTED_OUTPUT}` without the text to expect")
        background = code.endswith("&") and not code.endswith("&&")
        if background:
            code = code[:-1].rstrip()
        commands.append(Command(first_line + start, text.strip(), code, expect, background))
    return commands


def apply_marker(block: Block, marker: str) -> None:
    if m := re.fullmatch(r"skip\s*\((.+)\)", marker):
        block.skip = m.group(1).strip()
    elif m := re.fullmatch(r"runs-until-interrupted(?:\s+(\d+(?:\.\d+)?))?", marker):
        block.interrupt_after = float(m.group(1) or DEFAULT_INTERRUPT_AFTER_S)
        for c in block.commands:
            # timeout(1) prefixes one simple command; a pipeline or list would
            # leave part of it outside.
            if c.background or re.search(r"[|;&(){}]", re.sub(r"'[^']*'|\"[^\"]*\"", "", c.code)):
                raise MarkupError(f"{block.file}:{c.line}: a runs-until-interrupted block holds simple commands only")
    else:
        raise MarkupError(f"{block.where}: unknown marker `readme-examples: {marker}` "
                          "(skip (REASON) | runs-until-interrupted [SECONDS])")


def read_blocks(file: str) -> list[Block]:
    lines = (REPO / file).read_text(encoding="utf-8").splitlines()
    blocks = []
    markers: dict[int, str] = {}  # line -> marker text, until a block claims it
    i = 0
    while i < len(lines):
        if m := MARKER.match(lines[i]):
            markers[i + 1] = m.group(1)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, mark, language = fence.groups()
        close = re.compile(r"^\s*" + re.escape(mark[0]) + "{" + str(len(mark)) + r",}\s*$")
        start = i
        i += 1
        body = []
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        # The marker that belongs to this block: the last one before it, with
        # only blank lines in between.
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = markers.pop(before + 1, None)
        if language not in COMMAND_LANGUAGES:
            if marker is not None:
                raise MarkupError(f"{file}:{before + 1}: marker before a `{language or 'plain'}` block, not an sh block")
            continue
        block = Block(file, start + 1, "\n".join(body), parse_commands(file, start + 2, body))
        if marker is not None:
            apply_marker(block, marker)
        elif file in SKIPPED_FILES:
            block.skip = SKIPPED_FILES[file]
        blocks.append(block)
    if markers:
        line = min(markers)
        raise MarkupError(f"{file}:{line}: marker `{markers[line]}` is not just before an sh block")
    return blocks


def sq(s: str) -> str:
    return shlex.quote(s)


def with_build_dir(code: str, build_prefix: str | None) -> str:
    if build_prefix is None:
        return code
    return re.sub(r"(?<![\w./~-])build/", lambda _: build_prefix, code)


def block_script(block: Block, build_prefix: str | None) -> str:
    """The bash script that runs a block, reporting the first failure by README line."""
    out = [
        "set -o pipefail",
        # One stream, so that a failure report lands next to the output it follows.
        "exec </dev/null 2>&1",
        'rx_tmp=$(mktemp -d)',
        "trap 'rm -rf \"$rx_tmp\"' EXIT",
        "rx_failed() {  # WHERE WHAT COMMAND",
        "  printf '\\nreadme-examples: FAILED %s: %s: %s\\n' \"$1\" \"$2\" \"$3\"",
        "  [ \"${2#exit 127}\" = \"$2\" ] || printf 'readme-examples: (exit 127: a program is missing; "
        "scripts/setup.sh installs what the README needs)\\n'",
        "  exit 1",
        "}",
        "rx_check_output() {  # FILE TEXT WHERE COMMAND",
        "  grep -qF -- \"$2\" \"$1\" || rx_failed \"$3\" \"stdout lacks the text the README shows: $2\" \"$4\"",
        "}",
    ]
    background = []
    for n, c in enumerate(block.commands):
        where = sq(f"{block.file}:{c.line}")
        code = with_build_dir(c.code, build_prefix)
        if block.interrupt_after is not None:
            code = f"timeout -k 5 -s INT --preserve-status {block.interrupt_after:g} {code}"
        out.append(f"printf '\\n$ %s\\n' {sq(c.text)}")
        capture = f" > \"$rx_tmp/out.{n}\"" if c.expect else ""
        if c.background:
            out += ["{ {", code, f"}}{capture}", f"echo $? > \"$rx_tmp/status.{n}\"", "} &"]
            background.append((n, c))
            continue
        out += ["{", code, f"}}{capture}", "rx_status=$?"]
        if c.expect:
            out.append(f"cat \"$rx_tmp/out.{n}\"")
        out.append(f"[ $rx_status -eq 0 ] || rx_failed {where} \"exit $rx_status\" {sq(c.text)}")
        if c.expect:
            out.append(f"rx_check_output \"$rx_tmp/out.{n}\" {sq(c.expect)} {where} {sq(c.text)}")
    out.append("wait")
    for n, c in background:
        where = sq(f"{block.file}:{c.line}")
        out.append(f"rx_status=$(cat \"$rx_tmp/status.{n}\" 2>/dev/null || echo 'no status')")
        if c.expect:
            out.append(f"cat \"$rx_tmp/out.{n}\"")
        out.append(f"[ \"$rx_status\" = 0 ] || rx_failed {where} \"exit $rx_status (in the background)\" {sq(c.text)}")
        if c.expect:
            out.append(f"rx_check_output \"$rx_tmp/out.{n}\" {sq(c.expect)} {where} {sq(c.text)}")
    return "\n".join(out) + "\n"


def end_process_group(proc: subprocess.Popen) -> None:
    """Stops whatever a block left running: its own process group, nothing else."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader: a zombie still counts as a member
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def run_block(block: Block, build_prefix: str | None) -> bool:
    proc = subprocess.Popen(["bash", "-c", block_script(block, build_prefix)], cwd=REPO,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        status = proc.wait(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"\nreadme-examples: FAILED {block.where}: the block did not finish within {BLOCK_TIMEOUT_S} s",
              flush=True)
        status = None
    finally:
        end_process_group(proc)
        proc.wait()
    return status == 0


def static_check(block: Block) -> list[str]:
    """For blocks not run: bash syntax, and the repository scripts they call exist."""
    problems = []
    syntax = subprocess.run(["bash", "-n"], input=block.body, text=True, capture_output=True)
    if syntax.returncode != 0:
        problems.append(f"{block.where}: bash -n: {syntax.stderr.strip()}")
    for c in block.commands:
        try:
            words = shlex.split(c.code, comments=True)
        except ValueError:  # unbalanced quotes: bash -n has reported it
            continue
        while words and re.fullmatch(r"\w+=.*", words[0]):
            words.pop(0)
        if words and "/" in words[0] and not re.match(r"(/|build[^/]*/)", words[0]):
            if not (REPO / words[0]).exists():
                problems.append(f"{block.file}:{c.line}: {words[0]}: no such file in the repository")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", help="the build directory the examples' `build/` stands for (default: build)")
    parser.add_argument("--list", action="store_true", help="list the examples and how each would run, run none")
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES, help=f"Markdown files (default: {DEFAULT_FILES})")
    args = parser.parse_args()

    build_prefix = None
    if args.build_dir:
        build = Path(args.build_dir).resolve()
        if build != REPO / "build":
            build_prefix = (os.path.relpath(build, REPO) if build.is_relative_to(REPO) else str(build)) + "/"
            print(f"readme-examples: `build/` in the commands is {build_prefix}", flush=True)

    try:
        blocks = [b for f in args.files for b in read_blocks(f)]
    except (MarkupError, OSError) as e:
        print(f"readme-examples: {e}", file=sys.stderr)
        return 2

    failed: list[str] = []
    # Issue 26 item 4: examples ran only inside the workspace they were
    # written in, reading ../shared/...; a clone elsewhere has no such
    # folder, and here one exists, so running them would not tell.
    for f in args.files:
        for n, line in enumerate((REPO / f).read_text(encoding="utf-8").splitlines(), 1):
            if "../shared" in line:
                print(f"readme-examples: FAILED {f}:{n}: a ../shared path (keep the data in the repository)", flush=True)
                failed.append(f"{f}:{n}")
    ran = skipped = commands = 0
    started = time.monotonic()
    for block in blocks:
        if block.skip is not None:
            skipped += 1
            print(f"readme-examples: skip {block.where}: {block.skip}", flush=True)
            for line in block.body.splitlines():
                print(f"    {line}")
            problems = static_check(block)
            for p in problems:
                print(f"readme-examples: FAILED {p}", flush=True)
            if problems:
                failed.append(block.where)
            continue
        how = (f"each command interrupted after {block.interrupt_after:g} s"
               if block.interrupt_after is not None else "as shown")
        count = f"{len(block.commands)} command{'s' if len(block.commands) != 1 else ''}"
        print(f"\n=== {block.where}: {count}, {how}", flush=True)
        ran += 1
        commands += len(block.commands)
        if args.list:
            for c in block.commands:
                print(f"    {c.line}: {c.text}")
            continue
        t0 = time.monotonic()
        ok = run_block(block, build_prefix)
        print(f"=== {block.where}: {'ok' if ok else 'FAILED'} in {time.monotonic() - t0:.1f} s", flush=True)
        if not ok:
            failed.append(block.where)

    print(f"\nreadme-examples: {ran} blocks ({commands} commands) {'to run' if args.list else 'run'}, {skipped} skipped, "
          f"{len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    if failed:
        print("readme-examples: failed: " + ", ".join(failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
