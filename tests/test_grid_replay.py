"""The grid replay, and the certified single-head learner's matrix forms, against independent decisions.

The replay decides a transcript's offset probes ``[b_i + Δ_r; b_i]`` laid out as a grid with flint
matrix products (:func:`exact.certify._grid_undecided`).  Every verdict here is held to a decision
made without it: each answer against the model's exp-ratio on the sequence rebuilt from its rows
(:func:`answer_equals`), or the replay with the grid path switched off.
"""

import dataclasses
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq

from exact import ExactOracle, SingleHead, learn_single_head, registry
from exact import certify
from exact.arith import CertifiedArithmetic
from exact.arith.base import MatrixParams, OuterMeasurements
from exact.arith.certified import _params
from exact.certify import failed_entries
from exact.expfield import ExpRatio
from exact.learn.single_head import ProbePlan
from exact.linalg import QMatrix, less_pivot_rows, mismatches, outer_sum, sparse_rows_times
from exact.oracles import ExactAnswer, Query, answer_equals, answer_floats
from exact.errors import ShapeError
from exact.sequences import Sequence


def _rebuilt(X: Sequence) -> Sequence:
    """The sequence from its rows alone (no offset form): the independent side of a verdict."""
    return Sequence.from_rows(X.dense())


def _independent(model, entries) -> list[int]:
    return [i for i, q in enumerate(entries) if not answer_equals(q.answer, model.exact(_rebuilt(q.X)))]


def _generic(model, entries, monkeypatch) -> list[int]:
    with monkeypatch.context() as m:
        m.setattr(certify, "_grid_undecided", lambda model, entries, seen=None: None)
        return failed_entries(model, entries)


def _wrong_models(truth, rng, n=3):
    d = truth.d
    for _ in range(n):
        W = [list(r) for r in truth.W]
        k, j = (int(x) for x in rng.integers(d, size=2))
        W[k][j] += Fraction(1, 3)
        yield SingleHead(W, truth.v)
        yield SingleHead(truth.W, [x + (i == j) for i, x in enumerate(truth.v)])


@pytest.mark.parametrize("d, seed", [(8, 0), (9, 1), (12, 2)])
def test_grid_replay_fails_exactly_what_an_independent_decision_fails(d, seed, monkeypatch):
    truth = SingleHead.random(d, seed=seed)
    result = learn_single_head(ExactOracle(truth), check_seed=0)
    entries = list(result.certificate.transcript)
    assert certify._grid_undecided(result.model, entries) == list(range(d))  # the d v-queries: one by one
    assert failed_entries(result.model, entries) == []
    rng = np.random.default_rng(seed)
    for wrong in _wrong_models(truth, rng):
        expected = _independent(wrong, entries)
        assert expected  # the change is seen by some probe
        assert failed_entries(wrong, entries) == expected == _generic(wrong, entries, monkeypatch)


def test_a_model_given_as_a_flint_matrix_is_replayed_like_one_given_as_lists(monkeypatch):
    truth = SingleHead.random(8, seed=3)
    entries = list(learn_single_head(ExactOracle(truth), check_seed=0).certificate.transcript)
    W = [list(r) for r in truth.W]
    W[2][5] -= 1
    wrong = SingleHead._from_qmatrix(QMatrix.from_rows(W), tuple(truth.v))
    expected = _independent(SingleHead(W, truth.v), entries)
    assert expected and failed_entries(wrong, entries) == expected == _generic(wrong, entries, monkeypatch)


def _grid_transcript(truth, y=1, shift=None):
    """Offset probes ``[y·e_j + u_k; y·e_j]`` for every column j and probe k of the plan, answered by the
    model's compact form; ``shift`` adds a common amount to both scores of every answer."""
    d = truth.d
    plan = ProbePlan.choose(list(truth.v))
    offsets = [s._offset[1:] for s in plan.sequences()[:d]]  # the plan's d offsets (shared objects)
    yq = Fraction(y)
    seqs = []
    for j in range(d):
        base = Sequence._exact(d, (((j, yq),),), (((j, fmpq(yq.numerator, yq.denominator)),),))
        seqs += Sequence._offset_pairs([base], offsets)
    entries = []
    for X in seqs:
        s, c0, s2, c1 = truth._pair_offset(*X._offset)
        if shift is not None:
            s, s2 = s + shift, s2 + shift
        entries.append(Query(X, ExactAnswer((s, c0, s2, c1))))
    return entries


