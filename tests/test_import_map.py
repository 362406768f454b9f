"""The package's import map: layers called downwards only, no import circle, short functions.

Read from the source (AST), not by importing it. Only imports that run when a
module is imported count: those at module level (inside ``if``, ``try`` and
class bodies too). Imports inside functions run later, when they are called,
and those under ``if TYPE_CHECKING:`` never run; both are left out. The layer
order is docs/architecture.md's table under "Layers".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from .docs.project import REPO
from .waiting import run

PACKAGE = REPO / "django_paycharge"
LONGEST_FUNCTION = 50
LAYER_ROW = re.compile(r"^\| (?P<layer>[^|`]+?) \| (?P<paths>(?:`[\w/.]+` ?)+) \|$", re.M)


def module_files() -> dict[str, Path]:
    """Each module's dotted name and file (migrations aside)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def runs_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module is imported."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # runs when called
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from runs_at_import(node.orelse)  # the branch for type checkers never runs
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        for name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from runs_at_import(inner)


def imported(
    module: str, path: Path, node: ast.Import | ast.ImportFrom, known: set[str]
) -> set[str]:
    """The package's modules that ``node`` (in ``module``) imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    targets: set[str] = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        targets.add(submodule if submodule in known else base)
    return targets & known


@cache
def import_graph() -> dict[str, frozenset[str]]:
    files = module_files()
    known = set(files)
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in runs_at_import(tree.body):
            targets |= imported(module, path, node, known)
        graph[module] = frozenset(targets - {module})
    return graph


def layers() -> list[tuple[str, list[str]]]:
    """docs/architecture.md's layers, top first: (name, path prefixes under django_paycharge/)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    return [
        (row["layer"], re.findall(r"`([\w/.]+)`", row["paths"]))
        for row in LAYER_ROW.finditer(section)
    ]


def layer_of(module: str, table: list[tuple[str, list[str]]]) -> int | None:
    """The index (0: top) of the layer with the longest path matching ``module``."""
    relative = module.split(".", 1)[1].replace(".", "/") if "." in module else ""
    best: tuple[int, int] | None = None
    for index, (_, paths) in enumerate(table):
        for prefix in paths:
            if prefix.endswith("/"):
                hit = (relative + "/").startswith(prefix)
            else:  # a module; a package's __init__.py is the package itself
                hit = relative == prefix.removesuffix(".py").removesuffix("__init__").rstrip("/")
            if hit and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def upward_imports(
    graph: dict[str, frozenset[str]], table: list[tuple[str, list[str]]]
) -> list[str]:
    wrong = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            above, below = layer_of(module, table), layer_of(target, table)
            if above is None or below is None or below < above:
                wrong.append(f"{module} imports {target}")
    return wrong


def circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Each import circle (a strongly connected set of modules), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == module:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def long_functions(limit: int) -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    where = path.relative_to(REPO)
                    found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return found


def test_every_module_has_a_layer() -> None:
    table = layers()
    assert len(table) >= 5, "docs/architecture.md's layer table was not found"
    unplaced = [module for module in import_graph() if layer_of(module, table) is None]
    assert unplaced == [], f"add these to docs/architecture.md's layers: {unplaced}"


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports(import_graph(), layers()) == []


def test_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_no_function_is_longer_than_the_limit() -> None:
    assert long_functions(LONGEST_FUNCTION) == []


def test_the_checks_find_planted_defects() -> None:
    # Each check on a small graph with the defect in it: they cannot pass vacuously.
    table = [("top", ["views/"]), ("bottom", ["models/"])]
    graph: dict[str, frozenset[str]] = {
        "django_paycharge.views.a": frozenset(),
        "django_paycharge.models.b": frozenset(),
    }
    assert upward_imports(graph, table) == []
    graph["django_paycharge.models.b"] = frozenset({"django_paycharge.views.a"})
    assert upward_imports(graph, table) == [
        "django_paycharge.models.b imports django_paycharge.views.a"
    ]
    graph["django_paycharge.views.a"] = frozenset({"django_paycharge.models.b"})
    assert circles(graph) == [["django_paycharge.models.b", "django_paycharge.views.a"]]
    assert long_functions(1)  # every function is longer than one line


#: Packages a shop installs only with the extra or database that needs them.
OPTIONAL = ("psycopg", "psycopg2", "celery", "rq", "prometheus_client", "opentelemetry")


def test_the_app_imports_on_sqlite_without_any_optional_package(tmp_path: Path) -> None:
    """A shop on SQLite with no extra: every module its settings load imports (the demo
    broke when the PostgreSQL writer imported psycopg at the top of the mirror)."""
    import os
    import sys

    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in OPTIONAL)
    code = (
        f"import sys; {blocked}\n"
        "import django; django.setup()\n"
        "import django_paycharge.services, django_paycharge.admin, django_paycharge.tasks\n"
        "import django_paycharge.periodic, django_paycharge.views.webhooks\n"
        "from django.core.management import call_command\n"
        "call_command('check')\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PAYCHARGE_TEST_DB": "sqlite"}
    done = run(
        [sys.executable, "-c", code], "check without the optional packages", cwd=REPO, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
