"""The float multi-head sweep's parts: one line's steps, their signs, and the sweep on simulated heads.

The sweep is not yet the float mode of ``learn_multi_head``: these tests pin its building blocks
(every returned number within its first-order bound, refusals where the answers do not fit).
"""

from __future__ import annotations

import numpy as np
import pytest

from exact.errors import ExactAttentionError, PrecisionInsufficient
from exact.learn.multi_head_lines import fit_line, line_model, resolve_signs
from exact.learn.multi_head_sweep import _link, _Linker, _robust, sweep
from exact.multihead import MultiHead

EPS = 2.0**-52


def _line(theta, rng):
    count = [0]

    def sample(ts):
        count[0] += len(ts)
        y = line_model(theta, ts)
        e = 4 * EPS * (np.abs(y) + 1.0)
        return y + rng.uniform(-1, 1, len(ts)) * e, e

    return sample, count


def _truth_steps(theta):
    n = (len(theta) - 2) // 3
    return [tuple(theta[2 + k + n * i] for i in range(3)) for k in range(n)]


def test_a_line_of_six_steps_is_read_within_its_bounds():
    rng = np.random.default_rng(1)
    H = 6
    beta = rng.normal(size=H) * 20
    gamma = rng.choice([-1.0, 1.0], size=H) * rng.uniform(30, 80, size=H)  # widths 0.01–0.03, centres 1 apart
    centre = np.linspace(-3, 3, H) + rng.uniform(-0.2, 0.2, H)
    theta = np.concatenate([[0.7, 1.3], beta, -gamma * centre, gamma])
    sample, count = _line(theta, rng)
    fit = fit_line(sample, T=4.0, B0=1.3, H=H)
    assert fit is not None and len(fit.steps) == H and fit.samples == count[0]
    shift = 0.0
    for b, o, g in _truth_steps(theta):
        s = min(fit.steps, key=lambda s: abs(s.centre + o / g))
        if b < 0:  # written as its mirror, β > 0, and the constant carries b
            s, shift = s.flipped(), shift + b
        assert abs(s.beta - b) <= s.e_beta and abs(s.o - o) <= s.e_o and abs(s.gamma - g) <= s.e_gamma
        assert s.e_gamma < 1e-9 * abs(g)
    assert abs(fit.A - (0.7 + shift)) <= fit.e_A
    assert abs(fit.B - 1.3) <= fit.e_B


def test_noise_aimed_at_a_steps_slope_stays_within_the_slopes_own_bound():
    """Answer errors of 0.9 e with the sign of γt across the step (the direction that moves γ): the
    slope's error is then far above the offset's bound, and still within its own."""
    g = 50.0
    theta = np.array([0.7, 1.3, 2.0, 0.0, g])

    def sample(ts):
        y = line_model(theta, ts)
        e = 1e-8 * (np.abs(y) + 1.0)
        return y + 0.9 * e * np.sign(g * ts) * (np.abs(g * ts) < 3.0), e

    fit = fit_line(sample, T=4.0, B0=1.3, H=2)
    assert fit is not None and len(fit.steps) == 1
    s = fit.steps[0]
    assert abs(s.gamma - g) <= s.e_gamma and abs(s.o) <= s.e_o and abs(s.beta - 2.0) <= s.e_beta
    assert abs(s.gamma - g) > 3 * s.e_o  # the case in which the two bounds must not be swapped


def test_a_line_with_more_steps_than_the_bound_is_marked_as_such():
    """Three steps under a bound of two: fitted by three (one more than the bound) and marked ``excess``;
    under a bound of one, not fitted at all."""
    rng = np.random.default_rng(2)
    theta = np.concatenate([[0.0, 0.5], [3.0, 5.0, 4.0], [60.0, 0.0, -90.0], [40.0, 50.0, 45.0]])
    sample, _ = _line(theta, rng)
    three = fit_line(sample, T=4.0, B0=0.5, H=3)
    assert three is not None and len(three.steps) == 3 and not three.excess
    over = fit_line(sample, T=4.0, B0=0.5, H=2)
    assert over is not None and len(over.steps) == 3 and over.excess
    assert fit_line(sample, T=4.0, B0=0.5, H=1) is None


