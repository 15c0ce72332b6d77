"""Tests for the symbolic proofs of oddness, the Transformer odd part, token copy and Lemma A.1."""

import json
import random
from fractions import Fraction

import mpmath
import pytest
import sympy

import proofs
from proofs import (
    Proof,
    prove_attention_oddness,
    prove_lemma_a1,
    prove_token_copy,
    prove_transformer_inversion,
    prove_transformer_odd_part,
)
from proofs.expsymbols import ExpSymbols
from proofs.token_copy import _token_copy_checks
from proofs.transformer import _hidden_layer_check, _odd_part_proof, _relu_scalar_checks


@pytest.fixture(scope="module")
def all_proofs() -> dict[str, Proof]:
    return {
        "oddness": prove_attention_oddness(),
        "odd part": prove_transformer_odd_part(),
        "token copy": prove_token_copy(),
        "lemma": prove_lemma_a1(),
        "inversion": prove_transformer_inversion(),
    }


# --------------------------------------------------------------------------- verification and JSON


@pytest.mark.parametrize("key", ["oddness", "odd part", "token copy", "lemma", "inversion"])
def test_proof_verifies(all_proofs, key):
    proof = all_proofs[key]
    assert isinstance(proof, Proof)
    assert proof.verified is True
    assert bool(proof)
    assert all(proof.details["checks"].values())
    assert len(proof.steps) == len(proof.details["checks"])


@pytest.mark.parametrize("key", ["oddness", "odd part", "token copy", "lemma", "inversion"])
def test_json_round_trip(all_proofs, key):
    proof = all_proofs[key]
    payload = proof.to_json()
    restored = json.loads(json.dumps(payload))
    assert restored == payload
    assert restored["verified"] is True
    assert restored["steps"] == list(proof.steps)


def test_reexported_from_package():
    for name in ("prove_attention_oddness", "prove_transformer_odd_part", "prove_token_copy", "prove_lemma_a1"):
        assert name in proofs.__all__
        assert callable(getattr(proofs, name))
    assert "prove_logit_primitive" in proofs.__all__


def test_default_sizes_are_recorded(all_proofs):
    assert all_proofs["oddness"].details["dims"] == [1, 2, 3]
    assert all_proofs["oddness"].details["lengths"] == [1, 2, 3]
    assert all_proofs["odd part"].details["dims"] == [1, 2]
    assert all_proofs["odd part"].details["hidden"] == [1, 2, 3]
    assert all_proofs["token copy"].details["heads"] == [1, 2, 3]


def test_str_reports_verdict(all_proofs):
    for proof in all_proofs.values():
        text = str(proof)
        assert "Verdict: verified" in text
        assert f"  {len(proof.steps)}. " in text


@pytest.mark.parametrize(
    "call",
    [
        lambda: prove_attention_oddness(dims=(0,)),
        lambda: prove_attention_oddness(lengths=()),
        lambda: prove_transformer_odd_part(hidden=(True,)),
        lambda: prove_token_copy(heads=(1.5,)),
        lambda: prove_transformer_inversion(lengths=(0,)),
    ],
)
def test_sizes_are_validated(call):
    with pytest.raises(ValueError):
        call()


# --------------------------------------------------------------------------- oddness


def test_oddness_steps_cover_every_size(all_proofs):
    checks = all_proofs["oddness"].details["checks"]
    for d in (1, 2, 3):
        for n in (1, 2, 3):
            for what in ("score evenness", "softmax weights", "h odd", "f odd"):
                assert checks[f"{what} for symbolic d={d}, N={n}"] is True


def test_exp_table_shares_symbols_only_for_equal_scores():
    x, y = sympy.symbols("x y")
    table = ExpSymbols("E")
    assert table((-x) * (-y)) is table(x * y)
    assert table(-x * y) is not table(x * y)
    assert len(table) == 2


# --------------------------------------------------------------------------- Transformer odd part


def test_wrong_odd_part_is_rejected():
    proof = _odd_part_proof((1,), (1, 2), (1,), sign=1)  # claims T(X) + T(-X) = (A^T w)^T h(X)
    assert proof.verified is False
    checks = proof.details["checks"]
    assert checks["relu identity (piecewise cases)"] is False
    assert checks["relu identity (Max cases)"] is False
    assert checks["hidden layer m=2"] is False
    assert checks["conclusion"] is False
    assert proof.details["combination"] == "T(X) + T(-X)"


def test_relu_checks_accept_true_and_reject_false_identity():
    assert all(check.ok for check in _relu_scalar_checks(-1))
    assert not any(check.ok for check in _relu_scalar_checks(1))
    assert _hidden_layer_check(3, -1).ok is True
    assert _hidden_layer_check(3, 1).ok is False


# --------------------------------------------------------------------------- token copy


def test_wrong_token_copy_formula_is_rejected():
    def wrong(k, c, r):
        return c / (k + r)  # (1 + k r_h) replaced by (k + r_h)

    checks = {check.label: check.ok for check in _token_copy_checks(2, term=wrong)}
    assert checks["per head for H=2"] is False
    assert checks["sum over heads for H=2"] is False
    assert checks["explicit sequences for H=2"] is False


