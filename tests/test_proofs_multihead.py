"""Proposition 7.1 (SPEC §3.8): multi-head non-identifiability, proved for every N.

The acceptance of :mod:`proofs.multihead`: every construction gives different parameters
with the same map (proved, and checked exactly on random inputs), the fully symbolic
families are proved without substituting numbers, and non-equivalent pairs are refuted
by a witness that is re-checked independently.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction

import mpmath
import pytest
import sympy

from exact.canonical import canonical_form
from exact.cli import main
from exact.models import SingleHead
from exact.multihead import MultiHead
from proofs.core import Proof
from proofs import multihead as mh
from proofs.multihead import (
    KINDS,
    add_zero_head,
    construct,
    drop_zero_heads,
    mixed,
    permute_heads,
    prove_equivalent,
    split_v,
    symbolic_family,
)

F = Fraction
N_INDEPENDENT = "this argument does not depend on N"


def rational_inputs(d: int, n: int, seed: int) -> list:
    """``n`` seeded random rational sequences, of lengths 1..6 in turn."""
    rng = random.Random(seed)
    return [
        [[F(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(d)] for _ in range(1 + k % 6)]
        for k in range(n)
    ]


def mp_value(model: MultiHead, X, dps: int = 50):
    """``f(X)`` at ``dps`` digits by a direct softmax, from the model's JSON parameters only."""
    heads = [
        ([[F(x) for x in row] for row in h["W"]], [F(x) for x in h["v"]])
        for h in model.to_json()["heads"]
    ]
    X = [[F(x) for x in row] for row in X]
    q = X[-1]
    d = len(q)

    def mpf(x: Fraction):
        return mpmath.mpf(x.numerator) / x.denominator

    with mpmath.workdps(dps):
        total = mpmath.mpf(0)
        for W, v in heads:
            s = [sum((x[a] * W[a][b] * q[b] for a in range(d) for b in range(d)), F(0)) for x in X]
            c = [sum((v[a] * x[a] for a in range(d)), F(0)) for x in X]
            top = max(s)
            e = [mpmath.exp(mpf(si - top)) for si in s]
            total += mpmath.fsum(ei * mpf(ci) for ei, ci in zip(e, c)) / mpmath.fsum(e)
        return total


def symbolic_lengths_ok(proof: Proof, lengths=(1, 2, 3, 4)) -> bool:
    return dict(proof.details["symbolic_lengths"]) == {str(N): True for N in lengths}


# -- acceptance: every construction, proved and checked exactly ----------------------------------


CASES = [
    pytest.param(d, H, kind, id=f"d{d}-H{H}-{kind}")
    for d in (1, 2, 3, 5)
    for H in (2, 3, 4)
    for kind in KINDS
]


@pytest.mark.parametrize("d,H,kind", CASES)
def test_construction_is_proved_equivalent(d, H, kind):
    a = MultiHead.random(d, H, seed=100 * d + H)
    b = construct(a, kind, seed=7 * d + H)
    assert b != a  # different parameters ...
    assert b.d == a.d

    proof = prove_equivalent(a, b)  # ... the same map, for every N
    assert proof.verified is True
    assert proof.details["equivalent"] is True
    assert proof.details["canonical_heads"] == canonical_form(a).H == H
    assert any(N_INDEPENDENT in step for step in proof.steps)
    assert symbolic_lengths_ok(proof)
    for N in (1, 2, 3, 4):
        assert any(step.startswith(f"Independent check, N = {N}:") and step.endswith(": True.") for step in proof.steps)

    for X in rational_inputs(d, 20, seed=d * 10 + H):
        assert a.exact(X) == b.exact(X)  # decided exactly

    if kind in ("split", "zero"):
        assert b.H == a.H + 1
    if kind == "split":
        assert {h.W for h in b.heads} == {h.W for h in a.heads}
        assert sum(1 for h in b.heads if h not in a.heads) == 2  # (W, v - t) and (W, t)
    if kind == "zero":
        assert sum(1 for h in b.heads if not any(h.v)) == 1
        assert drop_zero_heads(b) == a
    if kind == "permute":
        assert b.H == a.H and sorted(map(repr, b.heads)) == sorted(map(repr, a.heads))


