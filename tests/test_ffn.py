"""Exact ReLU FFN extraction: canonical forms, counts, and the robustness cases."""

import math
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle
from exact.errors import InvalidArgument, OracleInconsistent, QueryBudgetExceeded, ShapeError
from exact.ffn import FunctionForm, ReLUFFN, UnitForm
from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED, _path, at_most, ffn_query_bound, learn_ffn
from exact.learn.ffn_orient import orient


def _learn(net, *, m=None, seed=0, **kw):
    oracle = ExactOracle(net)
    r = learn_ffn(oracle, m=m, seed=seed, **kw)
    assert r.exact and r.certificate.check().holds
    assert oracle.count == r.queries + r.verification_queries
    return r


# -- the models -----------------------------------------------------------------------


def test_function_form_is_the_map_and_merges_what_the_map_cannot_tell_apart():
    net = ReLUFFN([[1, 2], [2, 4], [-1, -2], [0, 3]], [1, "1/2", 3, -1])
    form = net.function_form()
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = [Fraction(int(t), 7) for t in rng.integers(-50, 50, size=2)]
        assert form.value(x) == net.value(x)
    # (1,2), (2,4) and (-1,-2) share one hyperplane: one kink, |c|-weighted
    assert form.normals == ((Fraction(0), Fraction(1)), (Fraction(1), Fraction(2)))
    assert form.kinks == (Fraction(-3, 2), Fraction(1, 2) + Fraction(1, 2) + Fraction(3, 2))
    # a cancelled pair is linear: no kink at all
    assert ReLUFFN([[1, 1], [-1, -1]], [2, -2]).function_form().normals == ()


def test_unit_form_is_invariant_under_permutation_and_positive_scaling():
    a = ReLUFFN([[1, 2, 0], [0, -3, 1]], [2, -1])
    b = ReLUFFN([[0, -6, 2], ["1/2", 1, 0]], ["-1/2", 4])
    assert a.unit_form() == b.unit_form() and a.function_form() == b.function_form()
    assert ReLUFFN([[1, 0]], [1]).unit_form() != ReLUFFN([[-1, 0]], [1]).unit_form()


def test_models_evaluate_consistently_and_round_trip_through_json():
    net = ReLUFFN.random(5, 7, seed=3)
    X = [[Fraction(1, 3), -2, 0, Fraction(5, 4), 1]]
    assert net.exact(X).as_rational() == net.value(X[0])
    assert net.float(X) == pytest.approx(float(net.value(X[0])), rel=1e-12)
    assert ReLUFFN.from_json(net.to_json()) == net
    assert [float(v) for v in net.rational_batch([X, X])] == [float(net.value(X[0]))] * 2
    with pytest.raises(ShapeError, match="one-token"):
        net.exact([[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]])
    with pytest.raises(ShapeError, match="field 'm' is 3"):
        ReLUFFN.from_json({**net.to_json(), "m": 3})


# -- exactness and counts -------------------------------------------------------------


@pytest.mark.parametrize("d, m", [(4, 4), (8, 8), (16, 16), (8, 4), (8, 16), (1, 1), (1, 3), (2, 5), (3, 1)])
def test_random_networks_are_recovered_exactly_within_the_count(d, m):
    for seed in range(5):
        net = ReLUFFN.random(d, m, seed=seed)
        r = _learn(net, m=m, seed=seed)
        assert r.details["function_form"] == net.function_form()
        if r.details["identifiable"]:
            assert r.model.unit_form() == net.unit_form()
        assert r.queries + r.verification_queries <= ffn_query_bound(d, m)
        assert r.verification_queries == 6


@pytest.mark.slow
@pytest.mark.parametrize("d, m", [(32, 32), (64, 64)])
def test_large_networks_are_recovered_exactly(d, m):
    for seed in range(5):
        net = ReLUFFN.random(d, m, seed=seed)
        r = _learn(net, m=m, seed=seed)
        assert r.details["function_form"] == net.function_form() and r.model.unit_form() == net.unit_form()
        assert r.queries + r.verification_queries <= ffn_query_bound(d, m)


def test_unknown_m_still_finds_the_function():
    net = ReLUFFN.random(6, 9, seed=4)
    r = _learn(net)
    assert r.details["function_form"] == net.function_form() and r.details["hyperplanes"] == 9


# -- the robustness suite ------------------------------------------------------------


