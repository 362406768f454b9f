"""The package's import map: layers called downwards only, no import circle, short functions.

Read from the source (AST), not by importing it. Every import that can run
counts: at module level (inside ``if``, ``try`` and class bodies too) and inside
functions (run when called: a lazy import back up is still a call up). Only
those under ``if TYPE_CHECKING:`` (never run) are left out. The layer order is
docs/architecture.md's table under "Layers".

Calls that go up without an import statement are looked for too: code that
assigns into another module's attributes (``othermodule.name = ...``, a
callback patched in from above), and registries filled by import side effects
(a module-level dict, list or set of one module that another module's import
fills, directly or through a registering function or decorator).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .docs.project import REPO
from .waiting import run

PACKAGE = REPO / "django_paycharge"
LONGEST_FUNCTION = 50
LAYER_ROW = re.compile(r"^\| (?P<layer>[^|`]+?) \| (?P<paths>(?:`[\w/.]+` ?)+) \|$", re.M)
#: Methods that put something into a container.
FILLS = frozenset({"append", "add", "update", "setdefault", "extend", "insert", "__setitem__"})
#: Calls that make an empty container.
CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter"})


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Each module's dotted name and file (migrations aside)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        inner = getattr(node, name, None)
        if isinstance(inner, list) and all(isinstance(n, ast.stmt) for n in inner):
            yield inner
    for handler in getattr(node, "handlers", ()):
        yield handler.body
    for case in getattr(node, "cases", ()):
        yield case.body


def runs(body: list[ast.stmt], *, calls: bool) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported, nested ones included
    (``calls``: also those that run when one of its functions is called). A ``def`` itself
    runs at import (its decorators); ``if TYPE_CHECKING:`` never does."""
    for node in body:
        if _type_checking(node):
            yield from runs(getattr(node, "orelse", []), calls=calls)
            continue
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not calls:
            continue
        for block in _blocks(node):
            yield from runs(block, calls=calls)


def runs_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that can run: at import, or in a function called."""
    for node in runs(body, calls=True):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def imported(
    module: str, path: Path, node: ast.Import | ast.ImportFrom, known: set[str]
) -> set[str]:
    """The package's modules that ``node`` (in ``module``) imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    base = _base(module, path, node)
    targets: set[str] = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        targets.add(submodule if submodule in known else base)
    return targets & known


