"""The pair plan of the canonical multi-head learner (``method="pairs"``, beyond [KKG26]).

Lines ``[u_a × k, u_b, q]`` of 2H answers give two scores per head; the residue of each pole
names its head through an interval the learner makes disjoint from the ``v_h`` it knows
(``docs/multi-head.md``).  Exact claims are checked with ``==`` against the truth's canonical
form; counts against the formula, as the oracle counted them.
"""

from fractions import Fraction

import pytest

from exact import ExactOracle, MultiHead, learn_multi_head
from exact.canonical import canonical_form
from exact.errors import OracleInconsistent
from exact.formulas import KKG_LOWER, KKG_PAIRS, KKG_PAIRS_BIASED, KKG_PAPER
from exact.learn.kkg_pairs import FewerPoles, identify_pair, label_scale, model_pair, pair_sequences
from exact.learn.multi_head import lower_bound, pairs_query_count

F = Fraction


def _learn(model, H, *, seed=0, **kw):
    oracle = ExactOracle(model)
    r = learn_multi_head(oracle, heads=H, method="pairs", seed=seed, **kw)
    return r, oracle.count - r.verification_queries


@pytest.mark.parametrize("d, H", [(1, 1), (1, 3), (2, 1), (2, 2), (3, 2), (3, 3), (4, 2), (5, 3)])
def test_the_pair_plan_is_exact_at_its_count(d, H):
    model = MultiHead.random(d, H, seed=7 * d + H)
    r, counted = _learn(model, H, seed=d)
    assert r.exact and r.model == canonical_form(model)
    assert r.details["fallback_groups"] == 0 and r.details["redraws"] == 0
    assert counted == r.queries == pairs_query_count(d, H) == KKG_PAIRS(d=d, H=H)
    assert r.details["pair_lines"] == (d // 2) * (d - 1)
    assert r.max_length == 2 * H + 1
    assert r.certificate.check().holds


def test_the_count_is_within_one_and_a_half_times_the_parameters_at_8_4_and_16_4():
    for d, H, count in ((8, 4, 338), (16, 4, 1194)):
        assert pairs_query_count(d, H) == KKG_PAIRS(d=d, H=H) == count
        assert count <= 1.5 * KKG_LOWER(d=d, H=H) and lower_bound(d, H) == KKG_LOWER(d=d, H=H)
    assert [KKG_PAIRS(d=d, H=H) <= KKG_PAPER(d=d, H=H) for d in range(1, 12) for H in range(1, 7)] == [True] * 66


def test_8_4_is_learned_exactly_at_338_queries():
    model = MultiHead.random(8, 4, seed=0)
    r, counted = _learn(model, 4, seed=0)
    assert r.model == canonical_form(model) and counted == r.queries == 338


@pytest.mark.slow
def test_16_4_is_learned_exactly_at_1194_queries():
    model = MultiHead.random(16, 4, seed=0)
    r, counted = _learn(model, 4, seed=0)
    assert r.model == canonical_form(model) and counted == r.queries == 1194 and r.certificate.check().holds


@pytest.mark.parametrize("d, H", [(1, 2), (2, 2), (3, 3)])
def test_heads_with_biases(d, H):
    model = MultiHead.random(d, H, seed=d + H, biases=True)
    r, counted = _learn(model, H, seed=1, biases=True)
    assert r.model == canonical_form(model) and r.model.b == model.b
    assert counted == pairs_query_count(d, H, biases=True) == KKG_PAIRS_BIASED(d=d, H=H)
    assert r.certificate.check().holds


def test_symbolic_mode_confirms_each_line_in_sympy():
    model = MultiHead.random(3, 2, seed=5)
    r, counted = _learn(model, 2, seed=1, mode="symbolic")
    assert r.mode == "symbolic" and r.model == canonical_form(model) and counted == pairs_query_count(3, 2)


@pytest.mark.parametrize("flags, merged", [({"duplicate_w": True}, True), ({"zero_v": True}, True),
                                           ({"shared_v": True}, False)])
def test_structured_heads(flags, merged):
    """Equal W merge and zero v vanish (fewer canonical heads, the same count); heads sharing a v cannot be
    named by residues, so their groups fall back to links, never above the paper's count."""
    model = MultiHead.random(4, 3, seed=2, **flags)
    r, counted = _learn(model, 3, seed=1)
    assert r.model == canonical_form(model)
    if merged:
        assert r.model.H == 2 and counted == pairs_query_count(4, 3) and r.details["fallback_groups"] == 0
    else:
        assert r.details["fallback_groups"] == 3 and pairs_query_count(4, 3) < counted <= KKG_PAPER(d=4, H=3)


def test_a_bound_below_the_heads_is_refused():
    with pytest.raises(OracleInconsistent, match="more than 2 canonical"):
        learn_multi_head(ExactOracle(MultiHead.random(3, 3, seed=1)), heads=2, method="pairs", seed=0)


def test_label_scale_makes_the_intervals_disjoint_and_away_from_zero():
    ca, cb = [F(1), F(2), F(-3)], [F(5), F(-7), F(2)]
    j = label_scale(ca, cb)
    eps = F(1, 2**j)
    ivs = sorted((min(a, a - eps * b), max(a, a - eps * b)) for a, b in zip(ca, cb))
    assert all(not lo <= 0 <= hi for lo, hi in ivs) and all(x[1] < y[0] for x, y in zip(ivs, ivs[1:]))
    assert j == 0 or label_scale([a for a in ca], [2 * b for b in cb]) == j + 1  # the smallest such j
    assert label_scale([F(1), F(1)], [F(1), F(2)]) is None  # equal ca: no residue names its head
    assert label_scale([F(0), F(1)], [F(1), F(2)]) is None  # ca = 0: a pole may vanish
    assert label_scale([F(1), F(2)], [F(0), F(2)]) is None  # cb = 0: the line does not show s_b


# a model, a final token and the pair (w_a, w_b/4) of the identify_pair doctest: labels (ca, cb) per head
MODEL = MultiHead([([[1, 0], [0, 2]], [1, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])
Q, UA, UB = [0, 1], [1, 1], [F(1, 4), F(9, 8)]
LABELS = [(F(1), F(5, 16)), (F(2), F(1, 2))]


def _samples(model, H=2):
    return list(enumerate(ExactOracle(model).query_batch(pair_sequences(UA, UB, Q, range(2 * H)))))


def test_a_line_gives_the_scores_of_every_labelled_head():
    got = identify_pair(_samples(MODEL), LABELS, A=F(7, 2), H=2)
    assert got == model_pair(MODEL, UA, UB, Q, LABELS) == ((F(0), F(1, 4)), (F(1), F(1, 4)))
    # the order of the labels is the order of the result
    assert identify_pair(_samples(MODEL), LABELS[::-1], A=F(7, 2), H=2) == got[::-1]
    # with the bound H = 3 the line has 6 samples and the same answer
    assert identify_pair(_samples(MODEL, 3), LABELS, A=F(7, 2), H=3) == got


def test_labels_of_other_heads_are_refuted():
    """Answers of a model whose v are not the labels' cannot be named: refused, never decoded."""
    other = MultiHead([([[1, 0], [0, 2]], [3, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])  # v_1 changed
    with pytest.raises(OracleInconsistent):
        identify_pair(_samples(other), LABELS, A=F(7, 2), H=2, max_prec=2048)


def test_two_heads_with_one_pole_are_degenerate():
    """Heads with equal W q (different W, different v): one pole on every line through q; the plan
    redraws its probes."""
    merged = MultiHead([([[0, 0], [0, 0]], [1, 0]), ([[1, 0], [0, 0]], [0, 1])])
    labels = [(F(1), F(1, 4)), (F(0), F(1, 8))]  # (w_aᵀv_h, w_bᵀv_h); A = u_aᵀ(v_1 + v_2) = 2
    with pytest.raises(FewerPoles, match="fewer than 2 poles"):
        identify_pair(_samples(merged), labels, A=F(2), H=2, max_prec=2048)
    with pytest.raises(FewerPoles, match="share a pair line's pole"):
        model_pair(merged, UA, UB, Q, labels)
    with pytest.raises(FewerPoles, match="not the model's heads"):
        model_pair(merged, UA, UB, Q, [(F(1), F(1, 8)), (F(0), F(1, 8))])


def _targeted(seed: int = 3):
    """Two heads built against the probe seed (an adversarial review's construction): W_2 = W_1 + a·bᵀ with
    bᵀq_1 = 0, so they coincide on the first group's final token."""
    import random

    from exact.learn.multi_head import Probes

    q1 = Probes.draw(2, random.Random(seed)).q[0]
    W1 = [[F(1), F(2)], [F(0), F(1)]]
    b, a = [q1[1], -q1[0]], [F(1), F(-1)]
    W2 = [[W1[i][j] + a[i] * b[j] for j in range(2)] for i in range(2)]
    return MultiHead([(W1, [1, 2]), (W2, [3, -1])], d=2)


def test_a_first_group_merged_by_the_seed_is_redrawn_not_blamed_on_the_oracle():
    """The pair line refutes the first group's (merged) heads: the probes are redrawn, as in the fast plan."""
    truth = _targeted()
    r = learn_multi_head(ExactOracle(truth), heads=2, method="pairs", seed=3, checks=0)
    assert r.model == canonical_form(truth) and r.details["redraws"] == 1 and r.certificate.check().holds


@pytest.mark.parametrize("biases", [False, True])
def test_a_model_with_no_canonical_heads(biases):
    """Every v = 0: no pole on any line; the pair lines are the constant b + qᵀV, at the plan's count."""
    truth = MultiHead([([[1, 2], [3, 4]], [0, 0])], d=2)
    for H in (1, 2):
        r, counted = _learn(truth, H, seed=3, biases=biases)
        assert r.model.H == 0 and r.model == canonical_form(truth) and counted == pairs_query_count(2, H, biases)
        assert r.certificate.check().holds


def test_a_model_built_against_the_seed_is_the_stated_assumption_and_the_checks_catch_it():
    """An adversarial review merged two heads on the first group's token *and* their poles on the one pair
    line of the second group (θ is free, so a merged pole reads as one head): with checks=0 the result is one
    head, and it states the genericity it rests on; the default verification queries refuse it."""
    import random

    from exact.learn.multi_head import GENERIC, Probes, _dot
    from exact.linalg import QMatrix

    pr = Probes.draw(2, random.Random(3))
    (q1, q2), (wa, wb) = pr.q, pr.w
    W1, v1 = [[F(1), F(2)], [F(0), F(1)]], [F(1), F(2)]
    v2 = [wb[1], -wb[0]]  # w_b ⟂ v_2
    V = [x + y for x, y in zip(v1, v2)]
    eps = F(1, 1 << label_scale([_dot(wa, V)], [_dot(wb, V)]))
    beta = _dot(wb, [F(int(x.p), int(x.q)) for x in QMatrix.from_rows(W1).matvec(list(q2))])
    z = [F(int(x.p), int(x.q)) for x in QMatrix.from_rows([list(wa), list(wb)]).inv().matvec([-eps * beta, -2 * beta])]
    D = QMatrix.from_columns([[F(0), F(0)], z]) @ QMatrix.from_columns([list(q1), list(q2)]).inv()
    W2 = [[W1[i][k] + F(int(D.entry(i, k).p), int(D.entry(i, k).q)) for k in range(2)] for i in range(2)]
    truth = MultiHead([(W1, v1), (W2, v2)], d=2)
    r = learn_multi_head(ExactOracle(truth), heads=2, method="pairs", seed=3, checks=0)
    assert r.model != canonical_form(truth) and GENERIC in r.assumptions  # the stated assumption is what fails
    with pytest.raises(OracleInconsistent, match="verification queries.*" + "probes generic"):
        learn_multi_head(ExactOracle(truth), heads=2, method="pairs", seed=3, check_seed=0)