def test_a_flat_line_has_no_steps():
    rng = np.random.default_rng(3)
    sample, _ = _line(np.array([2.0, -1.0]), rng)
    fit = fit_line(sample, T=4.0, B0=-1.0, H=2)
    assert fit is not None and fit.steps == () and abs(fit.A - 2.0) <= fit.e_A


def test_signs_come_from_the_known_constant():
    betas, errs = [3.0, 5.0, 11.0], [1e-12] * 3
    assert resolve_signs(1.0, 1e-12, 1.0 - 14.0, 1e-12, betas, errs) == (1, 0, 1)
    assert resolve_signs(1.0, 1e-12, 1.0, 1e-12, betas, errs) == (0, 0, 0)
    assert resolve_signs(1.0, 1e-12, 0.5, 1e-12, betas, errs) is None  # no subset: refused
    assert resolve_signs(1.0, 1e-12, 1.0 - 8.0, 1e-12, [3.0, 5.0, 8.0], errs) is None  # two subsets: refused


def _asker(model: MultiHead):
    heads = [h.to_numpy() for h in model.heads]
    cs = [np.array([float(x) for x in h.c]) if h.biased else np.zeros(model.d) for h in model.heads]
    b = float(model.b)
    count = [0]

    def ask2(X):
        count[0] += len(X)
        out = np.full(len(X), b)
        for (W, v), c in zip(heads, cs):
            s = np.einsum("nid,de,ne->ni", X, W, X[:, -1]) + X @ c
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            out += np.einsum("ni,nid,d->n", a, X, v)
        return out, 8 * EPS * (np.abs(out) + 4 * np.abs(X).sum(axis=(1, 2)))

    return (lambda X: ask2(X[:, None, :])), ask2, count


@pytest.mark.parametrize("d,H,biases,seed", [(3, 2, False, 0), (3, 2, True, 1), (4, 3, False, 0)])
def test_the_sweep_returns_every_head_within_its_bounds(d, H, biases, seed):
    truth = MultiHead.random(d, H, seed=seed, biases=biases).canonical()
    ask1, ask2, count = _asker(truth)
    medians = []

    def lines(X):  # the two-token answers are the lines'
        y, e = ask2(X)
        medians.append(float(np.median(e / np.abs(y))))
        return y, e

    heads, (b, eb), bounds, counts = sweep(ask1, lines, d, H, biases=biases, seed=seed)
    assert len(heads) == truth.H and counts.samples == count[0]
    # the median, over line calls, of each call's median declared error relative to its answers
    assert counts.relative_error == float(np.median(medians))
    for (W, v, c), (eW, ev, ec) in zip(heads, bounds):
        t = min(truth.heads, key=lambda h: float(np.abs(h.to_numpy()[0] - W).max()))
        tW, tv = t.to_numpy()
        tc = np.array([float(x) for x in t.c]) if t.biased else np.zeros(d)
        assert (np.abs(W - tW) <= eW).all() and (np.abs(v - tv) <= ev).all() and (np.abs(c - tc) <= ec).all()
        assert eW.max() < 1e-9
    assert abs(b - float(truth.b)) <= eb


def test_a_head_bound_below_the_truth_is_refused():
    truth = MultiHead.random(3, 3, seed=4).canonical()
    ask1, ask2, _ = _asker(truth)
    with pytest.raises(ExactAttentionError):
        sweep(ask1, ask2, 3, 2, biases=False, seed=0)


def _label(beta, o, e=1e-12):
    return (beta, e, o, e, {})


def test_a_link_names_each_head_of_the_other_row_by_the_sum_of_labels():
    base = [_label(1.0, 2.0), _label(-3.0, 0.5)]
    other = [_label(0.25, -1.0), _label(4.0, 7.0)]
    link = [_label(-3.0 + 4.0, 0.5 + 7.0), _label(1.0 + 0.25, 2.0 - 1.0)]
    assert _link(base, other, link) == [0, 1]