@pytest.mark.parametrize("kind", KINDS)
def test_constructions_are_seeded(kind):
    a = MultiHead.random(2, 3, seed=1)
    assert construct(a, kind, seed=5) == construct(a, kind, seed=5)
    assert len({construct(a, kind, seed=s) for s in range(8)}) > 1


def test_proof_is_symmetric_and_reflexive():
    a = MultiHead.random(2, 3, seed=3)
    b = mixed(a, seed=2)
    for x, y in ((a, b), (b, a), (a, a), (b, b)):
        p = prove_equivalent(x, y)
        assert p.verified and p.details["equivalent"] is True


def test_models_without_heads():
    empty = MultiHead([], d=2)
    zeros = add_zero_head(add_zero_head(empty, seed=1), seed=2)
    assert zeros.H == 2
    p = prove_equivalent(empty, zeros)
    assert p.verified and p.details["equivalent"] is True and p.details["canonical_heads"] == 0
    assert symbolic_lengths_ok(p)
    q = prove_equivalent(empty, MultiHead.random(2, 1, seed=0))
    assert q.verified and q.details["equivalent"] is False


@pytest.mark.parametrize("a,b", [
    (MultiHead([], d=1), MultiHead([], d=2)),  # AssertionError: symbolic and exact canonical forms disagree
    (MultiHead([], d=3), MultiHead.random(2, 1, seed=0)),  # ShapeError from the witness search
    (MultiHead.random(2, 1, seed=0), MultiHead([], d=3)),  # "refuted" by a 2-column witness
], ids=["both-empty", "empty-first", "empty-second"])
def test_different_token_dimensions_with_an_empty_model(a, b):
    with pytest.raises(ValueError, match=r"different token dimensions \[\d, \d\]"):
        prove_equivalent(a, b)


def test_different_token_dimensions():
    with pytest.raises(ValueError, match=r"^prove_equivalent: the models have different token dimensions \[2, 3\]$"):
        prove_equivalent(MultiHead.random(2, 1, seed=0), MultiHead.random(3, 1, seed=0))


# -- fully symbolic families -------------------------------------------------------------------------


SYMBOLIC = [(kind, d, H) for kind in ("split", "zero", "permute") for d, H in ((1, 2), (2, 2), (2, 3), (3, 3))]


def _entries(pairs):
    for h, (W, v) in enumerate(pairs):
        for x in W:
            yield h, "W", x
        for x in v:
            yield h, "v", x


@pytest.mark.parametrize("kind,d,H", SYMBOLIC, ids=[f"{k}-d{d}-H{H}" for k, d, H in SYMBOLIC])
def test_symbolic_family_is_proved_without_numbers(kind, d, H):
    A, B = symbolic_family(kind, d, H)
    assert len(A) == H
    assert len(B) == (H if kind == "permute" else H + 1)
    assert all(W.shape == (d, d) and v.shape == (d, 1) for W, v in A + B)

    # no number was substituted: every entry is a symbol or an expression in symbols ...
    for h, part, x in _entries(A):
        assert isinstance(x, sympy.Symbol), (h, part, x)
    zero_entries = 0
    for h, part, x in _entries(B):
        if kind == "zero" and h == len(B) - 1 and part == "v":
            assert x == 0 and x.is_Integer  # ... except the explicit zero vector of the zero-v head
            zero_entries += 1
            continue
        assert isinstance(x, sympy.Expr) and x.free_symbols, (h, part, x)
        assert not x.is_number
    assert zero_entries == (d if kind == "zero" else 0)
    if kind == "zero":
        assert all(x.free_symbols for x in B[-1][0])  # the zero head's W is symbolic too
    if kind == "split":
        t = B[-1][1]
        assert all(isinstance(x, sympy.Symbol) and x.name.startswith("t_") for x in t)
        assert B[0][1] == A[0][1] - t and B[-1][0] == A[0][0]
    assert [tuple(W) + tuple(v) for W, v in A] != [tuple(W) + tuple(v) for W, v in B]  # different parameters

    proof = prove_equivalent(A, B)
    assert proof.verified is True
    assert proof.details["equivalent"] is True
    assert proof.details["canonical_heads"] == H
    assert any(N_INDEPENDENT in step for step in proof.steps)
    assert symbolic_lengths_ok(proof)


