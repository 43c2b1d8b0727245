"""The README and the pages in docs/ show commands that run and links that lead somewhere.

Every line of a ```bash block that starts with `trainsizer ` (a trailing `# comment` stripped, `\\` continuations
joined) runs through typer's CliRunner on `trainsizer.cli.app`, in a temporary folder that sees the repository's
`examples/` and `validation/`, and must exit 0, or 2 where its comment says the command is refused. A page's commands
run in order in one folder, so a file one command writes (`calibration.yaml`) is there for the next. The placeholder
files the pages name (`job.yaml`, `my-cases.yaml`, ...) are made from the repository's examples. Commands that need a
GPU, a network, a long run or a file only a real run writes are skipped, each for its reason in SKIPPED. A printed
answer pasted under a one-command block (the README's answer card) must be what that command prints. Every relative
link of every page must name a file that exists, and a `#fragment` a heading of that file.
"""

from __future__ import annotations

import re
import shlex
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.errors import InputError

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*```\s*([\w+-]*)\s*$")
REFUSED = re.compile(r"\brefused\b|\bexit(?:s)? 2\b")  # a comment that says the command is refused

# What a page's placeholder files are made of (paths relative to the repository).
PLACEHOLDERS = {
    "my-cases.yaml": "validation/cases/memory.yaml",  # measured cases in the FORMAT.md case format
    "probe-cases.yaml": "validation/cases/memory.yaml",  # what `probe memory` appends, same format
}
# job.yaml: a complete scenario (estimate and plan both take it) with the tokens to train (plan --deadline needs them)
JOB = "examples/llama-3.1-8b-lora-4090.yaml"
TOKENS = 2.0e8
# A catalog patch as docs/guide-scenarios.md shows one: the shipped entry with one market's availability changed.
MY_GPUS = """accelerators:
  - id: h200-sxm-141gb
    availability:
      cn:
        buy: {status: "yes", reason: "our integrator holds a licence", source: "quote Q-17", as_of: "2026-11-20"}
"""

# (the command's leading words, or the whole command) -> why it is not run here. The first match wins.
SKIPPED: list[tuple[tuple[str, ...], str]] = [
    (("validate",), "replays every shipped case (~10 min on two cores); tests/conftest.shipped_validation runs "
                   "`trainsizer validate --view user --json`"),
    (("probe", "memory", "job.yaml", "--simulate"),
     "builds an 8B model under fake tensors (minutes of CPU); tests/test_probe_memory.py simulates small models"),
    (("probe", "memory"), "needs a CUDA GPU: without one `probe memory` refuses (tests/test_probe_safety.py)"),
    (("probe", "profile", "--trace"), "needs trace.json, a Kineto trace of the user's own run"),
    (("probe", "profile", "--"), "runs the user's own training script (train.py) on a GPU"),
    (("probe", "profile"), "needs a CUDA GPU: without one `probe profile` refuses (tests/test_probe_safety.py)"),
    (("probe", "comm"), "needs two or more GPUs under torchrun (tests/test_probe_comm.py runs gloo on the CPU)"),
    (("estimate", "job.yaml", "--catalog", "links.yaml"), "needs links.yaml, written by `probe comm` on GPUs"),
    (("burnin", "--backend", "fake"), "a 30-second run; tests/test_burnin.py runs the fake backend for a few seconds"),
    (("burnin", "report"), "needs rack1.db, the database of a burn-in on real GPUs"),
    (("burnin", "--resume"), "needs rack1.db, the database of a burn-in on real GPUs"),
    (("burnin",), "runs for minutes to days on real GPUs (NVML)"),
    (("serve",), "starts a web server that runs until stopped; tests/test_web*.py drive the app"),
]


@dataclass(frozen=True)
class Block:
    lang: str
    lines: tuple[str, ...]
    start: int  # the line number of its opening fence, from 1


@dataclass(frozen=True)
class Command:
    page: Path
    line: str  # as the page shows it, continuations joined
    args: tuple[str, ...]  # after `trainsizer`
    refused: bool  # its comment says it is refused (exit 2)

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}: {self.line}"


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order."""
    found, lang, body, start = [], None, [], 0
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if lang is None and match:
            lang, body, start = match.group(1).lower(), [], number
        elif lang is not None and line.strip() == "```":
            found.append(Block(lang, tuple(body), start))
            lang = None
        elif lang is not None:
            body.append(line)
    return found


def commands_of(page: Path, block: Block) -> list[Command]:
    """The `trainsizer ...` commands of a shell block, `\\` continuations joined."""
    joined, current = [], ""
    for line in block.lines:
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
        else:
            joined.append(" ".join((current + line).split()))
            current = ""
    out = []
    for line in joined:
        if not line.startswith("trainsizer "):
            continue
        words = shlex.split(line, comments=True)
        comment = line.split(" #", 1)[1] if " #" in line else ""
        out.append(Command(page, line, tuple(words[1:]), bool(REFUSED.search(comment))))
    return out


def page_commands(page: Path) -> list[Command]:
    return [c for b in blocks(page.read_text(encoding="utf-8")) if b.lang in SHELL for c in commands_of(page, b)]


def _names_case_files(command: Command) -> bool:
    """Whether ``validate`` is given case files (replayed here) rather than none (every shipped case)."""
    return any(a.endswith((".yaml", ".yml")) for a in command.args[1:])