def test_wrong_sign_token_copy_formula_is_rejected():
    def wrong(k, c, r):
        return -c / (1 + k * r)  # A + sum_h c_h/(1 + k r_h)

    assert not all(check.ok for check in _token_copy_checks(1, term=wrong, explicit_k=(1,)))


def _random_fraction(rng: random.Random) -> Fraction:
    return Fraction(rng.randint(-9, 9), rng.randint(1, 9))


def _dot(x, y):
    return sum(xi * yi for xi, yi in zip(x, y))


def _mpf(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


@pytest.mark.parametrize("seed", range(3))
def test_token_copy_numeric_cross_check(seed):
    n_heads, d, k = 2, 3, 5
    rng = random.Random(seed)
    heads = [
        ([[_random_fraction(rng) for _ in range(d)] for _ in range(d)], [_random_fraction(rng) for _ in range(d)])
        for _ in range(n_heads)
    ]
    u = [_random_fraction(rng) for _ in range(d)]
    q = [_random_fraction(rng) for _ in range(d)]
    sequence = [u] * k + [q]
    with mpmath.workdps(50):
        direct = mpmath.mpf(0)
        for w, v in heads:
            query = [_dot(row, q) for row in w]  # W q
            scores = [_mpf(_dot(x, query)) for x in sequence]
            weights = [mpmath.exp(s) for s in scores]
            direct += sum(wi * _mpf(_dot(v, x)) for wi, x in zip(weights, sequence)) / sum(weights)
        diff = [ui - qi for ui, qi in zip(u, q)]
        closed = _mpf(sum(_dot(u, v) for _, v in heads))
        for w, v in heads:
            r = mpmath.exp(_mpf(_dot(diff, [_dot(row, q) for row in w])))
            closed -= _mpf(_dot(diff, v)) / (1 + k * r)
        assert abs(direct - closed) < mpmath.mpf("1e-45") * (1 + abs(direct))


# --------------------------------------------------------------------------- Lemma A.1


def test_lemma_records_sup(all_proofs):
    details = all_proofs["lemma"].details
    assert abs(details["sup_numeric"] - 4.2552519304127614) < 1e-12
    assert details["bound"] == "5"
    assert details["rational"]["certified"] is True
    assert details["rational"]["sqrt_e_bracket"] == ["8/5", "33/20"]
    assert details["rational"]["sup_bracket"][1] == "171/40"


def test_lemma_rejects_constant_below_sup():
    proof = prove_lemma_a1(bound=4)
    assert proof.verified is False
    assert proof.details["arb_refuted"] is True
    assert proof.details["rational"]["refuted"] is True
    assert proof.details["checks"]["conclusion"] is False


@pytest.mark.parametrize("bound", [Fraction(42552, 10000), 4.255])
def test_lemma_rejects_constant_just_below_sup(bound):
    proof = prove_lemma_a1(bound=bound)
    assert proof.verified is False
    assert proof.details["rational"]["refuted"] is True


@pytest.mark.parametrize("bound", [Fraction(4256, 1000), 4.26, sympy.Rational(17, 4) + sympy.Rational(1, 100)])
def test_lemma_certifies_constant_just_above_sup(bound):
    # needs a finer rational bracket than 8/5 < e^(1/2) < 33/20 (which only gives 4.275)
    proof = prove_lemma_a1(bound=bound)
    assert proof.verified is True
    assert proof.details["rational"]["certified"] is True


@pytest.mark.parametrize("bound", ["5", True, float("inf"), None])
def test_lemma_bound_type_is_validated(bound):
    with pytest.raises(TypeError):
        prove_lemma_a1(bound=bound)


def test_the_inversion_fails_without_the_inverse():
    """The control: K = V in place of (I + V)⁻¹V breaks the residual identity, and only it."""
    proof = prove_transformer_inversion(dims=(1, 2), hidden=(1,), lengths=(2,), _broken=True)
    assert not proof.verified
    failed = [k for k, ok in proof.details["checks"].items() if not ok]
    assert failed and all(k.startswith("residual") for k in failed)


# --------------------------------------------------------------------------- pair line


def test_the_pair_line_identity_and_its_residue_interval_are_proved():
    from proofs import prove_pair_line

    proof = prove_pair_line(heads=(1, 2))
    assert proof.verified and proof.details["heads"] == [1, 2]
    for h in (1, 2):
        for what in ("per head", "sum over heads", "rational type", "residue interval", "inversion",
                     "explicit sequences"):
            assert proof.details["checks"][f"{what} for H={h}"] is True


def test_a_false_pair_line_pole_is_not_proved():
    """R_h = r_h/t_h instead of r_h/(1 + t_h): the identity, the inversion and the explicit sequences fail."""
    from proofs import prove_pair_line

    proof = prove_pair_line(heads=(1,), pole=lambda r, t: r / t)
    checks = proof.details["checks"]
    assert not proof.verified
    assert not checks["per head for H=1"] and not checks["explicit sequences for H=1"] and not checks["inversion for H=1"]
    with pytest.raises(ValueError):
        prove_pair_line(heads=(0,))