def test_an_antipodal_pair_is_function_exact_but_does_not_account_for_every_unit():
    # 3 units on 2 hyperplanes: a merged pair of near hyperplanes (2 units) looks the same along
    # any path, so m = 3 units found on 2 hyperplanes proves nothing about hidden structure
    net = ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]], [1, 2, -1])
    r = _learn(net, m=3)
    assert r.details["function_form"] == net.function_form() and r.model.unit_form() == net.unit_form()
    assert not r.details["identifiable"] and not r.details["units_seen"]
    assert "antipodal" in r.details["unit_reason"] and HIDDEN_UNITS in r.assumptions


def test_cancelled_pair_is_a_linear_residual_and_function_exact():
    net = ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]], [1, -1, -1])  # w·ReLU(z) − w·ReLU(−z) = w·z
    r = _learn(net, m=3)
    assert r.details["function_form"] == net.function_form() and len(r.details["function_form"].normals) == 1
    assert not r.details["identifiable"] and "span" in r.details["unit_reason"]


def test_duplicate_units_are_merged_and_the_missing_unit_is_not_explained_away():
    net = ReLUFFN([[1, 2, 0], [2, 4, 0], [0, 1, 1]], [1, 3, -1])
    r = _learn(net, m=3)
    assert r.details["unit_forms"][0] == net.unit_form() and len(net.unit_form().units) == 2  # merged
    # 2 units for m = 3: a merge, or a unit hiding from the search; nothing tells them apart
    assert not r.details["identifiable"] and "not every unit is accounted for" in r.details["unit_reason"]
    assert HIDDEN_UNITS in r.assumptions and "units_seen" not in r.certificate.conditions


def _path_of(seed, d):
    return _path(np.random.default_rng(seed), d)


def _orthogonal(v, rng, d):
    """A random small-integer vector orthogonal to the integer vector v."""
    while True:
        a = [int(x) for x in rng.integers(-5, 6, size=d)]
        i = next(k for k in range(d) if v[k])
        rest = sum(a[k] * v[k] for k in range(d) if k != i)
        a[i] = Fraction(-rest, v[i])
        if any(a):
            return a


def test_a_hyperplane_through_the_paths_corner_is_exact():
    d, seed = 4, 11
    p, q = _path_of(seed, d)
    rng = np.random.default_rng(0)
    net = ReLUFFN([_orthogonal(q, rng, d), [1, 0, 2, -1], [0, 1, -1, 3]], [2, -1, 1])
    r = _learn(net, m=3, seed=seed)
    assert r.details["function_form"] == net.function_form() and r.model.unit_form() == net.unit_form()
    assert r.details["paths"] == 1


def test_a_hyperplane_through_p_is_detected_and_the_path_retried():
    d, seed = 4, 12
    p, q = _path_of(seed, d)
    rng = np.random.default_rng(1)
    net = ReLUFFN([_orthogonal(p, rng, d), [1, 0, 2, -1], [0, 1, -1, 3]], [2, -1, 1])
    r = _learn(net, m=3, seed=seed)
    assert r.details["paths"] == 2  # the first path never crossed that hyperplane
    assert r.details["function_form"] == net.function_form()


def test_coincident_breakpoints_are_detected_and_the_path_retried():
    d, seed = 4, 13
    p, q = _path_of(seed, d)
    x = [3 * a + (b - a) for a, b in zip(p, q)]  # 3·(p + (q − p)/3): the point at t = 1/3
    rng = np.random.default_rng(2)
    net = ReLUFFN([_orthogonal(x, rng, d), _orthogonal(x, rng, d), [1, 1, 0, 2]], [1, -2, 1])
    r = _learn(net, m=3, seed=seed)
    assert r.details["paths"] >= 2
    assert r.details["function_form"] == net.function_form()


