"""Heads with biases, as torch builds them: the normal form (W, c, v, b), its evaluation, JSON,
and the exact learner with d² + 2d + 1 queries in every arithmetic (docs/biases.md)."""

import dataclasses
import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from exact import registry
from exact.checks import CHOSEN_SEED
from exact.errors import NotIdentifiable, OracleInconsistent, ShapeError
from exact.learn import biased_query_count, learn_single_head, learn_single_head_biased
from exact.models import SingleHead
from exact.multihead import MultiHead
from exact.numbers import ball_interval
from exact.oracles import CallableOracle, ExactOracle, FloatOracle
from exact.sequences import Sequence
from test_cli import run


def _q(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def mp_torch_head(Wq, Wk, Wv, Wo, w, bq, bk, bv, bo, scale, X, dps=60):
    """Independent mpmath evaluation of a torch head with all four biases, as torch defines it:
    q = W_Q x_N + b_q, k_i = W_K x_i + b_k, values W_V x_i + b_v, output wᵀ(W_O Σ α_i u_i + b_o)."""
    with mpmath.workdps(dps):
        M = lambda A: [[_q(x) for x in r] for r in A]  # noqa: E731
        V = lambda a: [_q(x) for x in a]  # noqa: E731
        Wq, Wk, Wv, Wo, w, bq, bk, bv, bo = M(Wq), M(Wk), M(Wv), M(Wo), V(w), V(bq), V(bk), V(bv), V(bo)
        Xm = M(X)
        mv = lambda A, x: [mpmath.fsum(a * b for a, b in zip(r, x)) for r in A]  # noqa: E731
        q = [a + b for a, b in zip(mv(Wq, Xm[-1]), bq)]
        s = [_q(scale) * mpmath.fsum(a * b for a, b in zip([x + y for x, y in zip(mv(Wk, xi), bk)], q)) for xi in Xm]
        top = max(s)
        e = [mpmath.exp(si - top) for si in s]
        u = [[x + y for x, y in zip(mv(Wv, xi), bv)] for xi in Xm]
        avg = [mpmath.fsum(ei * ui[a] for ei, ui in zip(e, u)) / mpmath.fsum(e) for a in range(len(bv))]
        out = [x + y for x, y in zip(mv(Wo, avg), bo)]
        return mpmath.fsum(a * b for a, b in zip(w, out))


def _biased(d: int, seed: int, *, c_zeros: int = 0, v_zeros: int = 0) -> SingleHead:
    h = SingleHead.random(d, seed=seed, v_zeros=v_zeros, biases=True)
    c = list(h.c)
    for i in np.random.default_rng(seed).choice(d, size=c_zeros, replace=False):
        c[int(i)] = Fraction(0)
    return SingleHead(h.W, h.v, c, h.b)


# -- the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_a_torch_head_with_biases_is_its_normal_form_and_the_key_bias_cancels(seed):
    rng = np.random.default_rng(seed)
    d, r, dv = 3, 4, 2
    draw = lambda *shape: [[Fraction(int(x), 4) for x in row] for row in rng.integers(-6, 7, size=shape)]  # noqa: E731
    Wq, Wk, Wv, Wo = draw(r, d), draw(r, d), draw(dv, d), draw(d, dv)
    w, bq, bk, bv, bo = draw(1, d)[0], draw(1, r)[0], draw(1, r)[0], draw(1, dv)[0], draw(1, d)[0]
    head = SingleHead.from_native(Wq, Wk, Wv, Wo, w, b_q=bq, b_k=bk, b_v=bv, b_o=bo)
    assert head == SingleHead.from_native(Wq, Wk, Wv, Wo, w, b_q=bq, b_k=[0] * r, b_v=bv, b_o=bo)
    for n in range(1, 5):
        X = [[Fraction(int(x), 8) for x in row] for row in rng.integers(-8, 9, size=(n, d))]
        truth = mp_torch_head(Wq, Wk, Wv, Wo, w, bq, bk, bv, bo, Fraction(1, 2), X)
        lo, hi = ball_interval(head.ball(X, prec=256))
        with mpmath.workdps(60):
            assert abs(_q((lo + hi) / 2) - truth) < mpmath.mpf(10) ** -50, (n, X)


def test_zero_biases_are_the_paper_head_and_print_as_it():
    h = SingleHead([[1, 2], [3, 4]], [1, -1])
    assert h == SingleHead(h.W, h.v, [0, 0], 0) and not h.biased
    assert h.to_json() == SingleHead(h.W, h.v, [0, 0], 0).to_json() and "c" not in h.to_json()
    assert repr(h) == repr(SingleHead(h.W, h.v, c=None, b=0))


def test_the_biases_enter_the_scores_and_the_values_in_every_evaluation():
    h = SingleHead([[1, 2], [3, 4]], [1, -1], c=[1, "1/2"], b=3)
    X = [[1, 0], [0, 1]]
    # s = (3, 9/2), values b + v_i = (4, 2): f = 2 + 2σ(3 − 9/2)
    expected = 2 + 2 / (1 + mpmath.e ** 1.5)
    assert abs(float(h.ball(X).mid()) - float(expected)) < 1e-15
    assert abs(h.float(X) - float(expected)) < 1e-14
    assert abs(float(h.sympy(X).evalf(30)) - float(expected)) < 1e-15
    assert h.float([[0, 0]]) == 3.0 and h.exact([[0, 0]]) == SingleHead([[0]], [0], b=3).exact([[0]])
    y = FloatOracle(h).query(X)
    assert abs(float(y) - float(expected)) <= y.error
    batch = np.array([X, [[0, 1], [1, 1]]], dtype=float)
    assert np.allclose(h.float(batch), [h.float(batch[0]), h.float(batch[1])], rtol=0, atol=1e-15)


def test_json_round_trips_the_biases_and_refuses_bad_ones():
    h = SingleHead([["1/2", 0], [1, 1]], [1, 0], c=[0, "-2/3"], b="5/7")
    data = h.to_json()
    assert data["c"] == ["0", "-2/3"] and data["b"] == "5/7"
    assert SingleHead.from_json(json.loads(json.dumps(data))) == h
    with pytest.raises(ShapeError, match="c: expected length 2"):
        SingleHead.from_json(dict(data, c=["1"]))
    with pytest.raises(ShapeError, match="b: expected a number"):
        SingleHead.from_json(dict(data, b=[1]))
    with pytest.raises(ShapeError, match="c: expected a vector"):
        SingleHead.from_json(dict(data, c="1"))


def test_a_single_head_with_biases_is_a_multi_head_model_with_one_b():
    h = SingleHead([[1]], [1], c=[2], b=1)
    m = MultiHead([h])
    assert m.b == 1 and m.heads[0] == SingleHead([[1]], [1], c=[2]) and m.biased
    X = [[1], ["1/2"], [-1]]
    assert m.exact(X) == h.exact(X)


def test_random_biases_keep_w_and_v_of_the_same_seed():
    h, g = SingleHead.random(4, seed=3), SingleHead.random(4, seed=3, biases=True)
    assert (h.W, h.v) == (g.W, g.v) and g.biased and len(g.parameters()) == 16 + 8 + 1


# -- the learner ----------------------------------------------------------------------------


@pytest.mark.parametrize("d", range(1, 17))
def test_biased_heads_are_learned_exactly_with_d2_plus_2d_plus_1_queries(d):
    for seed in range(2):
        truth = _biased(d, seed, c_zeros=min(seed, d - 1), v_zeros=min(seed + 1, d - 1))
        oracle = ExactOracle(truth)
        r = learn_single_head_biased(oracle, check_seed=seed)
        assert r.model == truth and r.exact and r.mode == "certified"
        assert r.queries == biased_query_count(d) == d * d + 2 * d + 1
        assert oracle.count == r.queries + r.verification_queries == r.queries + 2
        assert r.certificate.check().holds and r.assumptions == (CHOSEN_SEED,)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_symbolic_mode_runs_the_same_plan(d):
    truth = _biased(d, d, c_zeros=d // 2)
    oracle = ExactOracle(truth)
    r = learn_single_head_biased(oracle, mode="symbolic")
    assert r.model == truth and r.mode == "symbolic" and r.queries == d * d + 2 * d + 1
    certified = ExactOracle(truth)
    learn_single_head_biased(certified, check_seed=r.details.checks.seed)
    assert [q.X for q in oracle.transcript] == [q.X for q in certified.transcript]


@pytest.mark.parametrize("d", [1, 4, 8, 16])
def test_float_mode_errors_are_within_the_estimate(d):
    for seed in range(3):
        truth = _biased(d, seed, c_zeros=seed % d)
        r = learn_single_head_biased(FloatOracle(truth), mode="float", w_bound=4)
        assert not r.exact and r.queries == d * d + 2 * d + 1
        (W, v), (Wt, vt) = r.model.to_numpy(), truth.to_numpy()
        (c, b), (ct, bt) = r.model.biases_numpy(), truth.biases_numpy()
        err = max(np.abs(W - Wt).max(), np.abs(v - vt).max(), np.abs(c - ct).max(), abs(b - bt))
        assert err <= r.error_estimate and err <= 1e-10, (seed, err, r.error_estimate)


def test_on_a_float_grid_the_certified_mode_recovers_a_float_head_bit_for_bit():
    truth = SingleHead.random(4, seed=2, grid="float32", biases=True)
    r = learn_single_head_biased(FloatOracle(truth), grid="float32")
    assert r.exact and r.model == truth and r.queries == 25


def test_a_head_free_of_biases_comes_back_with_zero_biases():
    truth = SingleHead.random(3, seed=1)
    r = learn_single_head_biased(ExactOracle(truth))
    assert r.model == truth and r.model.c == (0, 0, 0) and r.model.b == 0


def test_v_zero_is_not_identifiable():
    for oracle in (ExactOracle(SingleHead([[1, 2], [0, 1]], [0, 0], c=[1, 1], b=2)),
                   FloatOracle(SingleHead([[1, 2], [0, 1]], [0, 0], c=[1, 1], b=2))):
        with pytest.raises(NotIdentifiable, match="v = 0"):
            learn_single_head_biased(oracle)
        assert oracle.count == 3  # b and v only: it stops before any probe


def test_a_model_outside_the_class_is_caught_or_stated():
    """A black box that is a head with biases on sequences of length <= 2 and not beyond: the
    probes cannot tell, the verification queries (lengths 3 and 4) do."""
    head = SingleHead([[1, 0], [0, 2]], [1, 1], c=[1, -1], b="1/4")

    def fn(X):
        return head.float(np.array(X)) + (1e-3 if len(X) >= 3 else 0.0)

    with pytest.raises(OracleInconsistent, match="not a single head with biases"):
        learn_single_head_biased(CallableOracle(fn, d=2, accuracy="1e-12"), mode="float", check_seed=0)
    r = learn_single_head_biased(CallableOracle(fn, d=2, accuracy="1e-12"), mode="float", checks=0)
    assert r.assumptions == ("among single heads with biases",)


def test_the_bias_free_learner_names_an_output_bias_as_a_likely_cause():
    truth = SingleHead([[0, "11/6"], [-2, "11/6"]], [-1, "-2/7"], c=["3/2", "-1/2"], b="1/5")
    with pytest.raises(OracleInconsistent, match="an output bias"):
        learn_single_head(ExactOracle(truth))
    with pytest.raises(OracleInconsistent, match="an output bias"):  # a softmax weight of -15 at this scale
        learn_single_head(FloatOracle(truth), mode="float", w_bound=1024)
    # at the adaptive scales every weight looks like a head's; the verification queries then refuse it
    with pytest.raises(OracleInconsistent, match="not a single head"):
        learn_single_head(FloatOracle(truth), mode="float")


def test_the_certificate_is_re_derived_from_the_certified_head():
    truth = _biased(3, 7)
    r = learn_single_head_biased(ExactOracle(truth))
    cert = r.certificate
    assert cert.check().holds
    shifted = SingleHead(truth.W, truth.v, [truth.c[0] + Fraction(1, 10**30)] + list(truth.c[1:]), truth.b)
    assert not dataclasses.replace(cert, model=shifted).check().holds
    other_b = SingleHead(truth.W, truth.v, truth.c, truth.b + 1)
    assert not dataclasses.replace(cert, model=other_b).check().holds
    # the bias-free learner's probe set does not identify a head with biases
    report = dataclasses.replace(cert, learner="single-head").check()
    assert not report.holds


def test_the_registry_states_the_count():
    spec = registry.get("single-head-biased")
    assert spec.query_count(7) == 64 and spec.count_formula == "d² + 2d + 1"
    assert spec.modes == ("certified", "symbolic", "float")


def test_the_zero_token_query_reads_b_alone():
    calls = []

    def fn(X):
        calls.append(np.array(X))
        return float(SingleHead([[1]], [2], c=[1], b="1/2").float(np.array(X)))

    r = learn_single_head_biased(CallableOracle(fn, d=1, accuracy=0), mode="float", checks=0)
    assert calls[0].tolist() == [[0.0]] and abs(float(r.model.b) - 0.5) < 1e-12
    assert Sequence.sparse(1, [{}]).dense() == [[0]]


# -- the command line -------------------------------------------------------------------------


def test_the_command_line_draws_learns_and_certifies_a_head_with_biases(capsys, tmp_path):
    rc, out, _ = run(capsys, "random", "single-head", "--d", "3", "--seed", "2", "--biases")
    assert rc == 0
    data = json.loads(out)
    assert "c" in data and "b" in data
    model = tmp_path / "head.json"
    model.write_text(out)
    cert = tmp_path / "cert.json"
    rc, out, err = run(capsys, "learn", "single-head", "--model", model, "--biases", "--certificate", cert)
    assert rc == 0, err
    assert "16 (d² + 2d + 1 = 16)" in out and "yes: equal to the model" in out
    assert f"b = {data['b']}" in out and "c = [" in out
    rc, out, err = run(capsys, "certify", cert)
    assert rc == 0, err
    rc, out, err = run(capsys, "learn", "single-head", "--model", model)
    assert rc != 0 and "an output bias" in err


# -- the proof ----------------------------------------------------------------------------------


def test_the_normal_form_is_proved_and_a_wrong_one_is_refuted(monkeypatch):
    from proofs import prove_bias_normal_form
    from proofs import biases

    assert prove_bias_normal_form(dims=(1, 2), head_dims=(1, 2), lengths=(1, 2)).verified
    original = biases._Head.__init__

    def without_rho(self, d, r, dv):
        original(self, d, r, dv)
        self.c = self.Wk.T * self.bq

    monkeypatch.setattr(biases._Head, "__init__", without_rho)
    proof = prove_bias_normal_form(dims=(2,), head_dims=(1,), lengths=(2,))
    assert not proof.verified and not proof.details["checks"]["score shift for symbolic d=2, r=1, d_v=1"]

    def without_b_o(self, d, r, dv):
        original(self, d, r, dv)
        self.b = (self.w.T * self.Wo * self.bv)[0, 0]

    monkeypatch.setattr(biases._Head, "__init__", without_b_o)
    proof = prove_bias_normal_form(dims=(2,), head_dims=(1,), lengths=(2,))
    assert not proof.verified and not proof.details["checks"]["token value for symbolic d=2, r=1, d_v=1"]


def test_float_mode_re_asks_a_saturated_probe_at_a_smaller_scale_and_counts_it():
    """Entries up to 40: at the first scale (that of w_bound = 1) some logits lie far beyond ±3;
    each such probe is asked again at a quarter of its scale, and the count says so."""
    truth = SingleHead.random(3, seed=4, bound=40, biases=True)
    oracle = FloatOracle(truth)
    r = learn_single_head_biased(oracle, mode="float", checks=0)
    assert r.details.rescaled > 0 and r.queries == 16 + r.details.rescaled == oracle.count
    err = max(abs(float(x) - float(y)) for x, y in zip(r.model.parameters(), truth.parameters()))
    assert err <= r.error_estimate and err <= 1e-8
    assert f"= d² + 2d + 1 + {r.details.rescaled}" in dict(r.details.rows(r))["scales"]
    fixed = FloatOracle(truth)
    r2 = learn_single_head_biased(fixed, mode="float", checks=0, w_bound=64)
    assert r2.queries == fixed.count == 16 and r2.details.rescaled == 0
    err2 = max(abs(float(x) - float(y)) for x, y in zip(r2.model.parameters(), truth.parameters()))
    assert err2 <= r2.error_estimate


def test_a_float_oracle_that_is_no_head_is_not_rescaled_forever():
    """Answers far outside what any head gives: the rescaling stops, and the result is refused."""
    calls = {"n": 0}

    def liar(X):
        calls["n"] += 1
        if len(X) == 1:
            return 1.0 if any(X[0]) else 0.0
        return 50.0

    with pytest.raises(OracleInconsistent):
        learn_single_head_biased(CallableOracle(liar, d=2, accuracy="1e-12"), mode="float")
    assert calls["n"] < 200


def test_a_bias_free_learners_certificate_never_holds_for_a_head_with_biases():
    """(W − c'1ᵀ, v, c', 0) answers every Theorem 4.1 probe as (W, v) does (their last tokens' entries
    sum to 1): a bias-free certificate must not certify it."""
    import dataclasses

    from exact.learn import learn_low_rank

    T = SingleHead([[1, "-2/3"], [0, 5]], ["1/2", 3])
    cert = learn_single_head(ExactOracle(T), checks=0).certificate
    cp = [Fraction(7), Fraction(-3, 2)]
    forged = SingleHead([[T.W[i][j] - cp[i] for j in range(2)] for i in range(2)], T.v, c=cp)
    assert forged != T
    for i in range(2):  # the forgery answers the whole transcript as T does
        X = cert.transcript[-1 - i].X
        assert forged.exact(X) == T.exact(X)
    report = dataclasses.replace(cert, model=forged).check()
    assert not report.holds and "has biases" in report.message
    low = SingleHead.random(3, seed=2, rank=1)
    lcert = learn_low_rank(ExactOracle(low), rank=1, checks=0).certificate
    assert not dataclasses.replace(lcert, model=SingleHead(low.W, low.v, b=1)).check().holds
    assert learn_single_head(ExactOracle(T), checks=0).assumptions == ("among bias-free single heads",)


def test_the_float_estimate_counts_the_error_b_passes_on_to_v():
    """v_i = f([e_i]) − b carries both answers' errors: answers off by the declared accuracy in
    opposite directions make v off by twice it, and the estimate must say so."""
    T = SingleHead([["1/8", "-1/16"], ["1/32", "1/8"]], [100, -80], c=["1/16", "-1/8"], b="3/10")
    acc = 1e-6

    def fn(X):
        off = (acc if not X.any() else -acc) if X.shape[0] == 1 else 0.0
        return float(T.float(X)) + off

    r = learn_single_head_biased(CallableOracle(fn, d=2, accuracy=acc), mode="float", w_bound="1/2")
    err = max(abs(float(x) - float(y)) for x, y in zip(r.model.parameters(), T.parameters()))
    assert err > 1.5 * acc and err <= r.error_estimate


def test_a_float_answers_certificate_recomputes_the_rounding_bound_of_the_head_with_biases():
    """On a grid, the certificate recomputes each float answer's rounding bound from the certified
    model; with biases that is the biased head's computation (the bias-free one's bound of [0] is 0)."""
    truth = SingleHead([[1]], [1], b="1/3")
    r = learn_single_head_biased(FloatOracle(truth), grid="rational:3")
    assert r.exact and r.model == truth and r.certificate.check().holds
    h = SingleHead([["1791/2048"]], ["1955/32768"], c=["513/512"], b="-1209/1024")
    r2 = learn_single_head_biased(FloatOracle(h), grid="float16", check_seed=0)
    assert r2.model == h and r2.certificate.check().holds