def bound_names(
    module: str, path: Path, tree: ast.Module, known: set[str]
) -> dict[str, tuple[str, str | None]]:
    """What each imported name of ``module`` stands for: ``(module, None)`` for a module of
    the package, ``(module, name)`` for a name imported from one."""
    names: dict[str, tuple[str, str | None]] = {}
    for node in runs_at_import(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known and alias.asname:
                    names[alias.asname] = (alias.name, None)
            continue
        base = _base(module, path, node)
        for alias in node.names:
            local = alias.asname or alias.name
            submodule = f"{base}.{alias.name}"
            if submodule in known:
                names[local] = (submodule, None)
            elif base in known:
                names[local] = (base, alias.name)
    return names


@cache
def import_graph(package: Path = PACKAGE) -> dict[str, frozenset[str]]:
    files = module_files(package)
    known = set(files)
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in runs_at_import(tree.body):
            targets |= imported(module, path, node, known)
        graph[module] = frozenset(targets - {module})
    return graph


@dataclass(frozen=True)
class Source:
    """One module read: its tree, and what its imported names stand for."""

    module: str
    tree: ast.Module
    names: dict[str, tuple[str, str | None]]


@cache
def sources(package: Path = PACKAGE) -> dict[str, Source]:
    files = module_files(package)
    known = set(files)
    found: dict[str, Source] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[module] = Source(module, tree, bound_names(module, path, tree, known))
    return found


def resolve(source: Source, node: ast.expr, known: dict[str, Source]) -> tuple[str, str | None]:
    """What ``node`` names in ``source``: ``(module, None)`` for one of the package's modules,
    ``(module, name)`` for a name of one (``("", None)``: neither)."""
    found: tuple[str, str | None] = ("", None)
    if isinstance(node, ast.Name):
        found = source.names.get(node.id, ("", None))
    elif isinstance(node, ast.Attribute):
        module, name = resolve(source, node.value, known)
        if module and name is None:
            submodule = f"{module}.{node.attr}"
            found = (submodule, None) if submodule in known else (module, node.attr)
    return defined(found, known)


def defined(found: tuple[str, str | None], known: dict[str, Source]) -> tuple[str, str | None]:
    """Where a name imported from a module is defined (a package's public name is
    often imported from the module that defines it)."""
    seen: set[tuple[str, str | None]] = set()
    module, name = found
    while name is not None and module in known and (module, name) not in seen:
        seen.add((module, name))
        following = known[module].names.get(name)
        if following is None:
            break
        module, name = following
    return module, name


def _own_expressions(node: ast.stmt) -> Iterator[ast.AST]:
    """The expressions a statement evaluates itself (not its nested blocks, nor lambdas)."""
    pending: list[ast.AST] = []
    for name, value in ast.iter_fields(node):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        pending.extend(v for v in (value if isinstance(value, list) else [value]) if v)
    while pending:
        item = pending.pop()
        if not isinstance(item, ast.AST) or isinstance(item, ast.Lambda):
            continue
        yield item
        pending.extend(ast.iter_child_nodes(item))


def containers(tree: ast.Module) -> set[str]:
    """The module-level names a module binds to a dict, list or set (its possible registries)."""
    found: set[str] = set()
    for node in runs(tree.body, calls=False):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            made = isinstance(value, ast.Dict | ast.List | ast.Set)
            made |= isinstance(value, ast.DictComp | ast.ListComp | ast.SetComp)
            made |= isinstance(value, ast.Call) and ast.unparse(value.func) in CONTAINERS
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if made:
                found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _fills(node: ast.AST) -> ast.expr | None:
    """The container ``node`` puts something into (``x[k] = v``, ``x.append(v)``...), if any."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript):
                return target.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value if node.func.attr in FILLS else None
    return None


def registering_functions(tree: ast.Module) -> set[str]:
    """The module's functions that put something into one of its module-level containers."""
    registries = containers(tree)
    found: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        local = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        local |= {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for inner in ast.walk(node):
            filled = _fills(inner)
            if isinstance(filled, ast.Name) and filled.id in registries - local:
                found.add(node.name)
    return found


def registries_filled_at_import(package: Path = PACKAGE) -> list[str]:
    """Each place where importing one module fills another module's registry: a module-level
    container of that module filled directly, or by a function or decorator of it."""
    known = sources(package)
    registering = {m: registering_functions(s.tree) for m, s in known.items()}
    registries = {m: containers(s.tree) for m, s in known.items()}
    wrong: list[str] = []
    for module, source in sorted(known.items()):
        for statement in runs(source.tree.body, calls=False):
            decorators = getattr(statement, "decorator_list", [])
            for node in [statement, *decorators, *_own_expressions(statement)]:
                filled = _fills(node)
                if filled is not None:
                    owner, name = resolve(source, filled, known)
                    if owner and owner != module and name in registries.get(owner, ()):
                        wrong.append(f"{module} fills {owner}.{name} at import")
                called = node.func if isinstance(node, ast.Call) else node
                if isinstance(called, ast.expr):
                    owner, name = resolve(source, called, known)
                    if owner and owner != module and name in registering.get(owner, ()):
                        wrong.append(f"{module} fills a registry of {owner} at import ({name})")
    return sorted(set(wrong))


def assignments_into_modules(package: Path = PACKAGE) -> list[str]:
    """Each place (at import or in a function) that assigns to another module's attribute:
    ``othermodule.name = ...`` or ``setattr(othermodule, ...)``."""
    known = sources(package)
    wrong: list[str] = []
    for module, source in sorted(known.items()):
        for node in ast.walk(source.tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr" and node.args:
                targets = [ast.Attribute(value=node.args[0], attr="?", ctx=ast.Store())]
            for target in targets:
                if not isinstance(target, ast.Attribute):
                    continue
                owner, name = resolve(source, target.value, known)
                if owner and name is None and owner != module:
                    line = getattr(node, "lineno", 0)
                    wrong.append(f"{module}:{line} assigns {owner}.{target.attr}")
    return wrong


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


def test_no_module_assigns_into_another_module() -> None:
    assert assignments_into_modules() == []


def test_no_registry_is_filled_by_an_import() -> None:
    assert registries_filled_at_import() == []


def plant(root: Path, files: dict[str, str]) -> Path:
    """A small package ``planted`` under ``root`` with ``files`` (path: source); its path."""
    package = root / "planted"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            (package / parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    return package


PLANTED_LAYERS = [("top", ["views/"]), ("bottom", ["models/"])]


def test_an_import_inside_a_function_is_counted(tmp_path: Path) -> None:
    # A lazy import back up: the call goes up when the function runs.
    package = plant(
        tmp_path,
        {
            "views/a.py": "from ..models import b\n",
            "models/b.py": "def later():\n    from ..views import a\n    return a\n",
        },
    )
    assert upward_imports(import_graph(package), PLANTED_LAYERS) == [
        "planted.models.b imports planted.views.a"
    ]
    assert circles(import_graph(package)) == [["planted.models.b", "planted.views.a"]]


def test_an_import_for_type_checkers_only_is_not_counted(tmp_path: Path) -> None:
    package = plant(
        tmp_path,
        {
            "views/a.py": "",
            "models/b.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..views import a\n",
        },
    )
    assert upward_imports(import_graph(package), PLANTED_LAYERS) == []


def test_an_assignment_into_another_module_is_found(tmp_path: Path) -> None:
    # The callback patched in from above: background/dispatch.py did this at import.
    package = plant(
        tmp_path,
        {
            "models/b.py": "hook = None\n",
            "views/a.py": "from ..models import b\n"
            "def on_failure():\n    pass\n"
            "b.hook = on_failure\n"
            "def later():\n    setattr(b, 'hook', None)\n",
        },
    )
    assert assignments_into_modules(package) == [
        "planted.views.a:4 assigns planted.models.b.hook",
        "planted.views.a:6 assigns planted.models.b.?",
    ]
    # Its own attributes, and an object's, are its own business.
    clean = plant(tmp_path / "clean", {"models/b.py": "hook = None\nhook = 1\n"})
    assert assignments_into_modules(clean) == []


def test_a_registry_filled_by_a_decorator_of_another_module_is_found(tmp_path: Path) -> None:
    # As MADE and background_task, KINDS and register: filled only if the module is imported.
    package = plant(
        tmp_path,
        {
            "models/b.py": "MADE: dict[str, object] = {}\n"
            "def made(func):\n    MADE[func.__name__] = func\n    return func\n"
            "@made\ndef own():\n    pass\n",
            "views/a.py": "from ..models.b import made\n@made\ndef task():\n    pass\n",
            "views/c.py": "from ..models import b\nKIND = b.made(object())\n",
            "views/d.py": "from ..models import b\ndef later():\n    b.made(object())\n",
            # Through the package's public name: found where it is defined.
            "models/__init__.py": "from .b import made\n",
            "views/e.py": "from ..models import made\n@made\ndef other():\n    pass\n",
        },
    )
    assert registries_filled_at_import(package) == [
        "planted.views.a fills a registry of planted.models.b at import (made)",
        "planted.views.c fills a registry of planted.models.b at import (made)",
        "planted.views.e fills a registry of planted.models.b at import (made)",
    ]


def test_a_registry_filled_directly_by_another_module_is_found(tmp_path: Path) -> None:
    package = plant(
        tmp_path,
        {
            "models/b.py": "KINDS = {}\nHOOKS = list()\nKINDS['own'] = 1\n",
            "views/a.py": "from ..models import b\nb.KINDS['create'] = object()\n",
            "views/c.py": "from ..models.b import HOOKS\nHOOKS.append(print)\n",
        },
    )
    assert registries_filled_at_import(package) == [
        "planted.views.a fills planted.models.b.KINDS at import",
        "planted.views.c fills planted.models.b.HOOKS at import",
    ]


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