@pytest.mark.parametrize("y", [1, 2, Fraction(-1, 3)])
def test_grid_replay_of_scaled_bases_and_shifted_scores(y, monkeypatch):
    truth = SingleHead.random(8, seed=4)
    for shift in (None, fmpq(5, 7)):
        entries = _grid_transcript(truth, y=y, shift=shift)
        assert certify._grid_undecided(truth, entries) == []
        assert failed_entries(truth, entries) == [] == _independent(truth, entries)
        for wrong in _wrong_models(truth, np.random.default_rng(1), n=2):
            expected = _independent(wrong, entries)
            assert expected and failed_entries(wrong, entries) == expected == _generic(wrong, entries, monkeypatch)


def test_one_answer_changed_is_failed_alone():
    truth = SingleHead.random(8, seed=6)
    entries = _grid_transcript(truth)
    i = 37
    s, c0, s2, c1 = entries[i].answer._pair()
    for changed in ((s + 1, c0, s2, c1), (s, c0 + 1, s2, c1), (s, c0, s2, c1 + 1), (s, c0, s2 + 1, c1)):
        forged = entries[:i] + [Query(entries[i].X, ExactAnswer(changed))] + entries[i + 1 :]
        assert failed_entries(truth, forged) == [i] == _independent(truth, forged)


def test_answers_not_in_compact_form_leave_the_grid_to_the_generic_replay():
    truth = SingleHead.random(8, seed=7)
    entries = _grid_transcript(truth)
    X = entries[10].X
    as_ratio = Query(X, ExactAnswer(truth.exact(_rebuilt(X))))  # the same value as an exp-ratio
    mixed = entries[:10] + [as_ratio] + entries[11:]
    assert certify._grid_undecided(truth, mixed) is None
    assert failed_entries(truth, mixed) == []


@pytest.mark.parametrize("how", ["shuffled", "two offsets swapped", "one base another object", "ragged"])
def test_transcripts_that_are_not_a_grid_are_replayed_one_by_one(how):
    truth = SingleHead.random(8, seed=8)
    entries = _grid_transcript(truth)
    if how == "shuffled":
        rng = np.random.default_rng(0)
        entries = [entries[i] for i in rng.permutation(len(entries))]
    elif how == "two offsets swapped":  # block 3 holds the offsets in another order
        entries[24], entries[25] = entries[25], entries[24]
    elif how == "one base another object":  # an equal base, but not the block's object
        X = entries[17].X
        base, deltas, fq = X._offset
        twin = Sequence._exact(base.d, base.rows, base._fq)
        entries[17] = Query(Sequence._offset_pairs([twin], [(deltas, fq)])[0], entries[17].answer)
    else:
        entries = entries[:-3]
    assert certify._grid_undecided(truth, entries) is None
    assert failed_entries(truth, entries) == [] == _independent(truth, entries)
    wrong = next(_wrong_models(truth, np.random.default_rng(2)))
    assert failed_entries(wrong, entries) == _independent(wrong, entries)


def test_heads_with_biases_have_no_grid_form():
    truth = SingleHead.random(8, seed=9)
    entries = _grid_transcript(truth)
    biased = SingleHead(truth.W, truth.v, c=[1] * 8, b=0)
    assert certify._grid_undecided(biased, entries) is None
    assert failed_entries(biased, entries) == _independent(biased, entries)


def test_matrix_forms_agree_with_entry_by_entry_arithmetic():
    rng = np.random.default_rng(0)
    d = 7
    W = QMatrix.from_rows([[Fraction(int(rng.integers(-9, 9)), int(rng.integers(1, 5))) for _ in range(d)]
                           for _ in range(d)])
    rows = [((0, fmpq(1)), (3, fmpq(-2, 3))), ((6, fmpq(5)),), ((2, fmpq(1)), (2, fmpq(1)))]  # a repeated index adds
    cols = [4, 0, 4, 6]
    got = sparse_rows_times(rows, W, cols)
    for i, c in enumerate(cols):
        for r, row in enumerate(rows):
            assert got.entry(i, r) == sum((q * W.entry(j, c) for j, q in row), fmpq(0))
    col, row = [fmpq(1, 2), fmpq(-3)], [fmpq(0), fmpq(7, 5), fmpq(1)]
    M = outer_sum(col, row)
    assert [[M.entry(i, j) for j in range(3)] for i in range(2)] == [[a + b for b in row] for a in col]
    values = [fmpq(int(x), 3) for x in rng.integers(-20, 20, size=d * d)]
    assert mismatches(QMatrix(d, d, values), values) == []
    forged = list(values)
    forged[11] += 1
    assert mismatches(QMatrix(d, d, values), forged) == [11]
    plan = ProbePlan.choose([Fraction(int(x)) for x in rng.integers(-5, 6, size=d)])
    combos = plan.combos()
    expected = _params(combos.terms, values)  # the combos, combo by combo
    assert combos.matrix(values).entries() == expected
    assert [c for c in combos] == [plan_combo for plan_combo in combos]  # as a sequence, the same combos
    assert all(combos.first[m] in {p for p, c in enumerate(combos) for _, mm in c if mm == m} for m in range(d * d))


