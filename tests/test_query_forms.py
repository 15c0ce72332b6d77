"""A query is its rows: the replay refuses a query whose derived forms are not its rows'.

Learners hand the replay derived forms of their queries (flint rows, integer forms, near-token links,
an offset's fmpq deltas, shared base tokens, kept rows of lazy sequences) through trusted private
constructors.  A certificate's JSON keeps only the rows, so a form that disagrees with them, in
value, in type, or by being malformed, must fail the query in memory too, whatever the model.
Found by adversarial review; each case is held to the decision made from the rows alone."""

import dataclasses
from fractions import Fraction

import pytest
from flint import fmpq

from exact import ExactOracle, SingleHead, learn_single_head, registry
from exact.certify import Certificate, certificate_from_json, certificate_to_json, failed_entries
from exact.errors import InvalidArgument
from exact.expfield import ExpRatio
from exact.io import model_from_json
from exact.oracles import ExactAnswer, Query, answer_equals, answer_equals_logistic
from exact.sequences import Sequence, forms_agree, int_row


def _independent(model, entries):
    return [i for i, q in enumerate(entries) if not answer_equals(q.answer, model.exact(Sequence.from_rows(q.X.dense())))]


def _forged_certificate(cert, model, transcript, outcome=None):
    spec = registry.get(cert.learner)
    conditions = dict(cert.conditions)
    standing = tuple(getattr(outcome, "standing", ()) or ())
    assume = tuple(dict.fromkeys(tuple(cert.assumptions) + tuple(spec.unchecked(conditions)) + standing))
    return dataclasses.replace(cert, model=model, transcript=transcript, checks=(), check_seed=None, assumptions=assume)


def test_an_fmpq_subclass_that_equals_the_rows_but_multiplies_otherwise_is_refused():
    truth = SingleHead.random(5, seed=1)
    cert = learn_single_head(ExactOracle(truth), check_seed=0).certificate
    wrong = SingleHead(truth.W, [2 * x for x in truth.v])
    vids = {id(x) for x in wrong._vq}

    class Q(fmpq):  # equal to the true value; its products with 2v give the products with v
        def __mul__(self, o):
            r = fmpq(self) * o
            return r / 2 if id(o) in vids else r

        __rmul__ = __mul__

    def ev(row):
        return tuple((j, Q(x)) for j, x in row)

    out = []
    for q in cert.transcript:
        X = q.X
        if X._offset is not None:
            b, deltas, _ = X._offset
            base = Sequence._exact(b.d, b.rows, (ev(b._fmpq_rows[0]),), b._ints)
            Y = Sequence._offset_pair(base, deltas, ev(tuple((j, fmpq(x.numerator, x.denominator)) for j, x in deltas)))
        else:
            Y = Sequence._exact(X.d, X.rows, tuple(map(ev, X._fmpq_rows)), X._ints)
        assert not forms_agree(Y)
        out.append(Query(Y, q.answer))
    assert failed_entries(wrong, out) == list(range(len(out))) == _independent(wrong, out)
    assert not _forged_certificate(cert, wrong, tuple(out)).check().holds


def _malformed():
    d = 8
    X = Sequence.basis(d, 1)
    row = tuple((j, Fraction(j + 1, 3)) for j in range(d))
    D, dense, _ = int_row(row, d)
    ints = (int_row(row, d),) * 2
    chain = Sequence.basis(4, 0)
    for _ in range(3000):
        chain = Sequence._shifted(chain, 1, Fraction(1))
    return {
        "a float index in the fmpq rows": Sequence._exact(d, X.rows, (((1.0, fmpq(1)),),)),
        "a near link that is not pairs": Sequence._exact(d, (row, row), None, ints, (None, (0, 5))),
        "a near link of triples": Sequence._exact(d, (row, row), None, ints, (None, (0, ((1, 2, 3),)))),
        "a float denominator": Sequence._exact(d, (row,), None, ((float(D), dense, None),)),
        "float integers": Sequence._exact(d, (row,), None, ((D, [float(x) for x in dense], None),)),
        "a chain of 3000 shifts": chain,
    }


@pytest.mark.parametrize("name", sorted(_malformed()))
def test_a_malformed_form_fails_its_query_and_raises_nothing(name):
    X = _malformed()[name]
    m = SingleHead.random(X.d, seed=0)
    assert forms_agree(X) is False
    answer = ExactAnswer(m.exact(Sequence.basis(X.d, 0)))
    assert failed_entries(m, [Query(X, answer)]) == [0]


def test_a_relu_network_replay_refuses_forged_forms_before_its_batch():
    from exact.ffn import ReLUFFN
    from exact.learn.ffn import learn_ffn

    truth = ReLUFFN.random(4, 3, seed=1)
    cert = learn_ffn(ExactOracle(truth), seed=0).certificate
    wrong = ReLUFFN(truth.A, [2 * x for x in truth.w])  # g' = 2g, so g'(x/2) = g(x)
    d = truth.d

    def forge(X):  # rows and integer form X's, evaluated (through the shift) as X/2
        half = Sequence(d, (tuple((j, q / 2) for j, q in X.rows[0]),))
        Y = Sequence._shifted(half, 0, Fraction(0))
        object.__setattr__(Y, "rows", X.rows)
        object.__setattr__(Y, "_ints", (int_row(X.rows[0], d),))
        return Y

    transcript = tuple(Query(forge(q.X), q.answer) for q in cert.transcript)
    assert all(a.X == b.X for a, b in zip(transcript, cert.transcript))
    assert failed_entries(wrong, transcript) == list(range(len(transcript)))
    outcome = registry.get(cert.learner).check_certificate(wrong, transcript, dict(cert.conditions))
    forged = _forged_certificate(cert, wrong, transcript, outcome)
    assert not forged.check().holds
    assert not certificate_from_json(certificate_to_json(forged), model_from_json=model_from_json).check().holds
    plain = tuple(Query(Sequence(d, q.X.rows), q.answer) for q in transcript)  # the rows alone: still a valid run
    assert failed_entries(truth, plain) == []


