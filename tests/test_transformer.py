"""The one-layer Transformer: exact evaluation, the odd oracle, and the reduction learner."""

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, FloatOracle, registry
from exact.errors import NotIdentifiable, OracleInconsistent
from exact.expfield import ExpPoly
from exact.learn import learn_transformer
from exact.models import SingleHead
from exact.odd import OddOracle
from exact.sequences import Sequence
from exact.transformer import Transformer, exp_sign


def test_exact_evaluation_matches_float_and_one_token_inputs_see_the_ffn():
    T = Transformer.random(4, 5, seed=1)
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5):
        X = [[Fraction(int(x), 4) for x in rng.integers(-8, 9, size=4)] for _ in range(n)]
        exact = float(T.ball(X, prec=96).mid())
        assert exact == pytest.approx(T.float(X), rel=1e-12, abs=1e-12)
    x = [Fraction(1, 3), -2, 0, 1]
    assert T.exact([x]).as_rational() == T.ffn.value(x)


def test_the_odd_part_is_the_single_head_with_v_eff():
    T = Transformer.random(3, 4, seed=2)
    odd, head = OddOracle(ExactOracle(T)), ExactOracle(T.odd_head)
    rng = np.random.default_rng(1)
    for n in (1, 2, 4):
        X = [[int(x) for x in rng.integers(-3, 4, size=3)] for _ in range(n)]
        a, b = odd.query(X), head.query(X)
        assert a._exp_form() == b._exp_form()
    assert odd.count == 3 and T.odd_head.v == T.v_eff


def test_signs_of_exp_polynomials_are_exact():
    assert exp_sign(ExpPoly([(1, 0), (-1, Fraction(-1, 10**9))])) == 1
    assert exp_sign(ExpPoly([(1, 1), (-1, 1)])) == 0
    assert exp_sign(ExpPoly([(-3, 0), (1, 1)])) == -1  # e − 3 < 0


@pytest.mark.parametrize("d, m", [(4, 4), (8, 8), (16, 16), (2, 5), (3, 1)])
def test_the_transformer_is_learned_exactly_with_the_stated_count(d, m):
    for seed in range(3 if d < 16 else 2):
        T = Transformer.random(d, m, seed=seed)
        oracle = ExactOracle(T)
        r = learn_transformer(oracle, m=m, seed=seed)
        assert r.model.W == T.W and r.details["function_form"] == T.ffn.function_form()
        if r.details["identifiable"]:
            assert r.model.ffn.unit_form() == T.ffn.unit_form()
        assert r.queries == r.details["ffn_queries"] + 2 * (d * d + d) == oracle.count - r.verification_queries
        assert r.details["odd_queries"] == d * d + d
        assert r.exact and r.certificate.check().holds


def test_a_vanishing_odd_part_is_not_identifiable_and_asks_it_nothing():
    T = Transformer([[1, 0], [0, 1]], [[1, 1], [-1, -1]], [1, 1])  # Aᵀw = 0
    oracle = ExactOracle(T)
    with pytest.raises(NotIdentifiable, match="Aᵀw = 0"):
        learn_transformer(oracle, seed=0)
    assert all(q.X.length == 1 for q in oracle.transcript)  # only the FFN's one-token queries


def test_a_black_box_that_is_not_a_transformer_is_refused():
    # one-token answers from one network, longer sequences from another W: v_eff disagrees
    T = Transformer.random(3, 3, seed=4)
    other = Transformer(T.W, [[2 * x for x in row] for row in T.A], T.w)

    class Mixed:
        kind = "transformer"
        d = 3

        def exact(self, X):
            return (T if X.length == 1 else other).exact(X)

    with pytest.raises(OracleInconsistent):
        learn_transformer(ExactOracle(Mixed()), seed=0)