def _bad_families(d: int, H: int) -> dict:
    A, B = symbolic_family("split", d, H)
    split_2t = B[:-1] + [(B[-1][0], 2 * B[-1][1])]
    A0, B0 = symbolic_family("zero", d, H)
    zero_not_zero = B0[:-1] + [(B0[-1][0], sympy.Matrix(d, 1, lambda i, j: sympy.Symbol(f"u_{i}")))]
    Ap, Bp = symbolic_family("permute", d, H)
    swapped_v = [(Bp[0][0], Bp[1][1]), (Bp[1][0], Bp[0][1])] + Bp[2:]  # the v's follow the wrong W's
    return {"split-2t": (A, split_2t), "zero-head-with-v": (A0, zero_not_zero), "permute-swapped-v": (Ap, swapped_v)}


@pytest.mark.parametrize("d,H", [(1, 2), (2, 2), (2, 3)])
@pytest.mark.parametrize("name", ["split-2t", "zero-head-with-v", "permute-swapped-v"])
def test_non_equivalent_symbolic_family_is_not_verified(name, d, H):
    A, B = _bad_families(d, H)[name]
    proof = prove_equivalent(A, B)
    assert proof.verified is False
    assert not proof
    assert proof.details["equivalent"] is False
    assert "witness" not in proof.details
    assert any("canonical forms differ" in step for step in proof.steps)
    json.dumps(proof.to_json())


@pytest.mark.parametrize("name", ["split-2t", "zero-head-with-v", "permute-swapped-v"])
def test_independent_symbolic_check_detects_the_bad_families(name):
    # the second argument of the proof (symbolic X, e^s as positive symbols) is not vacuous
    A, B = _bad_families(2, 2)[name]
    pa, pb = mh._as_pairs(A), mh._as_pairs(B)
    for N in (1, 2, 3):
        X = sympy.Matrix(N, 2, lambda i, j: sympy.Symbol(f"x_{i}{j}"))
        E: dict = {}
        vanishes = mh._difference_vanishes(mh._f_symbolic(pa, X, E), mh._f_symbolic(pb, X, E))
        # swapped v's agree on one token (f = Σ v·x there) and differ from N = 2 on
        assert vanishes is (name == "permute-swapped-v" and N == 1)
    good_A, good_B = symbolic_family("split", 2, 2)
    X = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"x_{i}{j}"))
    E = {}
    assert mh._difference_vanishes(mh._f_symbolic(mh._as_pairs(good_A), X, E), mh._f_symbolic(mh._as_pairs(good_B), X, E))


# -- negative controls: random non-equivalent pairs are refuted by a checked witness -------------------


def _assert_refuted(a: MultiHead, b: MultiHead, proof: Proof) -> list:
    assert proof.verified is True
    assert proof.details["equivalent"] is False
    X = [[F(x) for x in row] for row in proof.details["witness"]]
    assert len(X) >= 1 and all(len(row) == a.d for row in X)
    assert (a.exact(X) == b.exact(X)) is False  # decided exactly
    fa, fb = mp_value(a, X), mp_value(b, X)  # independently, at 50 digits
    with mpmath.workdps(50):
        assert abs(fa - fb) > mpmath.mpf("1e-30")
        assert abs(mpmath.mpf(proof.details["f_A"]) - fa) < mpmath.mpf("1e-25")
        assert abs(mpmath.mpf(proof.details["f_B"]) - fb) < mpmath.mpf("1e-25")
    return X