def test_a_row_missing_one_head_is_named_by_the_link_head_left_over():
    base = [_label(1.0, 2.0), _label(-3.0, 0.5), _label(2.0, -2.0)]
    other = [_label(0.25, -1.0), _label(4.0, 7.0)]
    # head 3 of base is absent from the other row: its link head pairs with nothing
    link = [_label(1.0 + 4.0, 2.0 + 7.0), _label(-3.0 + 0.25, 0.5 - 1.0), _label(2.0 + 1e-3, -2.0 + 0.3)]
    assert _link(base, other, link) == [1, 0, None]
    # two link heads left over (the other row misses one head, not two): not named
    bad = [_label(1.0 + 4.0, 2.0 + 7.0), _label(-9.0, 5.0), _label(2.0 + 1e-3, -2.0 + 0.3)]
    assert _link(base, other, bad) is None
    # a full row must pair every link head
    assert _link(base[:2], other, link[:1] + [_label(-9.0, 5.0)]) is None


def test_an_ambiguous_pairing_is_not_a_link():
    base = [_label(1.0, 1.0), _label(2.0, 2.0)]
    other = [_label(2.0, 2.0), _label(1.0, 1.0)]
    link = [_label(3.0, 3.0), _label(3.0, 3.0)]  # (0, 0) and (1, 1) both give 3
    assert _link(base, other, link) is None


class _LabelRows:
    """Rows whose heads' labels are linear in the row (β = wᵀv_h, o = wᵀu_h), as the sweep's are; a
    link row in ``refuse`` resolves no head."""

    def __init__(self, V, U, n, refuse=()):
        self.V, self.U, self.E, self.refuse, self.links = V, U, np.zeros((n, 1)), list(refuse), 0

    def labels(self, w, perm):
        return [_label(float(w @ self.V[h]), float(w @ self.U[h])) for h in perm]

    def row(self, w, js, A, eA):
        return None if any(np.array_equal(w, r) for r in self.refuse) else self.labels(w, range(len(self.V)))


def _linker_case(refuse_pairs, seed=0):
    rng = np.random.default_rng(seed)
    m, d, n = 3, 4, 5
    V, U, M = rng.normal(size=(m, d)), rng.normal(size=(m, d)), rng.normal(size=(4, d))
    rows = _LabelRows(V, U, n, [M[a] + M[b] for a, b in refuse_pairs])
    perms = [list(rng.permutation(m)) for _ in M]  # each row lists its heads in its own order
    kept = {i: rows.labels(M[i], perms[i]) for i in range(len(M))}
    return rows, M, kept, perms, _Linker(rows, M, kept, 0, m, 0.0, 0.0)


def test_a_row_that_cannot_link_to_the_base_links_through_another_linked_row():
    rows, M, kept, perms, linker = _linker_case([(0, 2)])
    assert linker.link(1) and linker.link(2) and linker.link(3)
    for i, order in linker.order.items():  # row i's entry order[i][h] is the base's head h
        assert [perms[i][k] for k in order] == perms[0]
    assert linker.reads(0) == 4 and linker.why_text() == "every kept row linked"


def test_a_row_that_links_to_no_row_is_counted_and_costs_a_bounded_number_of_lines():
    rows, M, kept, perms, linker = _linker_case([(0, 1), (0, 2), (1, 2), (0, 3)])
    assert not linker.link(1) and not linker.link(2)  # rows 1 and 2 have only the base to link to
    assert linker.link(3) is False and 2 not in linker.order and rows.links == 3 * 3
    assert linker.why_text() == "3 rows found no link line showing every head"
    assert linker.reads(1) == 1


def _readings(d, n, missing, rng):
    W = rng.normal(size=(d, d))
    M, E = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    rows, cols = np.meshgrid(range(n), range(n), indexing="ij")
    keep = np.ones((n, n), dtype=bool)
    keep.flat[rng.choice(n * n, missing, replace=False)] = False
    r, j = rows[keep], cols[keep]
    A = (M[r][:, :, None] * E[j][:, None, :]).reshape(len(r), d * d)
    e = 10.0 ** rng.uniform(-12, -9, len(r))
    y = A @ W.ravel() + rng.uniform(-1, 1, len(r)) * e
    return W, A, y, e


