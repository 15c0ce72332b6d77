"""The Coq proofs under ``proofs/coq/``: compiled by ``coqc`` and audited for their axioms.

The sympy proofs of this package reduce identities to zero on the expressions they build.
The ``.v`` files prove the same statements, and the correctness of Theorem 4.1's decoding
and Proposition 7.1, over Coq's real numbers, for every dimension, sequence length and head
count, and a small trusted kernel checks them.  :func:`check_coq` compiles every file in a
temporary copy (so no build products land in the source tree), then runs
``Print Assumptions`` on each main theorem and fails on

- a file ``coqc`` rejects;
- ``Admitted``, ``admit``, ``Axiom`` or another way to assume a statement, in the text
  outside comments;
- any axiom beyond :data:`STANDARD_AXIOMS`, the ones Coq's real numbers rest on.

Without ``coqc`` the check is skipped and says why; :func:`coq_status` caches one check per
process.

Examples
--------
>>> THEOREMS["logit"]
('logit_primitive', 'logit_inverse')
>>> forbidden_commands("Lemma x : True. Proof. (* admit *) exact I. Qed.")
()
>>> forbidden_commands("Lemma x : False. Proof. admit. Admitted.")
('admit', 'Admitted')
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .coq_spec import STATEMENTS

__all__ = [
    "COQ_DIR", "FILES", "THEOREMS", "STANDARD_AXIOMS", "CoqTheorem", "CoqCheck",
    "coqc_path", "coq_version", "check_coq", "coq_status", "forbidden_commands",
]

#: Where the ``.v`` files are.
COQ_DIR = Path(__file__).with_name("coq")
#: The logical name the files import each other under (``From ExactAttention Require Import Defs``).
LOGICAL_NAME = "ExactAttention"
#: Every file, in dependency order.
FILES = ("Defs", "logit", "decoding", "multihead", "token_copy", "oddness", "transformer", "lemma_a1", "biases")
#: The main theorems of each file: the ones pinned in :mod:`proofs.coq_spec` and audited.
THEOREMS: dict[str, tuple[str, ...]] = {}
for _file, _name, _ in STATEMENTS:
    THEOREMS.setdefault(_file, ())
    THEOREMS[_file] += (_name,)
#: The axioms Coq 8.16's real numbers rest on.  ``Rdefinitions`` builds ℝ from Dedekind cuts
#: with the first two (deciding a sequence of propositions, and double negation on decidable
#: ones) and uses functional extensionality; the standard library's proofs about ``ln`` and the
#: mean value theorem add the excluded middle, ``classic``.
STANDARD_AXIOMS = frozenset({
    "ClassicalDedekindReals.sig_forall_dec",
    "ClassicalDedekindReals.sig_not_dec",
    "FunctionalExtensionality.functional_extensionality_dep",
    "Classical_Prop.classic",
})

#: Commands that assume instead of proving, switch a check of the kernel off, or change what a
#: statement's text means (notations, coercions, implicit arguments, options exported to the audit).
_FORBIDDEN = re.compile(
    r"\b(Admitted|admit|Admit|Axiom|Axioms|Parameter|Parameters|Conjecture|Hypothesis|Hypotheses|Variable"
    r"|Variables|Context|Unset|Declare|Load|LoadPath|Typing|bypass_check|Notation|Infix|Coercion|Arguments"
    r"|Global|Export|Delimit|Bind|Module|Include|Extraction|Program|Obligation|Obligations|Instance|Class"
    r"|Canonical|Existing|Structure|Record|Set|Definitional|UIP|Local|Polymorphic|Monomorphic|Time|Timeout"
    r"|Redirect|Function|Variant|Scheme|Register|Primitive)\b|#\[")
#: The commands that name something, for the check that no two files define the same name.
_DEFINES = re.compile(r"(?:^|\.)\s*(?:Definition|Fixpoint|CoFixpoint|Inductive|CoInductive|Theorem|Lemma|Corollary"
                      r"|Proposition|Fact|Remark|Example|Let|Ltac)\s+([A-Za-z_][\w']*)")
_MARK = "==> "


def _strip_comments(text: str) -> str:
    """``text`` without its Coq comments (which nest) and with its string literals emptied, in one
    pass that lexes as Coq does: a string inside a comment is a string, so ``"*)"`` there closes nothing."""
    out, depth, i, n = [], 0, 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while j < n and not (text[j] == '"' and text[j + 1:j + 2] != '"'):
                j += 2 if text[j] == '"' else 1  # "" is an escaped quote
            if not depth:
                out.append('""')
            i = j + 1
        elif text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def forbidden_commands(text: str) -> tuple[str, ...]:
    """The commands in ``text``, outside comments and strings, that the Coq files may not use.

    Besides the ways to assume a statement (``Axiom``, ``Admitted``, ``Variable`` and their kin,
    inside a section too, where they would become silent premises), this refuses switching a
    kernel check off (``Unset``, ``bypass_check``), loading other code (``Load``, ``Declare``),
    and anything that changes what the text of a statement means once the file is imported
    (``Notation``, ``Coercion``, ``Arguments``, ``Global`` options, modules).
    """
    return tuple(m.group(0) for m in _FORBIDDEN.finditer(_strip_comments(text)))


def defined_names(text: str) -> tuple[str, ...]:
    """The names ``text`` defines (definitions, fixpoints, inductives, theorems, tactics), in order.

    >>> defined_names("Definition a := 1. (* Lemma b *) Lemma c : True. Proof. exact I. Qed.")
    ('a', 'c')
    """
    return tuple(m.group(1) for m in _DEFINES.finditer(_strip_comments(text)))


@dataclass(frozen=True)
class CoqTheorem:
    """One audited theorem: its file, its name, and the axioms ``Print Assumptions`` listed for the
    file's main theorems taken together (one walk of the library per file, not per theorem)."""

    file: str
    name: str
    axioms: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return f"{self.file}.{self.name}"

    @property
    def standard(self) -> bool:
        """It rests on the standard real-number axioms only."""
        return set(self.axioms) <= STANDARD_AXIOMS