def test_certified_combine_gives_the_same_parameters_in_matrix_and_list_forms():
    truth = SingleHead.random(9, seed=11)
    oracle = ExactOracle(truth)
    plan = ProbePlan.choose(list(truth.v))
    answers = oracle.query_batch(plan.sequences())
    meas = plan.measurements(list(truth.v))
    assert type(meas) is OuterMeasurements
    seen = []

    def confirm(params, pending):
        seen.append(params)
        return []

    arith = CertifiedArithmetic(oracle)
    fast = arith.combine(answers, meas, plan.combos(), None, confirm=confirm, as_fmpq=True)
    slow = arith.combine(answers, list(meas), list(plan.combos()), None, confirm=confirm, as_fmpq=True)
    assert type(seen[0]) is MatrixParams and type(seen[-1]) is list
    assert list(fast) == list(slow) == [fmpq(x.numerator, x.denominator) for r in truth.W for x in r]


def test_a_learner_found_before_the_others_are_imported_keeps_the_registry_order():
    """``get`` reads the specs of learner modules imported already; a later full load puts every
    built-in back in :data:`registry.BUILTIN` order, as a process that lists them first sees them."""
    code = ("import exact; from exact import registry; {first}; "
            "print([s.name for s in registry.learners()])")
    runs = [subprocess.run([sys.executable, "-c", code.format(first=first)], capture_output=True, text=True,
                           check=True).stdout for first in ("registry.get('single-head')", "pass")]
    assert runs[0] == runs[1] and "single-head" in runs[0]


def test_a_sequence_made_by_its_constructor_is_its_rows_whatever_else_is_passed():
    """The derived forms (offset, fmpq rows, ...) are set by trusted constructors only: ``dataclasses.replace``
    or ``Sequence(d, rows, _offset=...)`` gives a sequence that is its d and rows, as a replay then sees it."""
    truth = SingleHead.random(8, seed=12)
    entries = _grid_transcript(truth)
    X = entries[5].X
    changed = dataclasses.replace(X, rows=(X.rows[0], ((0, Fraction(5)),)))
    assert changed._offset is None and changed != X and changed.dense()[1][0] == 5
    forged = entries[:5] + [Query(changed, entries[5].answer)] + entries[6:]
    assert failed_entries(truth, forged) == [5] == _independent(truth, forged)
    two = Sequence(8, X.rows, _offset=X._offset[:2], _fq=((),))
    assert two._offset is None and two._fq is None and two == X
    wider = dataclasses.replace(X, d=11)  # a query of another dimension than the model's
    assert wider._offset is None
    with pytest.raises(ShapeError):
        failed_entries(truth, entries[:5] + [Query(wider, entries[5].answer)] + entries[6:])


def test_a_subclass_of_the_head_is_replayed_through_its_own_evaluation():
    class Doubled(SingleHead):
        def _pair(self, X):
            pair = super()._pair(X)
            return None if pair is None else (2 * pair[0], pair[1], 2 * pair[2], pair[3])

        def exact(self, X):
            s, c = self.scores(X)
            return ExpRatio.softmax([2 * x for x in s], c)

    truth = SingleHead.random(8, seed=13)
    entries = _grid_transcript(truth)
    doubled = Doubled(truth.W, truth.v)
    assert certify._grid_undecided(doubled, entries) is None
    expected = _independent(doubled, entries)
    assert expected and failed_entries(doubled, entries) == expected


