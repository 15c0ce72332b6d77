"""PNG plots of a ``verify`` run, drawn from the measurements its instances record.

Four figures, each drawn when the run holds its data:

``phase.png``
    Theorem 5.1: the compressed-sensing learner's success rate against C, where it asks
    m = ⌈C·2rd⌉ measurements, one curve per (d, r), with the degrees of freedom
    2rd − r² marked; below them no learner can succeed.
``noise.png``
    Theorem 6.1: ‖ΔW‖_F against the noise level τ, per learner (the median over the
    instances and noise models), with the median certified bound dashed.
``ffn.png``
    The ReLU FFN learner: oracle queries per parameter for each shape (d, m), against the
    stated bound per parameter.
``multihead.png``
    [KKG26]: queries asked against the paper's count 4Hd² − 2H + 1: the paper plan on
    the diagonal, the fast plan below it.

Matplotlib comes with the ``plot`` extra; :func:`require_matplotlib` says so before any
work is done.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict

__all__ = ["require_matplotlib", "draw_plots", "PLOTS"]

PLOTS = ("phase.png", "noise.png", "ffn.png", "multihead.png")


def require_matplotlib():
    """The ``matplotlib.pyplot`` module on the non-interactive Agg backend, or :class:`MissingDependency`."""
    try:
        import matplotlib
    except ImportError:
        from ..errors import MissingDependency

        raise MissingDependency("--plots needs matplotlib: pip install 'exact-attention[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _metrics(reports, theorem: str, key: str) -> list[dict]:
    return [o.metrics for r in reports if r.id is not None and r.id.theorem == theorem
            for o in r.outcomes if key in o.metrics]


def draw_plots(reports, directory) -> list[str]:
    """Draw every figure the run has data for into ``directory`` (created); the paths written.

    Each report's ``id`` says which theorem its claim belongs to.
    """
    plt = require_matplotlib()
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, draw, data in (
        ("phase.png", _phase, _metrics(reports, "5.1", "success")),
        ("noise.png", _noise, _metrics(reports, "6.1", "tau")),
        ("ffn.png", _ffn, _metrics(reports, "ffn", "parameters")),
        ("multihead.png", _multihead, _metrics(reports, "kkg", "plan")),
    ):
        if not data:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
        draw(ax, data)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(directory, name)
        fig.savefig(path, format="png")
        plt.close(fig)
        written.append(path)
    return written


def _phase(ax, data) -> None:
    curves: dict = defaultdict(lambda: defaultdict(list))
    for m in data:
        curves[(m["d"], m["r"])][m["C"]].append(1.0 if m["success"] else 0.0)
    for (d, r), points in sorted(curves.items()):
        Cs = sorted(points)
        line, = ax.plot(Cs, [statistics.fmean(points[C]) for C in Cs], marker="o", label=f"d={d}, r={r}")
        ax.axvline((2 * r * d - r * r) / (2 * r * d), color=line.get_color(), linestyle=":", alpha=0.8)
    ax.set_xlabel("C (measurements m = ⌈C·2rd⌉)")
    ax.set_ylabel("success rate (relative error ≤ 1e-6)")
    ax.set_title("Thm 5.1: phase transition of nuclear-norm recovery\n(dotted: 2rd − r² degrees of freedom)")
    ax.set_ylim(-0.05, 1.05)
    ax.legend()


def _noise(ax, data) -> None:
    errors: dict = defaultdict(lambda: defaultdict(list))
    bounds: dict = defaultdict(lambda: defaultdict(list))
    for m in data:
        errors[m["learner"]][m["tau"]].append(m["error"])
        bounds[m["learner"]][m["tau"]].append(m["bound"])
    for learner in sorted(errors):
        taus = sorted(errors[learner])
        line, = ax.plot(taus, [statistics.median(errors[learner][t]) for t in taus], marker="o",
                        label=f"{learner}: error")
        ax.plot(taus, [statistics.median(bounds[learner][t]) for t in taus], linestyle="--", color=line.get_color(),
                label=f"{learner}: certified bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("noise level τ")
    ax.set_ylabel("‖ΔW‖_F (median)")
    ax.set_title("Thm 6.1: error against τ, with the certified bound")
    ax.legend(fontsize=8)


def _ffn(ax, data) -> None:
    shapes: dict = defaultdict(list)
    bound: dict = {}
    for m in data:
        shapes[(m["d"], m["m"])].append(m["queries"] / m["parameters"])
        bound[(m["d"], m["m"])] = m["bound"] / m["parameters"]
    keys = sorted(shapes)
    xs = range(len(keys))
    ax.bar(xs, [statistics.fmean(shapes[k]) for k in keys], label="queries / parameter (mean)")
    ax.plot(xs, [bound[k] for k in keys], "k_", markersize=22, mew=2, label="stated bound / parameter")
    ax.set_xticks(list(xs), [f"({d}, {m})" for d, m in keys])
    ax.set_xlabel("(d, m)")
    ax.set_ylabel("oracle queries per parameter")
    ax.set_title("ReLU FFN extraction: queries per parameter")
    ax.legend()


def _multihead(ax, data) -> None:
    for plan, marker, label in (("paper", "o", "paper plan"), ("fast", "s", "fast plan (beyond)")):
        points = [(m.get("paper", m["formula"]), m["queries"]) for m in data if m["plan"] == plan]
        if points:
            ax.scatter(*zip(*points), marker=marker, label=label, alpha=0.8)
    top = max(max(m.get("paper", m["formula"]), m["queries"]) for m in data)
    ax.plot([1, top], [1, top], "k--", linewidth=1, label="queries = 4Hd² − 2H + 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("the paper's count 4Hd² − 2H + 1")
    ax.set_ylabel("queries asked")
    ax.set_title("[KKG26]: queries against the formula")
    ax.legend()