def test_the_joint_fit_reads_W_from_rows_with_fewer_than_d_lines():
    rng = np.random.default_rng(3)
    d, n = 4, 6
    W, A, y, e = _readings(d, n, 8, rng)  # 8 of 36 lines missed: some rows keep fewer than d = 4
    x, bound, aside = _robust(A, y, e)
    assert aside == 0 and (np.abs(x - W.ravel()) <= bound).all()


def test_a_reading_beside_the_truth_is_set_aside_and_the_fit_stands():
    rng = np.random.default_rng(4)
    W, A, y, e = _readings(4, 8, 0, rng)
    y = y.copy()
    y[5] += 1e4 * e[5]  # a line fit that settled beside the truth
    x, bound, aside = _robust(A, y, e)
    assert aside >= 1 and (np.abs(x - W.ravel()) <= bound).all()


def test_many_readings_beside_the_truth_are_refused():
    rng = np.random.default_rng(5)
    W, A, y, e = _readings(3, 5, 0, rng)
    y = y + rng.choice([-1.0, 1.0], len(y)) * 1e6 * e  # every reading off
    with pytest.raises(PrecisionInsufficient, match="disagree"):
        _robust(A, y, e)


def test_readings_that_cannot_determine_W_are_refused():
    rng = np.random.default_rng(6)
    W, A, y, e = _readings(3, 3, 0, rng)
    with pytest.raises(PrecisionInsufficient, match="cannot determine"):
        _robust(A[:8], y[:8], e[:8])  # 8 readings, 9 unknowns
    A2 = A.copy()
    A2[:, 0] = 0.0  # no reading sees W[0, 0]
    with pytest.raises(PrecisionInsufficient, match="do not determine"):
        _robust(A2, y, e)


def test_the_cover_bounds_the_rank_of_a_heads_slope_design():
    d = 3
    rows = _LabelRows(np.zeros((1, d)), np.zeros((1, d)), 5)
    # head 0 of each row, read on the lines in g; rows 0 and 1 on all five lines, row 2 on one
    reads = [{0: 1, 1: 1, 2: 1, 3: 1, 4: 1}, {0: 1, 1: 1, 2: 1, 3: 1, 4: 1}, {2: 1}]
    kept = {i: [(1.0, 1e-12, 0.0, 1e-12, g)] for i, g in enumerate(reads)}
    linker = _Linker(rows, np.zeros((3, d)), kept, 0, 1, 0.0, 0.0)
    linker.order = {0: [0], 1: [0], 2: [0]}
    # by rows: min(5, 3) + min(5, 3) + min(1, 3) = 7; by lines: 2 + 2 + 3 + 2 + 2 = 11
    assert linker.cover(0, d) == 7
    M, E = np.random.default_rng(0).normal(size=(3, d)), np.random.default_rng(1).normal(size=(5, d))
    design = np.array([np.kron(M[i], E[j]) for i, g in enumerate(reads) for j in g])
    assert np.linalg.matrix_rank(design) == 7 < d * d
    # here the lines bind: line 0 is read in three rows (at most d = 2 directions), line 1 in one
    d = 2
    reads = [{0: 1, 1: 1}, {0: 1}, {0: 1}]
    kept = {i: [(1.0, 1e-12, 0.0, 1e-12, g)] for i, g in enumerate(reads)}
    linker = _Linker(rows, np.zeros((3, d)), kept, 0, 1, 0.0, 0.0)
    linker.order = {0: [0], 1: [0], 2: [0]}
    assert linker.cover(0, d) == 3  # by rows 2 + 1 + 1 = 4; by lines min(3, 2) + 1 = 3
    M, E = np.random.default_rng(2).normal(size=(3, d)), np.random.default_rng(3).normal(size=(2, d))
    design = np.array([np.kron(M[i], E[j]) for i, g in enumerate(reads) for j in g])
    assert np.linalg.matrix_rank(design) == 3