@pytest.mark.parametrize("shift", [None, fmpq(-3, 2)])
def test_answer_floats_of_compact_answers_match_each_float(shift):
    """All answers compact: their parts are read in C-level passes (the score difference subtracted only
    when some second score is not 0)."""
    truth = SingleHead.random(8, seed=14, bound=30)
    answers = [q.answer for q in _grid_transcript(truth, shift=shift)]
    got = answer_floats(answers)
    want = np.array([float(a) for a in answers])
    assert np.all(np.abs(got - want) <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(want)))


def test_an_oracle_that_records_an_array_for_a_query_is_refused_clearly():
    """The driver compares what the transcript records with what was asked: anything but a Sequence is
    another query, refused with OracleInconsistent (not a numpy truth-value error)."""
    from exact.errors import OracleInconsistent

    class Recorder(ExactOracle):
        def query_batch(self, Xs):
            answers = super().query_batch(Xs)
            for i in range(len(self._transcript) - len(answers), len(self._transcript)):
                q = self._transcript[i]
                self._transcript[i] = Query.__new__(Query)
                object.__setattr__(self._transcript[i], "X", np.array(q.X.dense(), dtype=object))
                object.__setattr__(self._transcript[i], "answer", q.answer)
            return answers

    with pytest.raises(OracleInconsistent, match="another sequence than query"):
        learn_single_head(Recorder(SingleHead.random(3, seed=0)))


def test_identify_refuses_a_confirm_hook_that_fails_an_index_out_of_range():
    from exact.errors import InvalidArgument
    from exact.identify import identify

    class Q:
        what = "q"

        def ball(self):
            from flint import arb
            return arb(fmpq(1, 3))

        def refine(self):
            pass

    with pytest.raises(InvalidArgument, match="outside 0..1"):
        identify([Q(), Q()], confirm=lambda values, pending: [-1], guesses=[fmpq(1, 3), None])


# -- the low-rank learner's transcript: two grids (sketch columns, bases outer; rows, offsets outer) --


def _low_rank_run(d=24, r=4, seed=0):
    from exact import learn_low_rank

    truth = SingleHead.random(d, seed=seed, rank=r)
    result = learn_low_rank(ExactOracle(truth), rank=r, seed=seed, checks=0)
    return truth, result, list(result.certificate.transcript)


def _wrong_factored(truth, result):
    """Wrong models in the forms a low-rank replay meets: dense lists, a flint matrix, and factors."""
    d = truth.d
    K, Q = (QMatrix.from_rows([[Fraction(x) for x in row] for row in result.details["factors"][n]]) for n in "KQ")
    K2 = K.rows()
    bumped = [list(row) for row in K2]
    bumped[0][3] += Fraction(1, 5)
    yield SingleHead._from_factors((QMatrix.from_rows(bumped).T, Q), tuple(truth.v), None, Fraction(0))
    W = [list(row) for row in truth.W]
    W[d - 1][2] -= 1
    yield SingleHead(W, truth.v)
    yield SingleHead._from_qmatrix(QMatrix.from_rows(W), tuple(truth.v))
    yield SingleHead._from_factors((K.T, Q), tuple(x + (i == 5) for i, x in enumerate(truth.v)), None, Fraction(0))


def test_the_low_rank_transcript_is_two_grids_and_replays_as_the_independent_decision(monkeypatch):
    truth, result, entries = _low_rank_run()
    d, r = 24, 4
    assert [len(q.X._offset[1]) > 0 for q in entries[d:]] == [True] * (len(entries) - d)
    for model in (result.model, truth):  # the learned head (factors and W) and the truth (factors only)
        assert certify._grid_undecided(model, entries) == list(range(d))  # only the v-queries one by one
        assert failed_entries(model, entries) == []
    for wrong in _wrong_factored(truth, result):
        expected = _independent(wrong, entries)
        assert expected and failed_entries(wrong, entries) == expected == _generic(wrong, entries, monkeypatch)
        assert any(i >= d + d * r for i in expected) or any(d <= i < d + d * r for i in expected)


