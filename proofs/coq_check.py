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
>>> sorted(THEOREMS)[:3]
['decoding', 'lemma_a1', 'logit']
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
#: The main theorems of each file: the ones ``Print Assumptions`` audits.
THEOREMS = {
    "logit": ("logit_primitive", "logit_inverse"),
    "decoding": ("theorem_4_1_decoding", "theorem_4_1_spec_plan", "theorem_4_1_learner_plan", "queries_count"),
    "multihead": ("F_canon", "same_canon_same_map", "split_family", "zero_family", "permutation_family",
                  "combination_family", "merge_is_not_canonical"),
    "token_copy": ("token_copy",),
    "oddness": ("attention_odd",),
    "transformer": ("transformer_odd_part", "transformer_one_token"),
    "lemma_a1": ("lemma_a1", "lemma_a1_constant", "L_const_value", "lemma_a1_not_4"),
    "biases": ("bias_normal_form", "score_normal_form", "value_normal_form"),
}
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

_FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture|Hypothesis|Hypotheses"
                        r"|Variable|Variables|Context)\b")
_SECTION = re.compile(r"\b(Section|End)\s+([A-Za-z_][\w']*)\s*\.")
_MARK = "==> "


def _strip_comments(text: str) -> str:
    """``text`` without its Coq comments (which nest) and string literals."""
    out, depth, i = [], 0, 0
    while i < len(text):
        pair = text[i:i + 2]
        if pair == "(*":
            depth, i = depth + 1, i + 2
        elif pair == "*)" and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return re.sub(r'"[^"]*"', '""', "".join(out))


def forbidden_commands(text: str) -> tuple[str, ...]:
    """The commands in ``text`` (outside comments) that assume rather than prove.

    ``Variable`` and its kin are allowed inside a ``Section`` only, where closing the
    section turns them into arguments of every definition that uses them.
    """
    found = []
    code = _strip_comments(text)
    depth = 0
    events = sorted([(m.start(), "section", m.group(1)) for m in _SECTION.finditer(code)]
                    + [(m.start(), "word", m.group(1)) for m in _FORBIDDEN.finditer(code)])
    for _, kind, word in events:
        if kind == "section":
            depth += 1 if word == "Section" else -1
        elif word in ("Variable", "Variables", "Context") and depth > 0:
            continue
        else:
            found.append(word)
    return tuple(found)


@dataclass(frozen=True)
class CoqTheorem:
    """One audited theorem: its file, its name and the axioms ``Print Assumptions`` listed."""

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


def _audit_source(names) -> str:
    lines = [f"From {LOGICAL_NAME} Require {' '.join(sorted({file for file, _ in names}))}."]
    for file, theorem in names:
        lines += [f'Goal True. idtac "{_MARK}{file}.{theorem}". exact I. Qed.',
                  f"Print Assumptions {file}.{theorem}."]
    return "\n".join(lines) + "\n"


def _parse_audit(out: str) -> dict[str, tuple[str, ...]]:
    """``{FILE.NAME: axioms}`` from the audit's output (a marker line, then what Print Assumptions printed)."""
    found: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith(_MARK):
            current = line[len(_MARK):].strip()
            found[current] = []
        elif current is not None and line and not line[0].isspace():
            word = line.split()[0]
            if word not in ("Axioms:", "Closed") and not line.startswith("Closed under"):
                found[current].append(word)
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
    for name in files:
        if not (src / f"{name}.v").is_file():
            return CoqCheck("failed", f"{name}.v is missing from {src.name}/", version)
        bad = forbidden_commands((src / f"{name}.v").read_text(encoding="utf-8"))
        if bad:
            return CoqCheck("failed", f"{name}.v assumes instead of proving: {', '.join(dict.fromkeys(bad))}",
                            version)
    with tempfile.TemporaryDirectory(prefix="exact-attention-coq-") as tmp:
        for name in files:
            shutil.copyfile(src / f"{name}.v", Path(tmp, f"{name}.v"))
        for name in files:
            run = subprocess.run([coqc, "-Q", ".", LOGICAL_NAME, f"{name}.v"], cwd=tmp, capture_output=True,
                                 text=True, timeout=timeout)
            if run.returncode != 0:
                message = (run.stderr or run.stdout).strip().splitlines()
                return CoqCheck("failed", f"{name}.v does not check: {' '.join(message)[:600]}", version,
                                time.perf_counter() - start, tuple(files))
        theorems: tuple[CoqTheorem, ...] = ()
        names = [(f, t) for f in files if f in THEOREMS for t in THEOREMS[f]]
        if audit and names:
            Path(tmp, "Audit.v").write_text(_audit_source(names), encoding="utf-8")
            run = subprocess.run([coqc, "-Q", ".", LOGICAL_NAME, "Audit.v"], cwd=tmp, capture_output=True,
                                 text=True, timeout=timeout)
            if run.returncode != 0:
                return CoqCheck("failed", f"the axiom audit does not run: {run.stderr.strip()[:600]}", version,
                                time.perf_counter() - start, tuple(files))
            parsed = _parse_audit(run.stdout)
            missing = [f"{f}.{t}" for f, t in names if f"{f}.{t}" not in parsed]
            if missing:
                return CoqCheck("failed", f"the audit printed nothing for {', '.join(missing)}", version,
                                time.perf_counter() - start, tuple(files))
            theorems = tuple(CoqTheorem(f, t, parsed[f"{f}.{t}"]) for f, t in names)
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