@dataclass(frozen=True)
class CoqCheck:
    """What checking the Coq files gave.

    ``status`` is ``"checked"`` (every file compiled, no admits, only standard axioms),
    ``"failed"`` (``reason`` says which file and why) or ``"skipped"`` (no ``coqc``).
    """

    status: str
    reason: str = ""
    version: str = ""
    seconds: float = 0.0
    files: tuple[str, ...] = ()
    theorems: tuple[CoqTheorem, ...] = ()

    @property
    def checked(self) -> bool:
        return self.status == "checked"

    @property
    def axioms(self) -> tuple[str, ...]:
        """Every axiom any audited theorem rests on, sorted."""
        return tuple(sorted({a for t in self.theorems for a in t.axioms}))

    def theorem(self, qualified: str) -> CoqTheorem | None:
        """The audited theorem ``FILE.NAME``, or ``None``."""
        return next((t for t in self.theorems if t.qualified == qualified), None)

    def summary(self) -> str:
        """One line: checked by which Coq, on which axioms; or why not."""
        if self.status == "checked":
            return (f"Coq {self.version}: {len(self.files)} files, {len(self.theorems)} theorems checked in "
                    f"{self.seconds:.1f} s; axioms: {', '.join(self.axioms) or 'none'}")
        return f"Coq: {self.status}, {self.reason}"


def coqc_path() -> str | None:
    """The ``coqc`` to run: ``$EXACT_ATTENTION_COQC`` if set, else the one on ``PATH``, else ``None``."""
    chosen = os.environ.get("EXACT_ATTENTION_COQC")
    return shutil.which(chosen) if chosen else shutil.which("coqc")