def test_transformers_round_trip_and_bad_shapes_are_refused():
    T = Transformer.random(3, 2, seed=0)
    assert Transformer.from_json(T.to_json()) == T
    from exact.errors import ShapeError

    with pytest.raises(ShapeError, match="A: expected 3 columns"):
        Transformer(T.W, [[1, 2]], [1])
    with pytest.raises(Exception, match="approximate"):
        learn_transformer(FloatOracle(SingleHead(T.W, [1, 1, 1])), mode="certified")
    # float answers go to the float path; a single head is the block whose FFN is linear (an antipodal pair)
    r = learn_transformer(FloatOracle(SingleHead(T.W, [1, 1, 1])), seed=0)
    assert r.mode == "float" and max(abs(float(a) - float(b)) for ra, rb in zip(r.model.W, T.W)
                                     for a, b in zip(ra, rb)) <= r.details.W_estimate


def test_a_tampered_certificate_is_refused():
    T = Transformer.random(3, 3, seed=6)
    r = learn_transformer(ExactOracle(T), m=3, seed=1)
    cert = r.certificate
    entries = list(cert.transcript)
    entries[-2], entries[-1] = entries[-1], entries[-2]  # swap the last odd pair
    assert not replace(cert, transcript=tuple(entries)).check().holds
    assert not replace(cert, conditions={**cert.conditions, "seed": 2}).check().holds


# -- what a result rests on, on both sides of "all m units seen" -----------------------

_E = Fraction(1, 2**40)


def _merged():
    """A Transformer whose FFN hides a unit: two units merged within 2^-40 of one hyperplane."""
    return Transformer([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, _E, 0], [0, 1, 0], [0, 0, 1]],
                       [1, 1, 1, 1])


def test_a_transformer_hiding_a_unit_keeps_the_hidden_units_assumption():
    from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED, at_most

    T = _merged()
    r = learn_transformer(ExactOracle(T), m=4, seed=0)
    X = [[-_E / 4, 1, 0]]
    assert r.model.exact(X).as_rational() != T.exact(X).as_rational()  # wrong in the merged pair's wedge
    assert not r.details["units_seen"] and r.exact
    for stated in (r.assumptions, r.certificate.assumptions):
        assert HIDDEN_UNITS in stated and at_most(4) in stated and PATH_SEED in stated
    assert HIDDEN_UNITS in r.claim
    assert r.certificate.check().holds
    stripped = replace(r.certificate, assumptions=tuple(a for a in r.certificate.assumptions if a != HIDDEN_UNITS))
    report = stripped.check()
    assert not report.holds and "does not state the assumptions its claim rests on: no hidden units" in report.message


def test_a_transformer_whose_units_all_show_rests_only_on_m_and_the_path_seed():
    from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED, at_most

    T = Transformer.random(3, 3, seed=1)
    r = learn_transformer(ExactOracle(T), m=3, seed=0)
    assert r.details["units_seen"] and r.model.ffn.unit_form() == T.ffn.unit_form()
    assert r.assumptions == (at_most(3), PATH_SEED)
    assert HIDDEN_UNITS not in r.certificate.assumptions and r.certificate.check().holds
    for dropped in (at_most(3), PATH_SEED):
        report = replace(r.certificate, assumptions=tuple(a for a in r.certificate.assumptions if a != dropped)).check()
        assert not report.holds and dropped in report.message
    # without m nothing bounds the units: the assumption is due, and the registry states it
    free = learn_transformer(ExactOracle(T), seed=0)
    assert HIDDEN_UNITS in free.assumptions and free.certificate.check().holds
    spec = registry.get("transformer")
    assert spec.standing({}) == (HIDDEN_UNITS, PATH_SEED)
    assert spec.standing({"m": 3}) == (HIDDEN_UNITS, at_most(3), PATH_SEED)


