"""Proposition 7.1 on an instance: a different multi-head parameterisation with the same map, proved.

The ``counterexample`` command's work, as a result that describes itself: the model A (drawn
or read), the construction B of the chosen family (``split``, ``zero``, ``permute`` or
``mixed``), the symbolic proof that they define the same map for every sequence length
(:mod:`proofs.multihead`), and both maps decided exactly on random inputs.

>>> c = counterexample(MultiHead.random(2, 2, seed=1), kind="split", seed=1, inputs=1)
>>> c.holds, c.proof.verified, c.evaluations[0]["equal"]
(True, True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import InvalidArgument
from .multihead import MultiHead
from .numbers import format_rational

__all__ = ["Counterexample", "counterexample", "as_multi_head", "random_model", "MAX_HEADS", "MAX_D"]

MAX_HEADS = 64
MAX_D = 16


def random_model(d: int, H: int, *, seed: int = 0) -> MultiHead:
    """The random multi-head model A the command starts from (``MultiHead.random``)."""
    return MultiHead.random(d, H, seed=seed)


def as_multi_head(model, *, where: str) -> MultiHead:
    """``model`` if it is a multi-head model (the family of Proposition 7.1), else a clear error."""
    if not isinstance(model, MultiHead):
        raise InvalidArgument(f"{where}: expected a multi-head model, got a {type(model).__name__}")
    if model.biased:
        raise InvalidArgument(f"{where}: the families of Proposition 7.1 are built and proved for bias-free heads, and "
                              "this model has biases (a c_h or b nonzero); drop them (c_h = 0, b = 0) to build its "
                              "counterexamples")
    return model


@dataclass(frozen=True)
class Counterexample:
    """Two parameterisations, the proof that their maps agree, and exact evaluations of both."""

    kind: str
    A: MultiHead
    B: MultiHead
    proof: Any
    evaluations: tuple

    @property
    def holds(self) -> bool:
        """The proof holds and every evaluation is equal."""
        return bool(self.proof.verified) and all(e["equal"] for e in self.evaluations)

    def to_json(self) -> dict:
        return {"kind": self.kind, "A": self.A.to_json(), "B": self.B.to_json(), "proof": self.proof.to_json(),
                "evaluations": list(self.evaluations)}

    def rows(self) -> list[str]:
        out = []
        for name, m in (("A", self.A), (f"B ({self.kind})", self.B)):
            out.append(f"Model {name}: d={m.d}, H={m.H}")
            for h, head in enumerate(m.heads):
                W = "; ".join(", ".join(format_rational(x) for x in row) for row in head.W)
                out.append(f"  head {h + 1}: W = [{W}]  v = [{', '.join(format_rational(x) for x in head.v)}]")
        p = self.proof
        out.append(f"\n{p.name}: {'PROVED' if p.verified else 'NOT PROVED'}: {p.statement}")
        out += [f"  {i}. {step}" for i, step in enumerate(p.steps, 1)]
        if self.evaluations:
            out.append("\nExact evaluation on random inputs:")
        for e in self.evaluations:
            verdict = "equal (decided exactly)" if e["equal"] else "DIFFERENT"
            out.append(f"  N={len(e['X'])}: f_A = {e['f_A']}…  f_B = {e['f_B']}…  {verdict}")
        return out


def counterexample(A: MultiHead, *, kind: str = "mixed", seed: int = 0, inputs: int = 3) -> Counterexample:
    """Build B from ``A`` by the family ``kind``, prove ``A ≡ B``, and decide both on ``inputs`` random sequences."""
    from proofs.multihead import construct, prove_equivalent

    A = as_multi_head(A, where="model")
    if A.H > MAX_HEADS or A.d > MAX_D:
        raise InvalidArgument(f"counterexample: the symbolic proof supports d <= {MAX_D} and H <= {MAX_HEADS}, "
                              f"got d={A.d}, H={A.H}")
    B = construct(A, kind, seed=seed + 1)
    proof = prove_equivalent(A, B)
    rng = random.Random(seed)
    evaluations = []
    for _ in range(inputs):
        N = 1 + rng.randrange(6)
        X = [[Fraction(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(A.d)] for _ in range(N)]
        fa, fb = A.exact(X), B.exact(X)
        evaluations.append({"X": [[format_rational(x) for x in row] for row in X],
                            "f_A": fa.ball(128).str(25, radius=False), "f_B": fb.ball(128).str(25, radius=False),
                            "equal": fa == fb})
    return Counterexample(kind, A, B, proof, tuple(evaluations))
