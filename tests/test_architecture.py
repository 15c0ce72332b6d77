"""The layering the design promises, checked on the source with ``ast``.

* no import cycles among the modules of ``exact`` and ``proofs``, imports inside
  functions included;
* ``proofs`` imports nothing from ``exact`` (``exact`` may use ``proofs``, never both ways);
* certificates, the command line and ``verify`` find learners through the registry
  and import no learner module;
* ``exact/linalg.py`` is the one module that touches flint matrices;
* the arithmetics (``exact/arith``) and the threshold oracle stand below certificates:
  nothing they import, directly or through other modules, is ``exact.certify``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("exact", "proofs")
LEARNER_MODULES = ("exact.learn",)  # the package and everything below it
FLINT_MATRICES = {"fmpq_mat", "fmpz_mat", "arb_mat", "acb_mat", "nmod_mat", "fmpz_mod_mat"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """The modules of this project an ``import from`` names (imports anywhere in the file)."""
    if node.level:
        base = module.split(".") if _is_package(module) else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in MODULES else target)
    return [t for t in out if t in MODULES]


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):  # every import, at module level or inside a function
        if isinstance(node, ast.ImportFrom):
            found.update(_resolve(module, node))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for k in range(len(parts), 0, -1):
                    if ".".join(parts[:k]) in MODULES:
                        found.add(".".join(parts[:k]))
                        break
    found.discard(module)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_lazy_imports():
    # exact.counterexample imports proofs inside a function, and exact.cli it: the graph must see both
    assert "proofs.multihead" in GRAPH["exact.counterexample"]
    assert "exact.counterexample" in GRAPH["exact.cli"]
    assert len(MODULES) > 30


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_proofs_never_imports_exact():
    offenders = {m: sorted(t for t in GRAPH[m] if t.split(".")[0] == "exact") for m in MODULES if m.startswith("proofs")}
    assert {m: t for m, t in offenders.items() if t} == {}


def _learners(targets) -> list[str]:
    return sorted(t for t in targets if any(t == p or t.startswith(p + ".") for p in LEARNER_MODULES))


@pytest.mark.parametrize("module", ["exact.certify", "exact.cli", "exact.registry", "exact.io"])
def test_no_learner_module_is_imported_by(module):
    assert _learners(GRAPH[module]) == []


def test_verify_imports_no_learner_module():
    for m in MODULES:
        if m.startswith("exact.verify"):
            assert _learners(GRAPH[m]) == [], m


def test_certify_source_names_no_learner():
    text = (ROOT / "exact" / "certify.py").read_text()
    assert ".learn" not in text.replace("learner", "")


def test_only_linalg_touches_flint_matrices():
    users = []
    for m, path in MODULES.items():
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "flint" for a in n.names}
        attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                 and n.value.id == "flint"}
        if (names | attrs) & FLINT_MATRICES:
            users.append(m)
    assert users == ["exact.linalg"]


def _reachable(module: str) -> set[str]:
    """Every module ``module`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for t in GRAPH[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


BELOW_CERTIFICATES = sorted(m for m in MODULES if m == "exact.arith" or m.startswith("exact.arith.")) + ["exact.threshold"]


def test_the_reachability_finds_indirect_imports():
    assert "exact.expfield" in _reachable("exact.arith.certified")  # through exact.oracles
    assert "exact.certify" in _reachable("exact.cli")
    assert len(BELOW_CERTIFICATES) == 6  # the package, base, certified, floating, symbolic; threshold


@pytest.mark.parametrize("module", BELOW_CERTIFICATES)
def test_the_arithmetics_and_the_threshold_oracle_do_not_import_certificates(module):
    assert "exact.certify" not in _reachable(module)


def test_the_equality_predicates_live_with_exact_answers():
    import exact.certify
    import exact.oracles

    assert exact.certify.answer_equals is exact.oracles.answer_equals  # re-exported for compatibility
    assert exact.certify.answer_equals_logistic is exact.oracles.answer_equals_logistic
    assert {"answer_equals", "answer_equals_logistic"} <= set(exact.oracles.__all__)