def test_a_certificate_for_a_vanishing_odd_part_never_holds():
    """Aᵀw = 0: one-token answers do not depend on W, so any W reproduces them; nothing identifies it."""
    from exact.certify import failed_entries, make_certificate
    from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED, at_most

    A, w = [[1, 1], [-1, -1], [1, 0]], [1, 1, 0]  # Aᵀw = 0
    oracle = ExactOracle(Transformer([[1, 0], [0, 1]], A, w))
    with pytest.raises(NotIdentifiable):
        learn_transformer(oracle, m=3, seed=0)
    transcript = oracle.transcript
    wrong = Transformer([[5, -3], [2, 7]], A, w)
    assert transcript and not failed_entries(wrong, transcript)
    # the odd-part probes of a basis, answered by the wrong model itself: still nothing about W
    probes = [Sequence.from_rows([[1, 0], [0, 1]]), Sequence.from_rows([[0, 1], [1, 0]])]
    extra = ExactOracle(wrong)
    for s in probes:
        extra.query(s)
        extra.query(-s)
    spec = registry.get("transformer")
    for entries in (transcript, transcript + extra.transcript):
        cert = make_certificate(wrong, entries, learner="transformer", conditions={"seed": 0, "retries": 3, "m": 3},
                                assumptions=(HIDDEN_UNITS, at_most(3), PATH_SEED, *spec.unchecked({})))
        report = cert.check()
        assert not report.holds and "Aᵀw = 0" in report.message


def test_the_odd_part_disagreeing_with_the_ffn_either_way_is_refused():
    """One-token answers from a network with another Aᵀw (off the basis points ±e_i), the rest from T:
    every part is consistent alone, but the two measurements of Aᵀw differ."""
    T = Transformer.random(3, 3, seed=4)
    for scale in (2, Fraction(1, 2), -1):  # the FFN's 2L scaled up, down and flipped against v_eff
        ffn = Transformer(T.W, [[scale * x for x in row] for row in T.A], T.w)

        class Mixed:
            kind = "transformer"
            d = 3

            def exact(self, X, ffn=ffn):
                basis = X.length == 1 and len(X.rows[0]) == 1 and abs(X.rows[0][0][1]) == 1
                return (ffn if X.length == 1 and not basis else T).exact(X)

        with pytest.raises(OracleInconsistent, match="differs from Aᵀw = 2L measured on the FFN"):
            learn_transformer(ExactOracle(Mixed()), seed=0)


# -- the count, the budget, the seed ---------------------------------------------------


def test_the_count_is_this_runs_and_the_budget_is_checked_before_the_odd_part():
    from exact.errors import QueryBudgetExceeded
    from exact.learn import learn_ffn

    T, d, checks = Transformer.random(3, 3, seed=6), 3, 2
    fresh = ExactOracle(T)
    r = learn_transformer(fresh, m=3, seed=1, checks=checks)
    ffn = r.details["ffn_queries"]
    assert ffn == learn_ffn(ExactOracle(T), m=3, seed=1, checks=0).queries > 0  # the FFN learner's own count
    used = ExactOracle(T)
    for k in range(37):  # an oracle that has answered other queries already
        used.query([[k, 1, -k]])
    again = learn_transformer(used, m=3, seed=1, checks=checks)
    assert again.details["ffn_queries"] == ffn and again.queries == ffn + 2 * (d * d + d)
    assert used.count == 37 + again.queries + again.verification_queries
    need = ffn + 2 * (d * d + d) + checks
    assert learn_transformer(ExactOracle(T, budget=need), m=3, seed=1, checks=checks).exact
    short = ExactOracle(T, budget=need - 1)
    with pytest.raises(QueryBudgetExceeded) as info:
        learn_transformer(short, m=3, seed=1, checks=checks)
    assert short.count == ffn  # refused before asking the odd part anything
    assert str(info.value) == (f"transformer (the odd part: d² + d = 12 queries, two calls each: 24 queries + 2 checks) "
                               f"needs 26 more queries, but the oracle's budget allows 25 (budget={need - 1}, used={ffn})")


def test_the_count_and_the_learned_w_are_rendered_for_the_reader():
    from exact.learn import learn_ffn

    T = Transformer([[1, "1/2"], [0, -1]], [[1, 1], [2, -1], [0, 1]], [1, "-1/2", 2])
    r = learn_transformer(ExactOracle(T), m=3, seed=0)
    q = learn_ffn(ExactOracle(T), m=3, seed=0, checks=0).queries
    lines = r.describe()
    assert lines[1] == (f"queries     {r.queries} ({q} for the FFN + 6 odd queries (two calls each) = {q + 12} oracle "
                        f"calls (Q_FFN + 2(d² + d) = {q} + 12)), longest sequence 2")
    assert lines[-3:] == ["W =", "  [1, 1/2]", "  [0, -1]"]
    T3 = Transformer([[0, "-2/3", 0], [5, 0, 0], [0, 0, "7/9"]], [[1, 1, 0], [0, 2, -1], [1, 0, 1]], [1, 2, -1])
    r3 = learn_transformer(ExactOracle(T3), m=3, seed=0)
    assert r3.describe()[-4:] == ["W =", "  [0, -2/3, 0]", "  [5, 0, 0]", "  [0, 0, 7/9]"]
    assert f"= {r3.queries} oracle calls (Q_FFN + 2(d² + d) = {r3.details['ffn_queries']} + 24)" in r3.describe()[1]


