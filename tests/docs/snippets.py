"""The documentation's code blocks, each with what a reader does with it.

Every fenced block in README.md, CONTRIBUTING.md and docs/*.md carries an HTML
comment just above it, invisible on GitHub and in the built site, which tells
the tests what to do with it:

- ``<!-- docs-test: install -->``: ``pip install`` lines; checked (the package
  and its extras exist), not run: the package under test is this checkout,
  already installed in the test's virtualenv;
- ``<!-- docs-test: env -->``: ``export NAME=value`` lines, the environment of
  everything run afterwards;
- ``<!-- docs-test: append FILE -->`` / ``<!-- docs-test: file FILE -->``: add
  the block to FILE, or write FILE with it (``settings.py`` and ``urls.py`` are
  the project's own, from ``startproject``);
- ``<!-- docs-test: shell -->``: run it with bash in the project, as it is;
- ``<!-- docs-test: background NAME -->``: start it with bash and leave it
  running (the fake gateway, ``runserver``) until the test ends;
- ``<!-- docs-test: worker NAME -->``: the same for a process that listens on
  no port (a queue's worker, Celery beat), run by tests/queues;
- ``<!-- docs-test: not run: REASON -->``: samples of output, synopses,
  excerpts whose whole is run elsewhere, a contributor's commands.

Ports: the docs say 8765 for the fake gateway, 8000 for the shop and 6379 for
Redis; the tests replace them with free ports (Redis: the tests' own server),
and change nothing else.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

# Fences may be indented (in a list item): they count, and need their marker too.
FENCE = re.compile(r"^[ \t]*```", re.M)
MARKED = re.compile(
    r"<!-- docs-test: (?P<spec>.*?) -->[ \t]*\n[ \t]*```(?P<lang>[\w-]*)[^\n]*\n"
    r"(?P<body>.*?)^[ \t]*```",
    re.S | re.M,
)
ACTIONS = {"install", "env", "append", "file", "shell", "background", "worker", "not"}


@dataclass(frozen=True)
class Snippet:
    """One marked code block: what to do (``action`` and its ``target``), and the code."""

    doc: str
    line: int
    action: str
    target: str
    lang: str
    body: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} ({self.action} {self.target})".strip()


def snippets(path: Path, root: Path) -> list[Snippet]:
    """The marked blocks of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in MARKED.finditer(text):
        action, _, target = match.group("spec").strip().partition(" ")
        found.append(
            Snippet(
                doc=str(path.relative_to(root)),
                line=text.count("\n", 0, match.start()) + 1,
                action=action,
                target=target.strip(),
                lang=match.group("lang"),
                body=textwrap.dedent(match.group("body")),
            )
        )
    return found


def unmarked_blocks(path: Path) -> int:
    """How many fenced blocks of ``path`` have no marker (0 when every one has)."""
    text = path.read_text(encoding="utf-8")
    return len(FENCE.findall(text)) // 2 - len(MARKED.findall(text))


def exports(body: str) -> dict[str, str]:
    """``export NAME=value  # comment`` lines as a dict."""
    env = {}
    for line in body.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("export "):
            for pair in line.removeprefix("export ").split():
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def pip_requirements(body: str) -> list[str]:
    """The requirements of ``pip install`` lines (quotes removed)."""
    found = []
    for line in body.splitlines():
        words = line.split(" #", 1)[0].split()
        if words[:2] == ["pip", "install"]:
            found += [w.strip("\"'") for w in words[2:] if not w.startswith("-")]
    return found