@pytest.mark.parametrize("name, A, w", [
    ("identity", np.eye(6, dtype=int).tolist(), [1, -1, 1, -1, 1, -1]),
    ("signs", [[1 if (i >> k) & 1 else -1 for k in range(4)] for i in range(16)], [(-1) ** i for i in range(16)]),
    ("ones", [[1] * 5, [1, 1, 1, 1, 0], [0, 1, 1, 1, 1], [1, 0, 0, 0, 1]], [1, 1, -1, 2]),
    ("hadamard", [[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], [1, 2, 3, 4]),
])
def test_structured_small_integer_networks_terminate_exactly(name, A, w):
    net = ReLUFFN(A, w)
    r = _learn(net, m=len(w))
    assert r.details["function_form"] == net.function_form(), name


def test_m_above_d_with_a_tent_reports_every_orientation():
    # κ·n summing to zero over three units: flipping all three gives the same function
    net = ReLUFFN([[1, 0], [0, 1], [-1, -1]], [2, 2, 2])
    r = _learn(net, m=3)
    assert r.details["function_form"] == net.function_form()
    forms = r.details["unit_forms"]
    assert not r.details["identifiable"] and len(forms) == 2 and net.unit_form() in forms
    assert all(f.network().function_form() == net.function_form() for f in forms)


def test_a_wide_tent_is_function_exact_and_flagged():
    net = ReLUFFN([[1, k] for k in range(28)], [1 + k % 3 for k in range(28)])  # 26 free signs: beyond enumeration
    r = _learn(net, m=28)
    assert r.details["function_form"] == net.function_form()
    assert not r.details["identifiable"] and "free signs" in r.details["unit_reason"]


def test_orient_reports_every_solution_of_a_subset_sum():
    form = ReLUFFN([[1, 0], [0, 1], [1, 1], [1, -1]], [1, 1, 1, 1]).function_form()
    o = orient(form)
    assert o.solutions and all(UnitForm.build(2, s.units).network().function_form() == form for s in o.solutions)


# -- bad input --------------------------------------------------------------------------


class _Smooth:
    """An exact oracle of a smooth function: rational answers, but no kinks anywhere."""

    kind = "ffn"
    query_length = 1

    def __init__(self, d):
        self.d = d

    def exact(self, X):
        from exact.expfield import ExpRatio

        x = [v for _, v in X.rows[0]] if X.rows[0] else [Fraction(0)]
        s = sum(x)
        return ExpRatio.rational(s * s / (1 + abs(s)))


def test_a_smooth_black_box_is_refused_not_a_hang():
    with pytest.raises(OracleInconsistent, match="not piecewise linear|not a bias-free"):
        learn_ffn(ExactOracle(_Smooth(3)), seed=0, max_units=64)


def test_a_budget_below_the_count_is_refused_before_the_first_query():
    net = ReLUFFN.random(8, 8, seed=0)
    oracle = ExactOracle(net, budget=50)
    with pytest.raises(QueryBudgetExceeded):
        learn_ffn(oracle, m=8, seed=0)
    assert oracle.count == 0


def test_bad_options_are_refused():
    oracle = ExactOracle(ReLUFFN.random(3, 3, seed=0))
    for kwargs, pattern in (({"m": -1}, "m:"), ({"seed": -3}, "seed"), ({"retries": "x"}, "retries"),
                            ({"m": True}, "m:")):
        with pytest.raises(InvalidArgument, match=pattern):
            learn_ffn(oracle, **kwargs)
    from exact import CallableOracle

    net = ReLUFFN.random(3, 3, seed=0)
    approximate = CallableOracle(lambda X: float(net.float(X)), d=3, accuracy="1e-12")
    with pytest.raises(InvalidArgument, match="approximate .learn it with mode='float'"):
        learn_ffn(approximate, mode="certified")
    from exact.oracles import FloatOracle

    assert learn_ffn(FloatOracle(net), m=3, seed=0).mode == "float"  # float answers go to the float learner


def test_a_certificate_whose_transcript_is_not_the_learners_is_refused():
    from dataclasses import replace

    net = ReLUFFN.random(4, 4, seed=1)
    r = _learn(net, m=4, seed=3)
    cert = r.certificate
    swapped = list(cert.transcript)
    swapped[5], swapped[6] = swapped[6], swapped[5]
    assert not replace(cert, transcript=tuple(swapped)).check().holds
    other = replace(cert, conditions={**cert.conditions, "seed": 4})
    report = other.check()
    assert not report.holds and "seed" in report.message
    # one more query than the learner makes, answered truly: the transcript is not the learner's
    extra = ExactOracle(net)
    extra.query(cert.transcript[0].X.dense())
    longer = replace(cert, transcript=tuple(cert.transcript) + tuple(extra.transcript))
    report = longer.check()
    assert not report.holds and "holds more queries than the ReLU learner makes" in report.message


def test_function_form_value_matches_for_random_points():
    f = FunctionForm.build(2, [((2, 0), 1), ((0, 1), Fraction(-1, 2))], [1, 1])
    assert f.normals == ((Fraction(0), Fraction(1)), (Fraction(1), Fraction(0)))
    assert f.kinks == (Fraction(-1, 2), Fraction(2))
    assert f.value([3, -4]) == 3 - 4 + Fraction(-1, 2) * 4 + 2 * 3
    assert math.isclose(float(f.value([1, 1])), 1 + 1 - 0.5 + 2)


def test_beyond_enumeration_lattice_reduction_finds_the_orientation_but_claims_no_uniqueness():
    net = ReLUFFN.random(8, 40, seed=2)  # 32 free signs
    r = _learn(net, m=40)
    assert r.details["function_form"] == net.function_form()
    assert net.unit_form() in r.details["unit_forms"] and not r.details["identifiable"]
    assert "lattice reduction" in r.details["unit_reason"]


# -- what finitely many queries cannot see, stated rather than claimed ------------------


def _tent(e):
    """Three units on hyperplanes in one 2-D span whose kinks cancel along any line: a thin bump."""
    t, s = [3, -2, 5], [1, 4, -1]
    return ReLUFFN([[a + e * b for a, b in zip(t, s)], t, [a - e * b for a, b in zip(t, s)]], [1, -2, 1])


def test_a_hidden_tent_is_missed_but_only_under_the_stated_assumption():
    net = _tent(Fraction(1, 1000))
    for m in (None, 3):
        r = learn_ffn(ExactOracle(net), m=m, seed=0, check_seed=0)  # fresh check points may hit the wedge
        # the bump is zero along the whole path but in a wedge of width ~1/1000: the search misses it
        assert r.details["function_form"] != net.function_form()
        assert HIDDEN_UNITS in r.assumptions and HIDDEN_UNITS in r.certificate.assumptions
        assert "units_seen" not in r.certificate.conditions
    assert not r.details["identifiable"]  # with m = 3 known, the missing units are flagged


def test_all_m_units_seen_drops_the_assumption_and_is_checked_by_the_certificate():
    from dataclasses import replace

    net = ReLUFFN.random(4, 4, seed=2)
    r = _learn(net, m=4, seed=1)
    assert r.details["units_seen"] and r.details["identifiable"] and HIDDEN_UNITS not in r.assumptions
    assert r.assumptions == (at_most(4), PATH_SEED) and r.model.unit_form() == net.unit_form()
    cert = r.certificate
    assert "units_seen" not in cert.conditions and HIDDEN_UNITS not in cert.assumptions
    assert at_most(4) in cert.assumptions and PATH_SEED in cert.assumptions
    # a tent added to the certified network hides from the re-run: the certificate no longer holds
    t4 = ReLUFFN([[3 + Fraction(1, 1000), -2, 5, 1], [3, -2, 5, 1], [3 - Fraction(1, 1000), -2, 5, 1]], [1, -2, 1])
    hidden = ReLUFFN([list(a) for a in r.model.A] + [list(a) for a in t4.A], list(r.model.w) + list(t4.w))
    assert not replace(cert, model=hidden).check().holds
    # the bound m and the seed are what the claim rests on: a certificate that drops either fails
    for dropped in (at_most(4), PATH_SEED):
        report = replace(cert, assumptions=tuple(a for a in cert.assumptions if a != dropped)).check()
        assert not report.holds and dropped in report.message
    # without m the same transcript is no longer the learner's; and "units_seen" is never read from a file
    assert not replace(cert, conditions={k: v for k, v in cert.conditions.items() if k != "m"}).check().holds
    bad = replace(cert, conditions={**cert.conditions, "units_seen": True})
    assert not bad.check().holds and "'units_seen' is not a condition" in bad.check().message


def test_without_m_the_hidden_units_assumption_stays_and_a_certificate_must_state_it():
    from dataclasses import replace

    net = ReLUFFN.random(4, 4, seed=2)
    r = _learn(net, seed=1)
    assert not r.details["units_seen"] and not r.details["identifiable"]
    assert r.assumptions == (HIDDEN_UNITS, PATH_SEED)
    cert = r.certificate
    report = replace(cert, assumptions=tuple(a for a in cert.assumptions if a != HIDDEN_UNITS)).check()
    assert not report.holds and "no hidden units" in report.message


def test_hyperplanes_closer_than_the_search_resolves_are_flagged_with_m():
    net = ReLUFFN([[1, 0], [1, Fraction(1, 10**12)]], [1, 1])
    r = learn_ffn(ExactOracle(net), m=2, seed=0)
    if r.details["function_form"] != net.function_form():
        assert HIDDEN_UNITS in r.assumptions and not r.details["identifiable"]


def test_an_antipodal_pair_beyond_d_is_not_claimed_identifiable():
    net = ReLUFFN([[1, 0], [-1, 0], [1, 1], [1, -1]], [1, 2, 1, 1])
    for m in (4, None):
        r = _learn(net, m=m)
        assert r.details["function_form"] == net.function_form() and not r.details["identifiable"]


def test_kinks_of_wildly_different_sizes_neither_crash_nor_stall():
    B = 10**400
    r = _learn(ReLUFFN([[1, 0], [0, 1], [1, 1]], [B, -B, 3 * B]), m=3)
    assert r.details["function_form"] == ReLUFFN([[1, 0], [0, 1], [1, 1]], [B, -B, 3 * B]).function_form()
    import time

    w = [Fraction(1, 10**30)] * 19 + [10**30]
    net = ReLUFFN([[1, k] for k in range(20)], w)
    t = time.perf_counter()
    r = _learn(net, m=20)
    assert r.details["function_form"] == net.function_form() and time.perf_counter() - t < 20


# -- the breakpoint search on its own --------------------------------------------------


def _scan(breaks, kinks, slope=0, offset=0):
    from flint import fmpq

    from exact.learn.ffn_path import scan_segment

    bs = [fmpq(b.numerator, b.denominator) for b in map(Fraction, breaks)]
    ks = [fmpq(k.numerator, k.denominator) for k in map(Fraction, kinks)]

    def h(ts):
        return [sum((k * abs(t - b) for k, b in zip(ks, bs)), fmpq(0)) + slope * t + offset for t in ts]

    scan = scan_segment(h)
    return [Fraction(int(b.t.p), int(b.t.q)) for b in scan.breakpoints], scan


@pytest.mark.parametrize("breaks, kinks", [
    (["1/4", "1/2", "3/4"], [1, 1, 1]),  # the outer lines meet exactly at the middle breakpoint
    (["1/3", "2/3"], [1, Fraction(1, 2**40)]),  # the candidate lands within 2^-40 of the first
    (["1/3", "2/3"], [Fraction(1, 2**40), 1]),  # ... of the second (the mirror image)
    (["1/3", "2/3"], [1, -1]),  # opposite kinks: the outer lines are parallel
    (["1/5", "1/5", "3/5"], [2, -1, 1]),  # two kinks at one point merge into one
    ([Fraction(k, 17) for k in range(1, 17)], [(-1) ** k * k for k in range(1, 17)]),
])
def test_every_breakpoint_is_found_exactly(breaks, kinks):
    found, scan = _scan(breaks, kinks, slope=3, offset=-1)
    merged = {}
    for b, k in zip(map(Fraction, breaks), map(Fraction, kinks)):
        merged[b] = merged.get(b, 0) + k
    assert found == sorted(b for b, k in merged.items() if k)
    assert scan.queries <= 4 * len(found) + 8


def test_a_smooth_function_makes_the_search_give_up():
    from flint import fmpq

    from exact.learn.ffn_path import PathRetry, scan_segment

    with pytest.raises((PathRetry, OracleInconsistent)):
        scan_segment(lambda ts: [t * t for t in ts], max_breakpoints=50, min_width_bits=64)
    assert scan_segment(lambda ts: [3 * t + fmpq(1, 7) for t in ts]).breakpoints == ()


# -- what a result says about itself -----------------------------------------------------


def _bound_text(m):
    """The failure probability of "all m units seen" for one check path, 2m²/(2^63 − 3), as the rows print it."""
    return f"{2 * m * m / (2**63 - 3):.1e}"


def test_the_rows_of_an_identified_network_show_its_function_and_units():
    net = ReLUFFN([[1, 2, 0], [0, -1, 3]], [1, "-1/2"])
    r = _learn(net, m=2)
    # L = ½Aᵀw = ½(1·(1, 2, 0) − ½·(0, −1, 3)); kinks w|c|/2 on the normals scaled to a leading 1
    assert r.details.rows(r) == [
        ("function", "g(x) = Lᵀx + Σ κ_k|n_kᵀx| with 2 hyperplanes"),
        ("", "L = [1/2, 5/4, -3/4]"),
        ("", "κ = -1/4, n = [0, 1, -3]"),
        ("", "κ = 1/2, n = [1, 2, 0]"),
        ("seen", "all 2 units seen: a check path proves 2 distinct hyperplanes, each on exactly one learned "
                 f"hyperplane (wrong with probability <= {_bound_text(2)} over the path seed, 1 check path drawn)"),
        ("units", "identifiable: 2 units (up to order and positive scaling; identifiable among networks with at most "
                  "2 units: all 2 hyperplanes seen, one unit on each, and a unique orientation)"),
        ("", "w = -1/2, a = [0, -1, 3]"),
        ("", "w = 1, a = [1, 2, 0]"),
    ]


def test_the_rows_of_a_tent_say_how_many_orientations_were_found():
    net = ReLUFFN([[1, 0], [0, 1], [-1, -1]], [2, 2, 2])
    r = _learn(net, m=3)
    rows = r.details.rows(r)
    assert rows[:5] == [("function", "g(x) = Lᵀx + Σ κ_k|n_kᵀx| with 3 hyperplanes"), ("", "L = [0, 0]"),
                        ("", "κ = 1, n = [0, 1]"), ("", "κ = 1, n = [1, 0]"), ("", "κ = 1, n = [1, 1]")]
    assert rows[5][0] == "seen" and f"<= {_bound_text(3)} over" in rows[5][1]
    assert rows[6:] == [("units", "not identifiable: 2 orientations explain the function (signed, weighted normals "
                                  "summing to zero: a tent) (2 orientation(s) found)")]


def test_the_sighting_names_too_few_and_too_many_hyperplanes_for_m():
    few = _learn(ReLUFFN([[1, 2, 0], [2, 4, 0], [0, 1, 1]], [1, 3, -1]), m=3)  # two units merge on one hyperplane
    assert few.details["sighting"] == ("the search found 2 hyperplanes for m = 3: units merged on one hyperplane, "
                                       "an antipodal pair, or units hidden from the search")
    # a hyperplane through the corner q is crossed there, besides the m = 2 the segments may hold
    d, seed = 4, 11
    p, q = _path_of(seed, d)
    net = ReLUFFN([_orthogonal(q, np.random.default_rng(0), d), [1, 0, 2, -1], [0, 1, -1, 3]], [2, -1, 1])
    # the learned function would need 3 units, so no result may say "at most 2": the path is retried, and the
    # next paths prove the third hyperplane, which refutes m
    with pytest.raises(OracleInconsistent, match="m = 2 is too small: the search path's exact samples prove 3 "):
        learn_ffn(ExactOracle(net), m=2, seed=seed)
    assert learn_ffn(ExactOracle(net), m=3, seed=seed).model.function_form() == net.function_form()


def test_the_search_path_is_drawn_from_the_documented_box():
    """p and q have integer entries in [−2^20, 2^20]: p is the first point asked, q the end of the first segment;
    the lines at its ends are measured over windows of 2^-32 of the segment."""
    bound = 1 << 20
    corners = []
    for seed in range(4):
        r = _learn(ReLUFFN.random(4, 3, seed=seed), seed=seed)
        xs = [q.X.dense()[0] for q in r.certificate.transcript]
        p, q = xs[0], xs[3]  # the first segment starts with h(0), h(δ), h(1 − δ), h(1)
        assert (p, q) == tuple([Fraction(v) for v in c] for c in _path_of(seed, 4))
        w = Fraction(1, 2**32)
        assert xs[1] == [a + w * (b - a) for a, b in zip(p, q)] and xs[2] == [b - w * (b - a) for a, b in zip(p, q)]
        corners += p + q
    assert all(x.denominator == 1 and -bound <= x <= bound for x in corners)
    assert max(corners) > bound // 2 and min(corners) < -bound // 2  # both ends of the box are used


def _shallow(seed, d=4):
    """Two normals, leading entry 1, crossing the first segment at t = 1/3 and t = 3/7 with n·D = ±1/2."""
    p, q = _path_of(seed, d)
    D = [b - a for a, b in zip(p, q)]
    out = []
    for a, at_p, slope in ((3, Fraction(-1, 6), Fraction(1, 2)), (-2, Fraction(3, 14), Fraction(-1, 2))):
        # n = (1, a, b, c) with n·p = at_p and n·D = slope: a 2 × 2 system in (b, c)
        r1, r2 = at_p - p[0] - a * p[1], slope - D[0] - a * D[1]
        det = p[2] * D[3] - p[3] * D[2]
        out.append([1, a, (r1 * D[3] - p[3] * r2) / det, (p[2] * r2 - D[2] * r1) / det])
    return out


@pytest.mark.parametrize("seed", range(3))
def test_hyperplanes_crossing_the_path_at_a_shallow_angle_are_found_on_the_first_path(seed):
    """|n·D| = 1/2 is small, but not zero: the crossing is an ordinary one, and the run stays within the count."""
    net = ReLUFFN(_shallow(seed) + [[1, 2, 3, -1]], [1, -2, 1])
    r = _learn(net, m=3, seed=seed)
    assert r.details["function_form"] == net.function_form() and r.details["units_seen"]
    assert r.details["paths"] == 1 and r.queries + r.verification_queries <= ffn_query_bound(4, 3)


class _Offset(_Smooth):
    """An exact oracle of |x_1| + 2x_2 + 1: piecewise linear, but not bias-free."""

    def exact(self, X):
        from exact.expfield import ExpRatio

        x = X.dense()[0]
        return ExpRatio.rational(abs(x[0]) + 2 * x[1] + 1)


@pytest.mark.parametrize("retries", [0, 3])
def test_a_box_with_a_bias_is_refused_after_every_path_is_tried(retries):
    oracle = ExactOracle(_Offset(3))
    with pytest.raises(OracleInconsistent) as err:
        learn_ffn(oracle, seed=0, retries=retries, checks=0)
    message = str(err.value)
    assert message.startswith(f"no consistent ReLU network after {retries + 1} paths (last: a point off the path "
                              "disagrees with the learned function")
    assert "not a bias-free one-hidden-layer ReLU network" in message


def test_a_certificate_without_m_holds_for_many_hyperplanes():
    net = ReLUFFN([[1, k] for k in range(-9, 11)], [1 + k % 3 for k in range(20)])
    r = _learn(net)  # _learn checks the certificate: its re-run must not give up on 20 hyperplanes
    assert r.details["hyperplanes"] == 20 and r.details["function_form"] == net.function_form()


def test_a_candidate_next_to_its_breakpoint_costs_one_query_more():
    """Kinks 1 and 2^-40: the outer lines meet within 2^-40 of 1/3, so h leaves ℓ_l inside the window there.  One
    more point gives the line beyond it, and their crossing is the breakpoint: 4 end queries, 2 + 1 there, and
    2 to accept 2/3 (the mirror image likewise)."""
    for kinks in ([1, Fraction(1, 2**40)], [Fraction(1, 2**40), 1]):
        found, scan = _scan(["1/3", "2/3"], kinks, slope=3, offset=-1)
        assert found == [Fraction(1, 3), Fraction(2, 3)] and scan.queries == 9


def test_the_scan_returns_the_true_breakpoints_or_retries():
    """Clustered kinks, some closer than the windows: the scan may give up (PathRetry), but breakpoints it returns
    are h's own, except that kinks closer together than the 2^-32 windows may merge into one."""
    from flint import fmpq

    from exact.learn.ffn_path import PathRetry, scan_segment

    tight = [(fmpq(7187, 24832), -1), (fmpq(553647837, 1627389952), -4), (fmpq(2336462207181, 6665789243392), 2),
             (fmpq(2336462208539, 6665789243392), -3), (fmpq(584115552353, 1666447310848), -2)]
    rng = np.random.default_rng(7)
    cases = [tight]
    for _ in range(40):
        bps: dict = {}
        for _ in range(int(rng.integers(1, 5))):
            centre = fmpq(int(rng.integers(1, 97)), 97)
            for _ in range(int(rng.integers(1, 4))):
                t = centre + fmpq(int(rng.integers(-64, 65)), 1 << int(rng.integers(6, 40)))
                if 0 < t < 1:
                    bps[t] = bps.get(t, fmpq(0)) + int(rng.integers(-4, 5))
        cases.append(sorted((t, k) for t, k in bps.items() if k))
    for items in cases:
        def h(ts, items=items):
            return [sum((k * (t - b) for b, k in items if t > b), fmpq(0)) for t in ts]
        try:
            scan = scan_segment(h, max_breakpoints=64)
        except PathRetry:
            continue
        for b in scan.breakpoints:
            near = [t for t, _ in items if abs(t - b.t) <= fmpq(1, 2**31)]
            assert near, f"{b.t} is no breakpoint of h"
            if len(near) == 1:
                assert b.t == near[0]


@pytest.mark.parametrize("bump", [1, -1])
def test_an_interior_point_inside_a_tent_reveals_it(bump):
    """A tent on (0.6, 0.61), of either sign, between samples on one line: the plain search sees a line; a point
    inside the tent is off that line, and the tent's three breakpoints are then found exactly."""
    from flint import fmpq

    from exact.learn.ffn_path import scan_segment

    tent = [(fmpq(6, 10), bump), (fmpq(605, 1000), -2 * bump), (fmpq(61, 100), bump)]

    def h(ts):
        return [2 * t + sum((k * (t - b) for b, k in tent if t > b), fmpq(0)) for t in ts]

    assert scan_segment(h).breakpoints == ()
    inside = fmpq(603, 1000)
    scan = scan_segment(h, interior=lambda lo, hi: inside if lo < inside < hi else (lo + hi) / 2)
    assert [b.t for b in scan.breakpoints] == [b for b, _ in tent]


# -- orientation: what it finds and what it says ----------------------------------------------


def test_the_orientation_says_what_it_found_and_how():
    unique = ReLUFFN([[1, 0], [0, 1], [1, 1], [1, -1]], [1, 2, -1, 3])  # 4 hyperplanes in d = 2: a subset sum
    o = orient(unique.function_form())
    assert o.unique and o.solutions == (unique.unit_form(),) and o.reason == ""
    tent = orient(ReLUFFN([[1, 0], [0, 1], [-1, -1]], [2, 2, 2]).function_form())
    assert not tent.unique and len(tent.solutions) == 2
    assert tent.reason == "2 orientations explain the function (signed, weighted normals summing to zero: a tent)"
    # beyond the enumeration limit, lattice reduction: a solution found is reported, never claimed unique
    lll = orient(unique.function_form(), max_free=0)
    assert lll.solutions == (unique.unit_form(),) and not lll.exhaustive and not lll.unique
    assert lll.reason == ("2 free signs exceed the enumeration limit 0: 1 orientation(s) found by lattice reduction "
                          "(LLL); others are not excluded")
    pair = ReLUFFN([[1, 0], [-1, 0], [0, 1], [1, 1]], [1, 1, 1, 1]).function_form()  # an antipodal pair beyond d
    assert orient(pair).solutions == () and "no orientation with one unit per hyperplane" in orient(pair).reason
    none = orient(pair, max_free=0)
    assert none.solutions == () and not none.exhaustive
    assert none.reason == ("1 free signs exceed the enumeration limit 0: lattice reduction (LLL) found no "
                           "orientation; the orientation is not resolved")


def test_every_reported_unit_form_computes_the_function():
    cases = [ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]], [1, -1, -1]),  # a cancelled pair: L outside the span
             ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]], [1, 2, -1]),  # an antipodal pair
             ReLUFFN([[1, 0], [0, 1], [-1, -1]], [2, 2, 2]),  # a tent: two orientations
             ReLUFFN.random(3, 5, seed=4)]
    for net in cases:
        form = net.function_form()
        for sol in orient(form).solutions:
            assert sol.network().function_form() == form