def coq_version(coqc: str) -> str:
    """The version ``coqc --version`` reports (e.g. ``"8.16.1"``)."""
    out = subprocess.run([coqc, "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"version\s+(\S+)", out)
    return found.group(1) if found else out.strip()


def _spec_copy(kind: str, name: str, text: str) -> str:
    """A pinned definition's text, renamed ``spec__NAME`` (and so its recursive calls, for a Fixpoint)."""
    head, _, rest = text.partition(f"{kind} {name}")
    if head or not rest:
        raise ValueError(f"a pinned definition must start with '{kind} {name}', got {text[:60]!r}")
    if kind == "Fixpoint":
        rest = re.sub(rf"\b{re.escape(name)}\b", f"spec__{name}", rest)
    return f"{kind} spec__{name}{rest}."


def _audit_source(files, names) -> tuple[str, list[tuple[int, str]]]:
    """The audit file: the pins of :mod:`proofs.coq_spec` for ``files``, then a marker and
    ``Print Assumptions`` for each theorem of ``names``; and ``(line, what)`` of each pin."""
    from .coq_spec import CONSTRUCTORS, DEFINITIONS, RESOLVES

    lines = [f"From {LOGICAL_NAME} Require Import {' '.join(files)}.",
             # the standard library last, so that no file's name can stand for one of its names
             "From Coq Require Import Reals Lra Lia List Permutation Relations.",
             "Import ListNotations.", "Open Scope R_scope."]
    where: list[tuple[int, str]] = []

    def add(text: str, what: str) -> None:
        where.append((len(lines) + 1, what))
        lines.append(" ".join(text.split()))

    project = {f"{LOGICAL_NAME}.{f}." for f in files}
    for name, path in RESOLVES.items():
        if not path.startswith(f"{LOGICAL_NAME}.") or any(path.startswith(p) for p in project):
            add(f"Goal True. constr_eq (@{name}) (@{path}). exact I. Qed.",
                f"the name {name} does not stand for {path} (a file shadows it)")
    for file, text in DEFINITIONS:
        if file in files:
            kind, name = text.split()[:2]
            add(_spec_copy(kind, name, text), f"the pinned copy of {file}.{name}")
            add(f"Lemma pin__{name} : {LOGICAL_NAME}.{file}.{name} = spec__{name}. Proof. reflexivity. Qed.",
                f"{file}.{name} is not the pinned definition")
    for file, name, statement in STATEMENTS:
        if file in files:
            add(f"Definition pin__{file}__{name} : {statement} := {LOGICAL_NAME}.{file}.{name}.",
                f"{file}.{name} does not prove the pinned statement")
    for file, name, statement in CONSTRUCTORS:
        if file in files:
            add(f"Definition pin__{name} : {statement} := {LOGICAL_NAME}.{file}.{name}.",
                f"{file}.{name} is not the pinned constructor")
    # one Print Assumptions per file, on the tuple of its main theorems (each costs a walk of ℝ's library)
    for file in dict.fromkeys(f for f, _ in names):
        members = ", ".join(f"{LOGICAL_NAME}.{f}.{t}" for f, t in names if f == file)
        lines += [f"Definition audit__{file} := ({members}).",
                  f'Goal True. idtac "{_MARK}{file}". exact I. Qed.',
                  f"Print Assumptions audit__{file}."]
    return "\n".join(lines) + "\n", where


def _failed_pin(stderr: str, where) -> str:
    """What the audit's first error is about: the pin on the line ``coqc`` names."""
    found = re.search(r'line (\d+)', stderr)
    line = int(found.group(1)) if found else -1
    what = next((w for n, w in where if n == line), "the axiom audit does not run")
    return f"{what}: {' '.join(stderr.split())[:500]}"


def _parse_audit(out: str) -> dict[str, tuple[str, ...]]:
    """``{FILE: assumptions}`` from the audit's output: a marker line, then what Print Assumptions printed.

    Only three kinds of line are understood: ``Axioms:``, ``Closed under the global context``, and an
    assumption, ``NAME : TYPE`` or a bare ``NAME`` (its type indented below).  Indented lines continue
    the one before.  Any other line (such as "X relies on definitional UIP") is kept whole as an
    assumption, so it can never pass as a standard axiom.
    """
    found: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith(_MARK):
            current = line[len(_MARK):].strip()
            found[current] = []
        elif current is None or not line.strip() or line[0].isspace():
            continue
        elif line.strip() in ("Axioms:", "Closed under the global context"):
            continue
        else:
            named = re.fullmatch(r"([A-Za-z_][\w'.]*)(\s+:.*)?", line.rstrip())
            found[current].append(named.group(1) if named else line.strip())
    return {k: tuple(v) for k, v in found.items()}


def check_coq(*, source: Path | str | None = None, files=FILES, audit: bool = True, coqc: str | None = None,
              timeout: float = 600.0) -> CoqCheck:
    """Compile the Coq files of ``source`` (default :data:`COQ_DIR`) and audit their theorems.

    Parameters
    ----------
    source : path, optional
        A directory holding the ``.v`` files (a modified copy, to see a false variant fail).
    files : sequence of str
        The files to compile, in dependency order (default all of :data:`FILES`).
    audit : bool
        Run ``Print Assumptions`` on the main theorems of the files compiled.
    coqc : str, optional
        The ``coqc`` executable (default :func:`coqc_path`).
    timeout : float
        Seconds allowed for each ``coqc`` run.

    Returns
    -------
    CoqCheck
    """
    coqc = coqc or coqc_path()
    if coqc is None:
        return CoqCheck("skipped", "coqc not found (install Coq 8.16: apt-get install coq)")
    src = Path(COQ_DIR if source is None else source)
    unknown = [f for f in files if f not in FILES]
    if unknown:
        raise ValueError(f"unknown Coq files {unknown}; the files are {list(FILES)}")
    version, start = coq_version(coqc), time.perf_counter()
    owner: dict[str, str] = {}
    for name in files:
        if not (src / f"{name}.v").is_file():
            return CoqCheck("failed", f"{name}.v is missing from {src.name}/", version)
        text = (src / f"{name}.v").read_text(encoding="utf-8")
        bad = forbidden_commands(text)
        if bad:
            return CoqCheck("failed", f"{name}.v uses commands the proofs may not use: {', '.join(dict.fromkeys(bad))}",
                            version)
        for defined in defined_names(text):
            if owner.setdefault(defined, name) != name:
                # a second definition would stand for the first in the pinned statements
                return CoqCheck("failed", f"{name}.v defines {defined} again (it is defined in {owner[defined]}.v)",
                                version)
    def failed(reason: str, theorems=()) -> CoqCheck:
        return CoqCheck("failed", reason, version, time.perf_counter() - start, tuple(files), tuple(theorems))

    def run(target: str):
        try:
            return subprocess.run([coqc, "-Q", ".", LOGICAL_NAME, target], cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    theorems: tuple[CoqTheorem, ...] = ()
    with tempfile.TemporaryDirectory(prefix="exact-attention-coq-") as tmp:
        for name in files:
            shutil.copyfile(src / f"{name}.v", Path(tmp, f"{name}.v"))
        for name in files:
            done = run(f"{name}.v")
            if done is None:
                return failed(f"{name}.v did not check within {timeout:g} s")
            if done.returncode != 0:
                return failed(f"{name}.v does not check: {' '.join((done.stderr or done.stdout).split())[:600]}")
        names = [(f, t) for f in files if f in THEOREMS for t in THEOREMS[f]]
        if audit:
            source_text, where = _audit_source(files, names)
            Path(tmp, "Audit.v").write_text(source_text, encoding="utf-8")
            done = run("Audit.v")
            if done is None:
                return failed(f"the audit did not finish within {timeout:g} s")
            if done.returncode != 0:
                return failed(_failed_pin(done.stderr or done.stdout, where))
            parsed = _parse_audit(done.stdout)
            missing = [f for f in dict.fromkeys(f for f, _ in names) if f not in parsed]
            if missing:
                return failed(f"the audit printed nothing for {', '.join(missing)}")
            theorems = tuple(CoqTheorem(f, t, parsed[f]) for f, t in names)
    seconds = time.perf_counter() - start
    extra = [f"{t.qualified} rests on {', '.join(sorted(set(t.axioms) - STANDARD_AXIOMS))}"
             for t in theorems if not t.standard]
    if extra:
        return CoqCheck("failed", "non-standard axioms: " + "; ".join(extra), version, seconds, tuple(files),
                        theorems)
    return CoqCheck("checked", "", version, seconds, tuple(files), theorems)


@functools.lru_cache(maxsize=1)
def coq_status() -> CoqCheck:
    """:func:`check_coq` of the shipped files, once per process."""
    return check_coq()