def test_a_given_seed_is_used_and_a_fresh_one_is_drawn_and_reported():
    from exact.learn import learn_ffn

    T = Transformer.random(2, 2, seed=3)
    r = learn_transformer(ExactOracle(T), m=2, seed=5)
    assert r.details["seed"] == 5 and r.certificate.conditions["seed"] == 5
    f = learn_ffn(ExactOracle(T), m=2, seed=5)
    assert r.certificate.conditions == f.certificate.conditions  # the FFN learner's search, as recorded
    assert [e.X for e in r.certificate.transcript[:r.details["ffn_queries"]]] == [e.X for e in f.certificate.transcript]
    for _ in range(6):
        fresh = learn_transformer(ExactOracle(T), m=2)
        seed = fresh.details["seed"]
        assert isinstance(seed, int) and 0 <= seed < 2**63 and fresh.certificate.conditions["seed"] == seed
        assert fresh.certificate.check().holds


def test_the_command_line_bounds_m_and_seed_below_by_zero(tmp_path, capsys):
    import json

    from exact import cli

    path = tmp_path / "t.json"
    path.write_text(json.dumps(Transformer([[1, "1/2"], [0, -1]], [[1, 1], [2, -1], [0, 1]], [1, "-1/2", 2]).to_json()))

    def run(*args):
        try:
            rc = cli.main(["learn", "transformer", "--model", str(path), "--quiet", *args])
        except SystemExit as e:
            rc = e.code
        return rc, capsys.readouterr().err

    for flag in ("--m", "--seed"):
        rc, err = run(flag, "-1")
        assert rc == 2 and f"argument {flag}: expected an integer >= 0, got -1" in err
    rc, err = run("--m", "0")  # a bound the learner itself refutes from its samples
    assert rc == 2 and "m = 0 is too small" in err and "argument --m" not in err
    assert run("--seed", "0")[0] == 0


def test_the_learners_signature_resolves_for_introspection():
    """Documentation tools and callers read the hints of every function of the module: they resolve."""
    import inspect
    import typing

    from exact.learn import transformer as module

    functions = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    assert {"learn_transformer", "_check_certificate", "_count_text"} <= {f.__name__ for f in functions}
    for f in functions + [module.TransformerDetails.model_rows]:
        typing.get_type_hints(f)  # raises when an annotation does not evaluate


def test_a_float_result_states_its_parts_and_its_count():
    """Float answers: v_eff against 2L (a head's v is exactly twice its linear part), the queries of each part
    and of the block's checks, and the model's rows as floats."""
    from exact.learn.ffn_float import BLOCK_CHECKS
    from exact.oracles import FloatOracle

    head = SingleHead([[1, "1/2", 0], [0, -1, "1/3"], ["1/4", 0, 1]], [1, -2, "1/2"])
    r = learn_transformer(FloatOracle(head), seed=3)
    det = r.details
    assert det.v_gap < 1e-13 and det.W_estimate < 1e-10
    assert r.queries == det.ffn_queries + 2 * det.odd_queries + BLOCK_CHECKS
    text = r.describe()
    assert any(f"+ {BLOCK_CHECKS} checks of the block = {r.queries} oracle calls" in line for line in text)
    rows = det.model_rows(r)
    assert rows[0] == "W =" and len(rows) >= 1 + 3 and all(row.startswith("  [") for row in rows[1:4])
    assert [float(x) for x in rows[1].strip(" []").split(", ")] == [float(x) for x in r.model.W[0]]