@pytest.mark.parametrize("slot, value", [("_near", ((1, ((5, 7),)), None)), ("_shift", "base")])
def test_an_offset_pair_carries_nothing_but_its_offset(slot, value):
    # an offset pair is its base and offset; another form it carries would be read by some model
    # (a Transformer's scores read _near, a sequence's length _shift): the query fails
    from exact.transformer import Transformer

    d = 8
    T = Transformer.random(d, 3, seed=1)
    base = Sequence.sparse(d, [{j: j + 1 for j in range(d)}])
    X = Sequence._offset_pair(base, ((2, Fraction(3)),))
    truth = ExactOracle(T).query(Sequence.from_rows(X.dense()))
    Y = Sequence._offset_pair(base, ((2, Fraction(3)),))
    object.__setattr__(Y, slot, (base, 0, Fraction(0)) if value == "base" else value)
    assert not forms_agree(Y)
    assert failed_entries(T, [Query(Y, ExactAnswer(T.exact(Y)))]) == [0]
    assert failed_entries(T, [Query(Y, truth)]) == [0]
    assert not Certificate(model=T, transcript=(Query(Y, ExactAnswer(T.exact(Y))),)).check().holds
    assert failed_entries(T, [Query(X, truth)]) == []


def test_both_logistic_equalities_take_the_same_exact_arguments():
    import numpy as np

    answer = ExactOracle(SingleHead([[1]], [1])).query([[2], [1]])  # 1 + 1·σ(1)
    r = ExpRatio.softmax([fmpq(3), fmpq(1)], [fmpq(7), fmpq(2)])  # 2 + 5·σ(2)
    assert answer_equals_logistic(answer, 1, Fraction(1), fmpq(1)) and r.equals_logistic(2, Fraction(5), fmpq(2))
    for bad in (1.0, "1", np.int64(1), None, True):
        with pytest.raises(InvalidArgument, match="must be an exact rational"):
            answer_equals_logistic(answer, fmpq(1), fmpq(1), bad)
        with pytest.raises(InvalidArgument, match="must be an exact rational"):
            r.equals_logistic(fmpq(2), fmpq(5), bad)


def test_an_offset_that_is_a_tuple_subclass_is_not_replayed_as_a_grid():
    # found in review: the grid read an offset's items while rows and JSON unpacked it through
    # __iter__, so a subclass could show each a different query; a WRONG head then "held"
    true = SingleHead([[1, 2], [3, 5]], [1, -1])
    wrong = SingleHead([[5, 3], [2, 1]], [-1, 1])  # the true head with its coordinates swapped

    def swap(t):
        return tuple(sorted((1 - j, q) for j, q in t))

    class Evil(tuple):
        def __iter__(self):
            b, t, f = (tuple.__getitem__(self, i) for i in range(3))
            return iter((Sequence._exact(2, (swap(b.rows[0]),)), swap(t), None))

    b = Sequence._exact(2, (((0, Fraction(1)),),), (((0, fmpq(1)),),))
    entries = []
    for X in Sequence._offset_pairs([b], [(((1, Fraction(k)),), None) for k in range(1, 65)]):
        object.__setattr__(X, "_offset", Evil(X._offset))
        honest = ExactAnswer(true._pair(Sequence.from_rows(X.dense())))  # the true head's answer on the rows
        object.__setattr__(X, "rows", None)
        entries.append(Query(X, honest))
    assert _independent(wrong, entries) == list(range(64)) and _independent(true, entries) == []
    assert failed_entries(wrong, entries) == list(range(64))
    assert not Certificate(wrong, tuple(entries)).check().holds


def test_a_token_changed_in_place_after_an_evaluation_is_evaluated_as_it_is_now():
    # found in review: the model remembers W·x_N by the identity of the query token's integer row;
    # a row changed in place afterwards must not be answered from that memo in a replay
    d = 8
    model = SingleHead([[(i * 3 + j * 5) % 7 - 3 for j in range(d)] for i in range(d)], [1] * d)

    def tok(v):
        return tuple((j, Fraction(x)) for j, x in enumerate(v) if x)

    rows = (tok([1, 0, 2, 0, 0, 0, 0, 1]), tok([1] * d))
    ints = tuple(int_row(r, d) for r in rows)
    model.exact(Sequence._exact(d, rows, None, ints))  # remembers W·x_N by id(ints[-1])
    changed = [2, 0, 1, 1, 3, 1, 1, 5]
    ints[-1][1][:] = changed
    Y = Sequence._exact(d, (rows[0], tok(changed)), None, ints)
    entries = [Query(Y, ExactAnswer(model.exact(Y)))]  # answered from the stale memo
    assert _independent(model, entries) == [0]
    assert failed_entries(model, entries) == [0]
    assert not Certificate(model, tuple(entries)).check().holds