def test_one_forged_answer_part_in_either_grid_is_failed_alone():
    truth, result, entries = _low_rank_run(seed=1)
    d, r = 24, 4
    for i in (d + 5, d + d * r + 7, len(entries) - 1):  # a sketch probe, a row probe, the last row probe
        s, c0, s2, c1 = entries[i].answer._pair()
        for changed in ((s + 1, c0, s2, c1), (s, c0 + 1, s2, c1), (s, c0, s2, c1 + 1), (s, c0, s2 + 1, c1)):
            forged = entries[:i] + [Query(entries[i].X, ExactAnswer(changed))] + entries[i + 1 :]
            assert failed_entries(result.model, forged) == [i] == _independent(result.model, forged)


@pytest.mark.parametrize("how", ["rows shuffled", "two row probes swapped", "a row probe's base another object",
                                 "sketch and rows interleaved"])
def test_a_low_rank_transcript_that_is_not_laid_out_as_grids_is_still_decided_right(how, monkeypatch):
    truth, result, entries = _low_rank_run(seed=2)
    d, r = 24, 4
    rows = list(range(d + d * r, len(entries)))
    if how == "rows shuffled":
        order = list(range(d + d * r)) + [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
        entries = [entries[i] for i in order]
    elif how == "two row probes swapped":  # the second row block holds two bases in another order
        a = rows[len(rows) // r + 3]
        entries[a], entries[a + 1] = entries[a + 1], entries[a]
    elif how == "a row probe's base another object":
        i = rows[10]
        base, deltas, fq = entries[i].X._offset
        twin = Sequence._exact(base.d, base.rows, base._fq)
        entries[i] = Query(Sequence._offset_pairs([twin], [(deltas, fq)])[0], entries[i].answer)
    else:
        entries = entries[:d] + [q for pair in zip(entries[d : d + d * r], entries[d + d * r :]) for q in pair]
    assert failed_entries(result.model, entries) == [] == _independent(result.model, entries)
    for wrong in list(_wrong_factored(truth, result))[:2]:
        assert failed_entries(wrong, entries) == _independent(wrong, entries) == _generic(wrong, entries, monkeypatch)


def test_segments_cut_a_run_into_its_grids_and_the_stretches_between():
    truth, result, entries = _low_rank_run()
    d, r = 24, 4
    offs = [q.X._offset for q in entries[d:]]
    bases, deltas, fqs = zip(*offs)
    pieces = certify._segments(bases, deltas, fqs)
    assert [(lo, hi, layout[2]) for lo, hi, layout in pieces] == [(0, d * r, True), (d * r, len(offs), False)]
    (lo, hi, (cols, offsets, _)), (_, _, (row_bases, row_offsets, _)) = pieces
    assert len(cols) == r and len(offsets) == d and len(row_bases) == d - r and len(row_offsets) == r
    # a probe out of place leaves a stretch to be decided one by one, and grids on either side
    moved = list(offs[: d * r]) + list(offs[d * r :])
    moved[5], moved[6] = moved[6], moved[5]
    pieces = certify._segments(*zip(*moved))
    assert all(hi - lo >= certify.MIN_GRID for lo, hi, layout in pieces if layout is not None)
    assert any(layout is None and lo <= 5 < hi for lo, hi, layout in pieces)
    assert pieces[-1][1] == len(moved) and [p[0] for p in pieces[1:]] == [p[1] for p in pieces[:-1]]


# -- derived forms that are not the rows' (found in review): the replay decides the recorded query --


def test_a_certificate_whose_offsets_carry_forged_fmpq_forms_fails_in_memory_as_from_json():
    # each probe's rows are the learner's, but its fmpq offset is chosen so that 2W reproduces the
    # answers: the replay must decide the rows (what JSON keeps), not the forged form
    from exact import learn_low_rank, registry
    from exact.certify import certificate_from_json, certificate_to_json
    from exact.io import model_from_json

    d = 6
    truth = SingleHead.random(d, seed=2, rank=1)
    cert = learn_low_rank(ExactOracle(truth), rank=1, seed=7).certificate
    W, v = truth.W, truth.v
    wrong = SingleHead([[2 * x for x in row] for row in W], v)

    def forged_fq(base, deltas):  # dq with dq·(2Wb) = Δ·Wb and dq·v = Δ·v
        b = [Fraction(0)] * d
        for j, x in base.rows[0]:
            b[j] = x
        w = [sum(W[i][j] * b[j] for j in range(d)) for i in range(d)]
        D = [Fraction(0)] * d
        for j, x in deltas:
            D[j] += x
        t = sum(x * y for x, y in zip(D, v)) / 2
        p, q = next((p, q) for p in range(d) for q in range(p + 1, d) if w[p] * v[q] != w[q] * v[p])
        det = w[p] * v[q] - w[q] * v[p]
        dq = [x / 2 for x in D]
        dq[p] -= t * w[q] / det
        dq[q] += t * w[p] / det
        return tuple((j, fmpq(x.numerator, x.denominator)) for j, x in enumerate(dq) if x)

    transcript = tuple(
        Query(Sequence._offset_pair(q.X._offset[0], q.X._offset[1], forged_fq(*q.X._offset[:2])), q.answer)
        if q.X._offset is not None else q for q in cert.transcript)
    spec = registry.get(cert.learner)
    assume = tuple(spec.unchecked(dict(cert.conditions))) + tuple(spec.standing(dict(cert.conditions)))
    forged = dataclasses.replace(cert, model=wrong, transcript=transcript, checks=(), check_seed=None,
                                 assumptions=assume)
    assert wrong != truth and all(a.X == b.X for a, b in zip(transcript, cert.transcript))
    report = forged.check()
    assert not report.holds and report.failed == sum(q.X._offset is not None for q in transcript)
    assert not certificate_from_json(certificate_to_json(forged), model_from_json=model_from_json).check().holds


@pytest.mark.parametrize("forge", ["offset fmpq", "base fmpq", "base integer form", "kept rows", "own fmpq"])
def test_a_probe_with_a_derived_form_that_is_not_its_rows_is_failed_in_a_grid_and_alone(forge):
    truth = SingleHead.random(8, seed=6)
    entries = _grid_transcript(truth)
    i = 37
    X = entries[i].X
    base, deltas, fq = X._offset
    if forge == "offset fmpq":
        Y = Sequence._offset_pair(base, deltas, tuple((j, x + 1) for j, x in fq))
    elif forge == "base fmpq":
        twin = Sequence._exact(base.d, base.rows, (tuple((j, x * 2) for j, x in base._fq[0]),))
        Y = Sequence._offset_pair(twin, deltas, fq)
    elif forge == "base integer form":
        D, dense, pairs = base._int_rows[0]
        twin = Sequence._exact(base.d, base.rows, base._fq, ((D * 3, dense, pairs),))
        Y = Sequence._offset_pair(twin, deltas, fq)
    elif forge == "kept rows":
        Y = Sequence._offset_pair(base, deltas, fq)
        object.__setattr__(Y, "rows", (X.rows[0], X.rows[0]))  # a kept copy that is not base + Δ
    else:
        Y = Sequence._offset_pair(base, deltas, fq)
        object.__setattr__(Y, "_fq", tuple(tuple((j, x) for j, x in r) for r in Sequence.from_rows(X.dense())._fmpq_rows))
    forged = entries[:i] + [Query(Y, entries[i].answer)] + entries[i + 1 :]
    assert failed_entries(truth, forged) == [i]
    # the same forgery on every probe of the grid: nothing is decided by the grid, every probe fails
    if forge == "offset fmpq":  # one forged fmpq form per offset, shared by its probes as the plan's are
        swap = {id(f): tuple((j, x + 1) for j, x in f) for f in {id(q.X._offset[2]): q.X._offset[2] for q in entries}.values()}
        everywhere = [Query(Sequence._offset_pair(q.X._offset[0], q.X._offset[1], swap[id(q.X._offset[2])]), q.answer)
                      for q in entries]
        assert certify._grid_undecided(truth, entries) == [] and certify._grid_undecided(truth, everywhere) is None
        assert failed_entries(truth, everywhere) == list(range(len(entries)))


def test_runs_of_offset_probes_between_other_queries_are_each_their_own_stretch():
    # found in review: the pass over a transcript alternating offset probes with other queries
    # copied the rest of the transcript at each run (quadratic); each run is now found by one scan
    d = 4
    model = SingleHead.random(d, seed=0)
    base = Sequence._exact(d, (((0, Fraction(1)),),), (((0, fmpq(1)),),))
    X = Sequence._offset_pair(base, ((1, Fraction(1)),))
    Y = Sequence.basis(d, 2)
    qa, qb = Query(X, ExactAnswer(model._pair_offset(*X._offset))), Query(Y, ExactAnswer(model.exact(Y)))
    entries = [qa, qb] * 500 + [qa] * 3
    assert certify._grid_undecided(model, entries) is None
    assert failed_entries(model, entries) == []