# -- what a result says about itself --------------------------------------------------------


def test_a_bound_m_far_below_the_truth_is_refuted_while_the_first_segment_is_searched():
    """With m = 1 the first segment's search stops once it accepts a second breakpoint; what its samples
    prove up to there already refutes m (a refusal, never a result under "at most 1 unit")."""
    net = ReLUFFN.random(4, 6, seed=3)
    oracle = ExactOracle(net)
    with pytest.raises(OracleInconsistent, match=r"m = 1 is too small: the search path's exact samples prove [2-6] "
                                                 r"distinct hyperplanes, so the black box has at least [2-6] hidden"):
        learn_ffn(oracle, m=1, seed=0)
    assert oracle.count < ffn_query_bound(4, 1)


def test_the_count_text_states_the_bound_only_when_m_is_given():
    from exact.learn.ffn import SPEC

    net = ReLUFFN([[1, 0, 2], [0, 1, -1], [1, 1, 1]], [1, -2, 1])
    with_m, without = _learn(net, m=3, seed=4), _learn(net, seed=4)
    assert SPEC.count_text(with_m) == (f"the stated bound, checks included: (m + 1)(d − 2) + 10m + 32 = "
                                       f"{4 * 1 + 30 + 32} for m = 3; {with_m.details['paths']} path(s), seed 4")
    assert with_m.queries + with_m.verification_queries <= 4 * 1 + 30 + 32
    assert SPEC.count_text(without) == f"no bound without m; {without.details['paths']} path(s), seed 4"


