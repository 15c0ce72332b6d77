"""The float multi-head sweep's parts: one line's steps, their signs, and the sweep on simulated heads.

The sweep is not yet the float mode of ``learn_multi_head``: these tests pin its building blocks
(every returned number within its first-order bound, refusals where the answers do not fit).
"""

from __future__ import annotations

import numpy as np
import pytest

from exact.errors import ExactAttentionError
from exact.learn.multi_head_lines import fit_line, line_model, resolve_signs
from exact.learn.multi_head_sweep import sweep
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
    heads, (b, eb), bounds, counts = sweep(ask1, ask2, d, H, biases=biases, seed=seed)
    assert len(heads) == truth.H and counts.samples == count[0]
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
