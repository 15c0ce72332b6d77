"""A learner outside exact-attention: heads with a diagonal W, exactly, from d + d queries.

If W is known to be diagonal, ``v`` comes from the ``d`` one-token queries ``[e_i]`` and each
``W_jj`` from one logit ``u_jᵀ W e_j`` (Theorem 4.1's probe ``u_j`` has a pivot component
only outside column j's diagonal, which a diagonal W ignores).  The package declares
``SPEC`` in the ``exact_attention.learners`` entry-point group (``pyproject.toml``), so
once it is installed, ``exact-attention learn diagonal-head``, ``certify`` and ``verify``
find it.
"""

from exact import SingleHead, registry
from exact.learn import ProbePlan, Run, read_v
from exact.sequences import Sequence


def learn_diagonal(oracle, *, mode=None, checks=2, check_seed=None):
    """W and v of a head with a diagonal W, exactly, from d + d queries."""
    d = oracle.d
    with Run(SPEC, oracle, mode=mode, queries=2 * d, checks=checks, check_seed=check_seed) as run:
        v, _ = read_v(run)                                  # d one-token queries
        plan = ProbePlan.choose(v)
        probes = [plan.sequences()[plan.index(j, j)] for j in range(d)]
        answers = run.ask(probes)                           # d two-token queries
        meas = [plan.measurements(v)[plan.index(j, j)] for j in range(d)]
        diag = run.arith.combine(answers, meas, [[(1, j)] for j in range(d)], [f"W[{j}][{j}]" for j in range(d)])
        W = [[diag[i] if i == j else 0 for j in range(d)] for i in range(d)]
        return run.finish(SingleHead(W, v))


def check_diagonal(model, transcript, conditions):
    """The transcript must be exactly the probes this learner derives from the model."""
    d = model.d
    if not any(model.v):
        return "v = 0: no query depends on W"
    if any(model.W[i][j] for i in range(d) for j in range(d) if i != j):
        return "the certified W is not diagonal"
    plan = ProbePlan.choose(model.v)
    expected = [Sequence.basis(d, i) for i in range(d)] + [plan.sequences()[plan.index(j, j)] for j in range(d)]
    return None if [q.X for q in transcript] == expected else "not the diagonal learner's probe set"


def verify_claims(budget):
    """The claims ``exact-attention verify`` checks for this learner: exact on random diagonal
    heads, with exactly 2d queries as the oracle counts them (the count stated here, apart from
    the learner)."""
    from exact import ExactOracle
    from exact.formulas import Formula
    from exact.verify import Claim, Instance, Verdict

    two_d = Formula("2d", lambda d: 2 * d)

    def check(truth):
        oracle = ExactOracle(truth)
        result = learn_diagonal(oracle)
        exact = result.model == truth and result.certificate.check().holds
        count = two_d.check(oracle.count - result.verification_queries, reported=result.queries, d=truth.d)
        return Verdict(exact, count, "" if exact else "the learned head differs", f"{result.queries} = 2d queries")

    sizes = {"quick": (1, 2, 3), "standard": (1, 2, 3, 5, 8), "full": (1, 2, 3, 5, 8, 16)}[budget]
    heads = []
    for d in sizes:
        h = SingleHead.random(d, seed=d)
        heads.append(Instance(f"d={d}", SingleHead([[h.W[i][j] if i == j else 0 for j in range(d)]
                                                    for i in range(d)], h.v)))
    return [Claim("diagonal heads: exact, 2d queries", tuple(heads), check)]


SPEC = registry.LearnerSpec(
    name="diagonal-head",
    summary="heads with a diagonal W: exactly, from d + d queries",
    model_kind="single-head",
    modes=("certified", "symbolic"),
    learn=learn_diagonal,
    query_count=lambda d, **conditions: 2 * d,
    count_formula="2d",
    check_certificate=check_diagonal,
    scope=lambda conditions: "among single heads with a diagonal W",
    unchecked=lambda conditions: ("among single heads", "among heads with a diagonal W"),
    claims=verify_claims,
)