def skip_reason(command: Command) -> str | None:
    for words, reason in SKIPPED:
        if command.args[:len(words)] == words and (words != ("validate",) or not _names_case_files(command)):
            return reason
    return None


def _unique() -> dict[Path, list[Command]]:
    """Each page's commands, a command shown again (on that page or an earlier one) left out: it ran already."""
    seen: set[tuple[str, ...]] = set()
    per_page: dict[Path, list[Command]] = {}
    for page in PAGES:
        per_page[page] = []
        for command in page_commands(page):
            if command.args not in seen:
                seen.add(command.args)
                per_page[page].append(command)
    return per_page


COMMANDS = _unique()


def _workdir(tmp_path: Path) -> Path:
    """A folder that sees the repository's examples and cases, with the pages' placeholder files in it."""
    for name in ("examples", "validation"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    for name, source in PLACEHOLDERS.items():
        shutil.copyfile(REPO / source, tmp_path / name)
    job = yaml.safe_load((REPO / JOB).read_text(encoding="utf-8"))
    job["training"]["tokens"] = TOKENS
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    (tmp_path / "my-gpus.yaml").write_text(MY_GPUS, encoding="utf-8")
    return tmp_path


def run(command: Command) -> tuple[int, str]:
    """Exit code and output of one command, as the console entry point would exit (an InputError is exit 2)."""
    env = {} if "--lang" in command.args else {"TRAINSIZER_LANG": "en"}
    result = CliRunner().invoke(app, list(command.args), env=env)
    if isinstance(result.exception, InputError):  # main() prints it on one line and exits 2
        return 2, f"{result.output}{result.exception}"
    if result.exit_code not in (0, 2) and result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_the_pages_show_commands_and_each_is_run_or_skipped_for_a_reason():
    every = [c for page in PAGES for c in page_commands(page)]
    assert len(every) >= 30, "the pages show fewer commands than expected: is the fence parsing broken?"
    shown = {page.name for page in PAGES if page_commands(page)}
    assert {"README.md", "guide-scenarios.md", "guide-planning.md", "guide-report-web.md", "guide-probes.md",
            "accuracy.md", "zh-CN.md"} <= shown, shown
    ran = [c for cs in COMMANDS.values() for c in cs if skip_reason(c) is None]
    assert len(ran) >= 20, [str(c) for c in ran]


@pytest.mark.parametrize("page", [p for p in PAGES if COMMANDS[p]], ids=lambda p: p.name)
def test_every_command_a_page_shows_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(_workdir(tmp_path))
    failures, skipped = [], []
    for command in COMMANDS[page]:
        reason = skip_reason(command)
        if reason:
            skipped.append(f"{command.line}: {reason}")
            continue
        code, output = run(command)
        expected = 2 if command.refused else 0
        if code != expected:
            failures.append(f"{command} exited {code}, expected {expected}:\n{output[-2000:]}")
    assert not failures, "\n\n".join(failures)


def _squeezed(text: str) -> str:
    """Text without whitespace: a card re-wrapped for the page (or by the terminal's width) still matches."""
    return "".join(text.split())


def printed_answers() -> list[tuple[Command, list[str]]]:
    """A plain block right after a shell block of one command: what that command prints, in parts between `...`."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        lines = text.splitlines()
        found_blocks = blocks(text)
        for before, after in zip(found_blocks, found_blocks[1:], strict=False):
            between = lines[before.start + len(before.lines) + 1:after.start - 1]
            commands = commands_of(page, before) if before.lang in SHELL else []
            if after.lang in ("", "text") and len(commands) == 1 and not any(s.strip() for s in between):
                parts, current = [], []
                for line in after.lines:
                    if line.strip() in ("...", "…"):
                        parts.append("\n".join(current))
                        current = []
                    else:
                        current.append(line)
                parts.append("\n".join(current))
                found.append((commands[0], [p for p in parts if p.strip()]))
    return found


def test_the_answer_cards_the_pages_paste_are_what_the_commands_print(tmp_path, monkeypatch):
    monkeypatch.chdir(_workdir(tmp_path))
    answers = printed_answers()
    assert {c.page.name for c, _ in answers} >= {"README.md", "zh-CN.md"}
    for command, parts in answers:
        code, output = run(command)
        assert code == 0, output
        printed = _squeezed(output)
        for part in parts:
            assert _squeezed(part) in printed, (
                f"{command}: the page's pasted output is not what the command prints now; paste it again.\n"
                f"page:\n{part}\n\nprinted:\n{output[:3000]}")


# ---- links --------------------------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose(text: str) -> str:
    """The text outside fenced blocks and inline code (a link inside code is no link)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped (letters of any script kept),
    each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())  # a link: its text
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside fenced blocks)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6} ", line):
            found.add(anchor(line.lstrip("#")))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_that_exists(page):
    text = _prose(page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading '#{fragment}' in {file.name}")
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door():
    """One screen: the two set-up commands and a real answer in CNY; the rest is in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    first_screen = "\n".join(lines[:45])
    assert "pip install -e . && trainsizer estimate" in first_screen
    assert "pip install -e '.[test]' && python3 -m pytest" in first_screen
    assert "this is what CI runs, `.ci/run`" in first_screen
    assert re.search(r"Answer: .* CNY a run", first_screen)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m pytest" in ci