def test_comparing_with_a_truth_checks_the_units_exactly_when_the_result_claims_them():
    net = ReLUFFN([[1, 0], [0, 1], [1, 1]], [1, 1, 1])
    r = _learn(net, m=3, seed=0)
    assert r.details["identifiable"]
    assert r.details.compare(r, net).same
    # the same function from more units: each pair ReLU(aᵀx) − ReLU(−aᵀx) = aᵀx is linear, and a + b + c = 0
    pairs = [[1, -1], [-1, 1], [1, 2], [-1, -2], [-2, -1], [2, 1]]
    other = ReLUFFN([[1, 0], [0, 1], [1, 1], *pairs], [1, 1, 1] + [1, -1] * 3)
    assert other.function_form() == net.function_form() and other.unit_form() != net.unit_form()
    verdict = r.details.compare(r, other)
    assert not verdict.same and verdict.rows[0][1].startswith("NO: differs from the model's canonical form")
    # a result that does not claim its units is compared at the function level only
    loose = _learn(net, seed=0)
    assert not loose.details["identifiable"] and loose.details.compare(loose, other).same


def test_every_annotation_of_the_relu_learners_modules_evaluates():
    """Postponed annotations are evaluated only by their readers (typing.get_type_hints, documentation tools)."""
    from hints import assert_annotations_evaluate

    from exact.learn import ffn, ffn_count, ffn_orient, ffn_path

    assert assert_annotations_evaluate(ffn, ffn_count, ffn_orient, ffn_path) > 20