PAIRS = [(1 + i % 3, 2 + (i // 3) % 3, i) for i in range(100)]


def test_random_non_equivalent_pairs_are_refuted():
    seen = set()
    for d, H, i in PAIRS:
        a, b = MultiHead.random(d, H, seed=2 * i + 1000), MultiHead.random(d, H, seed=2 * i + 1001)
        assert canonical_form(a) != canonical_form(b)  # a real non-equivalent pair
        proof = prove_equivalent(a, b)
        _assert_refuted(a, b, proof)
        seen.add((d, H))
    assert seen == {(d, H) for d in (1, 2, 3) for H in (2, 3, 4)}


@pytest.mark.parametrize("d,H,seed", [(1, 2, 0), (2, 2, 1), (2, 3, 2), (3, 4, 3), (3, 2, 4)])
def test_pairs_equal_on_single_tokens_need_a_longer_witness(d, H, seed):
    # swapping the v's of two heads keeps f on one-token inputs (Σ v·x) but changes the map
    a = MultiHead.random(d, H, seed=seed)
    h0, h1 = a.heads[0], a.heads[1]
    b = MultiHead([SingleHead(h0.W, h1.v), SingleHead(h1.W, h0.v)] + list(a.heads[2:]))
    for X in rational_inputs(d, 6, seed=seed):
        if len(X) == 1:
            assert a.exact(X) == b.exact(X)
    proof = prove_equivalent(a, b, seed=seed)
    X = _assert_refuted(a, b, proof)
    assert len(X) >= 2


def test_witness_search_is_seeded_and_can_fail_honestly():
    a, b = MultiHead.random(2, 2, seed=0), MultiHead.random(2, 2, seed=5)
    p1, p2 = prove_equivalent(a, b, seed=3), prove_equivalent(a, b, seed=3)
    assert p1.details["witness"] == p2.details["witness"]
    none = prove_equivalent(a, b, witness_tries=0)
    assert none.verified is False and none.details["equivalent"] is False
    assert "witness" not in none.details
    assert none.steps[-1] == "No witness among 0 random inputs: non-equivalence is not proved."


# -- construction edge cases ---------------------------------------------------------------------------


PERMUTE_MSG = r"^permute_heads: needs at least two different heads to give different parameters$"


def test_permute_needs_two_different_heads():
    with pytest.raises(ValueError, match=PERMUTE_MSG):
        permute_heads(MultiHead.random(2, 1, seed=0), seed=0)
    h = SingleHead([[1, 2], [3, 4]], [1, "1/2"])
    with pytest.raises(ValueError, match=PERMUTE_MSG):
        permute_heads(MultiHead([h, h, h]), seed=0)
    with pytest.raises(ValueError, match=PERMUTE_MSG):
        construct(MultiHead([h, h]), "permute", seed=1)
    with pytest.raises(ValueError, match=PERMUTE_MSG):
        permute_heads(MultiHead([], d=2))


def test_permute_with_an_explicit_permutation():
    a = MultiHead.random(2, 3, seed=0)
    assert permute_heads(a, perm=[2, 0, 1]) == MultiHead([a.heads[2], a.heads[0], a.heads[1]])
    with pytest.raises(ValueError, match=r"^perm: expected a permutation of 0\.\.2, got \[0, 0, 1\]$"):
        permute_heads(a, perm=[0, 0, 1])
    with pytest.raises(ValueError, match=r"^perm: expected a permutation of 0\.\.2, got \[0, 1\]$"):
        permute_heads(a, perm=[0, 1])


def test_split_needs_a_head():
    with pytest.raises(ValueError, match=r"^split_v: needs a model with at least 1 head\(s\), got H=0$"):
        split_v(MultiHead([], d=2), seed=0)
    with pytest.raises(ValueError, match=r"^split_v: needs a model with at least 1 head\(s\), got H=0$"):
        construct(MultiHead([], d=1), "split", seed=0)


def test_split_with_explicit_arguments():
    a = MultiHead([([[1, 0], [0, 1]], [1, 2]), ([[0, 1], [1, 0]], [3, 4])])
    b = split_v(a, head=1, t=[F(1, 2), -1], seed=0)
    assert b.H == 3
    assert SingleHead([[0, 1], [1, 0]], [F(5, 2), 5]) in b.heads
    assert SingleHead([[0, 1], [1, 0]], [F(1, 2), -1]) in b.heads
    assert a.heads[0] in b.heads
    assert canonical_form(b) == canonical_form(a)
    # a single head splits too: the resulting two heads share W
    one = MultiHead([([[2]], [3])])
    s = split_v(one, seed=4)
    assert s.H == 2 and s.heads[0].W == s.heads[1].W and s.heads[0].v[0] + s.heads[1].v[0] == 3
    assert prove_equivalent(one, s).verified


def test_zero_heads_are_added_and_dropped():
    a = MultiHead.random(3, 2, seed=8)
    W = [[1, 2, 3], [4, 5, 6], [7, 8, "9/10"]]
    b = add_zero_head(a, W=W, seed=1)
    assert b.H == 3 and SingleHead(W, [0, 0, 0]) in b.heads
    assert drop_zero_heads(b) == a
    assert drop_zero_heads(a) == a
    assert drop_zero_heads(MultiHead([([[1]], [0])])) == MultiHead([], d=1)


def test_mixed_on_degenerate_models():
    for model in (MultiHead([], d=2), MultiHead.random(2, 1, seed=0), MultiHead([([[1]], [1])] * 3)):
        for seed in range(5):
            b = mixed(model, seed=seed)
            assert b != model
            assert canonical_form(b) == canonical_form(model)


def test_construct_unknown_kind():
    with pytest.raises(ValueError, match=r"^kind: expected one of split, zero, permute, mixed, got 'shuffle'$"):
        construct(MultiHead.random(2, 2, seed=0), "shuffle", seed=0)


@pytest.mark.parametrize("args,match", [
    (("mixed", 2, 2), r"^kind: expected 'split', 'zero' or 'permute' for a symbolic family, got 'mixed'$"),
    (("swap", 2, 2), r"^kind: expected 'split', 'zero' or 'permute' for a symbolic family, got 'swap'$"),
    (("split", 0, 2), r"^symbolic_family: d >= 1 and enough heads for 'split' are needed, got d=0, H=2$"),
    (("split", 2, 0), r"^symbolic_family: d >= 1 and enough heads for 'split' are needed, got d=2, H=0$"),
    (("zero", 1, 0), r"^symbolic_family: d >= 1 and enough heads for 'zero' are needed, got d=1, H=0$"),
    (("permute", 2, 1), r"^symbolic_family: d >= 1 and enough heads for 'permute' are needed, got d=2, H=1$"),
])
def test_symbolic_family_argument_errors(args, match):
    with pytest.raises(ValueError, match=match):
        symbolic_family(*args)


# -- proofs serialise ------------------------------------------------------------------------------------


def test_proofs_serialise_and_round_trip():
    a = MultiHead.random(2, 2, seed=0)
    proofs = {
        "equivalent": prove_equivalent(a, split_v(a, seed=1)),
        "refuted": prove_equivalent(a, MultiHead.random(2, 2, seed=5)),
        "symbolic": prove_equivalent(*symbolic_family("zero", 2, 2)),
    }
    for name, p in proofs.items():
        data = p.to_json()
        text = json.dumps(data)
        back = json.loads(text)
        assert back == data
        assert Proof(**back) == p
        assert back["verified"] is True
        assert back["details"]["equivalent"] is (name != "refuted")
        assert back["steps"] == list(p.steps) and back["name"] == p.name
    assert proofs["equivalent"].name == "multi-head equivalence"
    assert proofs["refuted"].name == "multi-head non-equivalence"
    w = json.loads(json.dumps(proofs["refuted"].to_json()))["details"]["witness"]
    X = [[F(x) for x in row] for row in w]
    assert a.exact(X) != MultiHead.random(2, 2, seed=5).exact(X)


# -- the command line --------------------------------------------------------------------------------


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line_error(err: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("exact-attention: error: ")
    return lines[0]


def test_cli_counterexample_text(capsys):
    rc, out, err = run(capsys, "counterexample", "--d", 2, "--heads", 2, "--seed", 3, "--kind", "mixed")
    assert rc == 0, err
    assert err == ""
    a = MultiHead.random(2, 2, seed=3)
    b = construct(a, "mixed", seed=4)
    assert f"Model A: d=2, H={a.H}" in out
    assert f"Model B (mixed): d=2, H={b.H}" in out
    assert out.count("  head ") == a.H + b.H
    assert "multi-head equivalence: PROVED" in out
    assert N_INDEPENDENT in out
    assert out.count("equal (decided exactly)") == 3
    assert "DIFFERENT" not in out and "NOT PROVED" not in out


def test_cli_counterexample_json(capsys):
    rc, out, err = run(capsys, "counterexample", "--d", 2, "--heads", 2, "--seed", 3, "--kind", "mixed", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert {"A", "B", "proof", "evaluations"} <= set(data)
    a = MultiHead.from_json(data["A"])
    b = MultiHead.from_json(data["B"])
    assert a == MultiHead.random(2, 2, seed=3)
    assert b == construct(a, "mixed", seed=4) and b != a
    assert data["proof"]["verified"] is True
    assert data["proof"]["details"]["equivalent"] is True
    assert len(data["evaluations"]) == 3
    for e in data["evaluations"]:
        assert e["equal"] is True
        X = [[F(x) for x in row] for row in e["X"]]
        assert a.exact(X) == b.exact(X)
        assert e["f_A"] == e["f_B"]


@pytest.mark.parametrize("kind", KINDS)
def test_cli_counterexample_every_kind(capsys, kind):
    rc, out, err = run(capsys, "counterexample", "--d", 3, "--heads", 3, "--seed", 1, "--kind", kind, "--json",
                       "--inputs", 4)
    assert rc == 0, err
    data = json.loads(out)
    assert data["kind"] == kind
    assert data["A"] != data["B"]
    assert data["proof"]["verified"] is True and data["proof"]["details"]["equivalent"] is True
    assert len(data["evaluations"]) == 4 and all(e["equal"] is True for e in data["evaluations"])
    b = MultiHead.from_json(data["B"])
    assert canonical_form(b) == canonical_form(MultiHead.from_json(data["A"]))


def test_cli_counterexample_from_a_multihead_file(tmp_path, capsys):
    model = MultiHead([([[1, "1/2"], [0, -1]], [2, 1]), ([[0, 1], [1, 0]], ["-1/3", 1])])
    path = tmp_path / "mh.json"
    path.write_text(json.dumps(model.to_json()))
    rc, out, err = run(capsys, "counterexample", "--model", path, "--kind", "split", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert MultiHead.from_json(data["A"]) == model
    assert data["proof"]["verified"] is True
    rc, out, err = run(capsys, "counterexample", "--model", path)
    assert rc == 0, err
    assert "PROVED" in out and "Model A: d=2, H=2" in out


def test_cli_counterexample_model_file_needs_no_d_or_heads(tmp_path, capsys):
    path = tmp_path / "mh.json"
    path.write_text(json.dumps(MultiHead.random(2, 2, seed=0).to_json()))
    rc, out, err = run(capsys, "counterexample", "--model", path)
    assert rc == 0, err


def test_cli_counterexample_rejects_a_single_head_file(tmp_path, capsys):
    path = tmp_path / "single.json"
    path.write_text(json.dumps(SingleHead.random(2, seed=0).to_json()))
    rc, out, err = run(capsys, "counterexample", "--model", path)
    assert rc == 2
    assert out == ""
    line = one_line_error(err)
    assert line == f"exact-attention: error: {path}: expected a multi-head model, got a SingleHead"


def test_cli_counterexample_permute_with_one_head(capsys):
    rc, out, err = run(capsys, "counterexample", "--d", 2, "--heads", 1, "--kind", "permute")
    assert rc == 2
    assert out == ""
    line = one_line_error(err)
    assert line == "exact-attention: error: permute_heads: needs at least two different heads to give different parameters"


@pytest.mark.parametrize("argv,words", [
    (("--d", 2, "--heads", 0, "--kind", "split"), ["--heads", "expected an integer in 1..8, got 0"]),
    (("--d", 2, "--heads", -1), ["--heads", "expected an integer in 1..8, got -1"]),
    (("--d", 0, "--heads", 2), ["--d", "expected an integer in 1..16, got 0"]),
])
def test_cli_counterexample_bad_arguments(capsys, argv, words):
    with pytest.raises(SystemExit) as info:  # refused by the option parser, before any work
        main(["counterexample", *map(str, argv)])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = one_line_error(captured.err)
    for w in words:
        assert w in line


def test_split_of_a_model_without_heads_is_refused():
    with pytest.raises(ValueError, match=r"split_v.*H=0"):
        split_v(MultiHead([], d=2))


def test_cli_counterexample_model_file_excludes_d_and_heads(tmp_path, capsys):
    path = tmp_path / "mh.json"
    path.write_text(json.dumps(MultiHead.random(2, 2, seed=0).to_json()))
    rc, out, err = run(capsys, "counterexample", "--model", path, "--d", 5)
    assert rc == 2 and out == ""
    assert one_line_error(err) == "exact-attention: error: --model: the model file fixes d and H; do not pass --d or --heads with it"
    rc, out, err = run(capsys, "counterexample", "--d", 2)
    assert rc == 2 and "give --d and --heads" in one_line_error(err)