def test_a_base_row_on_which_two_heads_share_their_labels_is_replaced():
    """Heads 1 and 2 have equal heights and offsets in the sweep's first row (built from the sweep's
    own draws for this seed): every link through it is ambiguous, and the next base links them."""
    from exact.learn.multi_head_sweep import _frame, _unit
    from exact.models import SingleHead

    d, seed = 4, 0
    rng = np.random.default_rng(seed)
    n = d + 4 + d // 4
    q0, _, Wdir = _unit(rng, d) * 0.5, _frame(rng, n, d), _frame(rng, n, d)
    g = np.random.default_rng(99)
    Ws, vs = [g.normal(size=(d, d)) for _ in range(3)], [g.normal(size=d) for _ in range(3)]
    perp = np.linalg.svd(Wdir[:1])[2][1:].T  # directions orthogonal to row 0
    vs[1] = vs[0] + perp @ g.normal(size=d - 1) / 2  # the same height in row 0
    z = perp @ g.normal(size=d - 1) / 2
    D = g.normal(size=(d, d))
    Ws[1] = Ws[0] + D - np.outer(D @ q0 - z, q0) / (q0 @ q0)  # (W₁ − W₀)q₀ = z ⊥ row 0: the same offset
    truth = MultiHead([SingleHead(W.tolist(), v.tolist()) for W, v in zip(Ws, vs)]).canonical()
    ask1, ask2, _ = _asker(truth)
    heads, _, bounds, counts = sweep(ask1, ask2, d, 3, biases=False, seed=seed)
    assert len(heads) == 3
    for (W, v, _c), (eW, ev, _e) in zip(heads, bounds):
        t = min(truth.heads, key=lambda h: float(np.abs(h.to_numpy()[0] - W).max()))
        assert (np.abs(W - t.to_numpy()[0]) <= eW).all() and (np.abs(v - t.to_numpy()[1]) <= ev).all()



def test_a_jacobian_that_overflows_keeps_the_damped_fit_without_calling_lapack(capfd, monkeypatch):
    """Once the Jacobian overflows (an inf column), no step is solved for and the fit reached
    so far is returned: LAPACK never sees the non-finite matrix."""
    from exact.learn import multi_head_lines as M

    t = np.linspace(-1.0, 1.0, 9)
    y = 0.5 + 2.0 * t + 1e-3 * np.cos(7.0 * t)  # not a line: the cost stays above 0
    theta = np.array([0.0, 0.0])
    calls = {"jac": 0, "solve": 0, "lstsq": 0}

    def jac(ph):
        calls["jac"] += 1
        J = np.vstack([np.ones_like(t), t]).T
        if calls["jac"] > 1:  # the first call is finite, every later one overflows
            J[:, 1] = np.inf
        return J

    solve, lstsq = np.linalg.solve, np.linalg.lstsq

    def counted(name, f):
        def g(*a, **k):
            calls[name] += 1
            return f(*a, **k)

        return g

    monkeypatch.setattr(np.linalg, "solve", counted("solve", solve))
    monkeypatch.setattr(np.linalg, "lstsq", counted("lstsq", lstsq))
    with np.errstate(invalid="ignore"):  # as in _levenberg: inf / inf in the column scale
        got = M._minimise(theta, t, y, np.full(len(t), 1e-6), 50, 0, lambda x: x, lambda x: x, jac)
    monkeypatch.undo()
    out, err = capfd.readouterr()
    assert "DLASCL" not in out + err
    assert calls["jac"] == 3 and calls["lstsq"] == 0  # one overflow stopped each loop at once
    assert 1 <= calls["solve"] <= 12  # every solve belongs to the first, finite iteration
    assert np.isfinite(got).all() and not np.array_equal(got, theta)  # the damped step was kept
    r0, r1 = y - (theta[0] + theta[1] * t), y - (got[0] + got[1] * t)
    assert r1 @ r1 < r0 @ r0


def test_declared_errors_near_the_smallest_float_refuse_the_line_fit():
    """Errors of 1e-316 make the scaled Jacobian overflow at the fit: no bound, a refusal (None),
    not a LAPACK error."""
    from exact.learn import multi_head_lines as M

    s = 1e-300
    t = np.linspace(-2.0, 2.0, 201)
    th = np.array([0.3 * s, 0.1 * s, s, -0.0, 50.0])
    y = M.line_model(th, t)
    fit, _ = M._fit(t, y, np.full(201, 1e-316), [(0.0, 50.0, s)], 0.1 * s, -2.0, 2.0)
    assert fit is None
