"""Tests for exact.sequences.Sequence and exact.models.SingleHead."""

import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exact.errors import ExactAttentionError, InvalidArgument, InvalidNumber, ShapeError
from exact.expfield import ExpPoly, ExpRatio
from exact.models import SingleHead
from exact.numbers import ball_interval
from exact.sequences import Sequence, as_sequence


def test_shape_error_is_value_error():
    assert issubclass(ShapeError, ValueError)
    assert issubclass(ShapeError, ExactAttentionError)


# -- Sequence.from_rows ------------------------------------------------------------------


def test_from_rows_basic():
    X = Sequence.from_rows([[1, "1/2"], [0, 3]])
    assert (X.length, X.d) == (2, 2)
    assert X.dense() == [[Fraction(1), Fraction(1, 2)], [Fraction(0), Fraction(3)]]
    assert X.rows == (((0, Fraction(1)), (1, Fraction(1, 2))), ((1, Fraction(3)),))  # zeros not stored


def test_from_rows_accepts_exact_strings_and_numbers():
    X = Sequence.from_rows([["1/2", "0.1", "-3"], [0.5, Fraction(2, 3), np.float32(0.25)]])
    assert X.dense() == [
        [Fraction(1, 2), Fraction(1, 10), Fraction(-3)],
        [Fraction(1, 2), Fraction(2, 3), Fraction(1, 4)],
    ]


def test_from_rows_numpy_arrays():
    a = np.array([[0.1, 2.0], [-1.0, 0.0]])
    X = Sequence.from_rows(a)
    assert X.dense() == [[Fraction(0.1), Fraction(2)], [Fraction(-1), Fraction(0)]]
    assert Sequence.from_rows(np.array([[1, 2]], dtype=np.int64)).dense() == [[1, 2]]
    assert Sequence.from_rows(np.array([[Fraction(1, 3)]], dtype=object)).dense() == [[Fraction(1, 3)]]
    assert Sequence.from_rows(np.array([[0.1, 0]], dtype=np.float32)).dense() == [[Fraction(13421773, 2**27), 0]]
    assert Sequence.from_rows(np.array([[0.1]], dtype=np.float16)).dense() == [[Fraction(819, 8192)]]
    assert Sequence.from_rows(np.array([[2**64 - 1]], dtype=np.uint64)).dense() == [[2**64 - 1]]
    # the array path and the list path build the same sequence
    a = np.random.default_rng(0).normal(size=(3, 4))
    assert Sequence.from_rows(a) == Sequence.from_rows(a.tolist())


@pytest.mark.parametrize(
    "rows, kwargs, error, msg",
    [
        ([[1, 2], [3]], {}, ShapeError, r"^X: expected every token to have d=2 entries, token 1 has 1$"),
        ([[1, 2], [3, 4, 5]], {}, ShapeError, r"^X: expected every token to have d=2 entries, token 1 has 3$"),
        ([], {}, ShapeError, r"^X: expected at least one token \(N >= 1\), got none$"),
        (np.zeros((0, 3)), {}, ShapeError, r"^X: expected at least one token \(N >= 1\), got none$"),
        ([[1, 2]], {"d": 3}, ShapeError, r"^X: expected every token to have d=3 entries, token 0 has 2$"),
        (np.zeros((1, 2)), {"d": 3}, ShapeError, r"^X: expected every token to have d=3 entries"),
        (np.zeros((2, 2), dtype=np.float32), {"d": 1}, ShapeError, r"^X: expected every token to have d=1 entries"),
        (np.array([[1.0, np.inf]], dtype=np.float16), {}, InvalidNumber, r"^X\[0\]\[1\]: expected a finite real number, got inf$"),
        (np.array([[True, False]]), {}, InvalidNumber, r"^X\[0\]\[0\]: expected a finite real number"),
        ([[]], {}, ShapeError, r"^sequence: expected a token dimension d >= 1, got 0$"),
        (np.zeros(3), {}, ShapeError, r"^X: expected an N×d array, got shape \(3,\)$"),
        (np.zeros((2, 2, 2)), {}, ShapeError, r"^X: expected an N×d array, got shape \(2, 2, 2\)$"),
        (5, {}, ShapeError, r"^X: expected a list of tokens \(an N×d array\), got int$"),
        ([1, 2], {}, ShapeError, r"^X: expected a list of tokens \(an N×d array\), got list$"),
        ([[1, float("nan")]], {}, InvalidNumber, r"^X\[0\]\[1\]: expected a finite real number, got nan$"),
        ([[1, 2], [float("inf"), 0]], {}, InvalidNumber, r"^X\[1\]\[0\]: expected a finite real number, got inf$"),
        ([[1, "abc"]], {}, InvalidNumber, r"^X\[0\]\[1\]: expected an integer, 'p/q' or decimal string, got 'abc'$"),
        ([[True, 0]], {}, InvalidNumber, r"^X\[0\]\[0\]: expected a finite real number, got the boolean True$"),
        (np.array([[1.0, np.nan]]), {}, InvalidNumber, r"^X\[0\]\[1\]: expected a finite real number, got nan$"),
    ],
)
def test_from_rows_errors(rows, kwargs, error, msg):
    with pytest.raises(error, match=msg) as info:
        Sequence.from_rows(rows, **kwargs)
    assert isinstance(info.value, ValueError)


def test_from_rows_names_the_argument():
    with pytest.raises(InvalidNumber, match=r"^Y\[0\]\[0\]: "):
        Sequence.from_rows([[float("nan")]], name="Y")


def test_from_rows_passes_sequences_through():
    X = Sequence.basis(3, 1)
    assert Sequence.from_rows(X) is X
    assert as_sequence(X, d=3) is X
    with pytest.raises(ShapeError, match=r"^X: expected tokens of dimension d=2, got d=3$"):
        as_sequence(X, d=2)


def test_from_rows_rejects_string_rows():
    with pytest.raises((ShapeError, InvalidNumber)):
        Sequence.from_rows(["12", "34"])


def test_direct_construction_validates():
    with pytest.raises(ShapeError, match=r"^sequence: expected a token dimension d >= 1, got 0$"):
        Sequence(0, ((),))
    with pytest.raises(ShapeError, match=r"^sequence: expected at least one token \(N >= 1\), got none$"):
        Sequence(2, ())


# -- sparse / basis / dense / numpy / JSON / negation ----------------------------------------


def test_sparse_and_basis():
    X = Sequence.sparse(3, [{0: 1, 2: Fraction(1, 2)}, {2: 1}, {}])
    assert X.dense() == [[1, 0, Fraction(1, 2)], [0, 0, 1], [0, 0, 0]]
    assert X == Sequence.from_rows([[1, 0, "1/2"], [0, 0, 1], [0, 0, 0]])
    assert Sequence.sparse(2, [{1: 0, 0: "3/4"}]).rows == (((0, Fraction(3, 4)),),)
    assert Sequence.basis(4, 2).dense() == [[0, 0, 1, 0]]
    assert Sequence.basis(4, 2) == Sequence.from_rows([[0, 0, 1, 0]])
    with pytest.raises(ShapeError, match=r"^sequence: index 3 out of range for d=3$"):
        Sequence.sparse(3, [{3: 1}])
    with pytest.raises(ShapeError, match=r"^sequence: index -1 out of range for d=3$"):
        Sequence.sparse(3, [{-1: 1}])


def test_to_numpy_float64_is_correctly_rounded():
    X = Sequence.from_rows([["1/3", "0.1", 2**-1074], [10**300, "-2/7", 0]])
    a = X.to_numpy()
    assert a.dtype == np.float64 and a.shape == (2, 3)
    assert a.tolist() == [[1 / 3, 0.1, 2.0**-1074], [1e300, -2 / 7, 0.0]]


def test_to_numpy_float32_simple_values():
    X = Sequence.from_rows([["1/2", "0.1"]])
    a = X.to_numpy(np.float32)
    assert a.dtype == np.float32
    assert a[0, 0] == np.float32(0.5) and a[0, 1] == np.float32(0.1)


def test_to_numpy_float32_is_correctly_rounded():
    q = 1 + Fraction(1, 2**24) + Fraction(1, 2**60)  # just above the midpoint of 1 and 1 + 2^-23
    a = Sequence.from_rows([[q]]).to_numpy(np.float32)
    assert Fraction(float(a[0, 0])) == 1 + Fraction(1, 2**23)


def test_json_round_trip_and_form():
    X = Sequence.from_rows([["1/3", 0, -2], [0, 0, 0], [5, "0.25", 0]])
    data = X.to_json()
    assert data == {"d": 3, "rows": [{"0": "1/3", "2": "-2"}, {}, {"0": "5", "1": "1/4"}]}
    assert Sequence.from_json(json.loads(json.dumps(data))) == X
    # a plain list of rows is read by from_rows
    assert Sequence.from_json([["1/3", 0, -2], [0, 0, 0], [5, "0.25", 0]]) == X


@pytest.mark.parametrize(
    "data, msg",
    [
        ({"d": True, "rows": [{}]}, r"^sequence: expected an integer d, got True$"),
        ({"d": "3", "rows": [{}]}, r"^sequence: expected an integer d, got '3'$"),
        ({"d": 2, "rows": [{"a": "1"}]}, r"^sequence: expected rows as \{index: value\} objects, got \{'a': '1'\}$"),
        ({"d": 2, "rows": [["1", "2"]]}, r"^sequence: expected rows as \{index: value\} objects, got \['1', '2'\]$"),
        ({"d": 2, "rows": [{"2": "1"}]}, r"^sequence: index 2 out of range for d=2$"),
        ({"d": 2, "rows": []}, r"^sequence: expected at least one token"),
    ],
)
def test_from_json_errors(data, msg):
    with pytest.raises(ShapeError, match=msg):
        Sequence.from_json(data)


def test_from_json_rejects_code_strings():
    with pytest.raises(InvalidNumber, match=r"^X\[0\]: expected an integer, 'p/q' or decimal string"):
        Sequence.from_json({"d": 1, "rows": [{"0": "__import__('os')"}]})


def test_negation():
    X = Sequence.from_rows([["1/3", 0], [-2, "0.5"]])
    assert (-X).dense() == [[Fraction(-1, 3), 0], [2, Fraction(-1, 2)]]
    assert -(-X) == X
    assert (-X).d == X.d and (-X).length == X.length


# -- SingleHead validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    "W, v, error, msg",
    [
        ([[1, 2]], [1], ShapeError, r"^W: expected a square d×d matrix, got 1×2$"),
        ([[1, 2], [3, 4]], [1], ShapeError, r"^v: expected length 2, got 1$"),
        ([[1, 2], [3, 4]], [1, 2, 3], ShapeError, r"^v: expected length 2, got 3$"),
        ([[1, 2, 3], [4, 5, 6]], [1, 2], ShapeError, r"^W: expected a square d×d matrix, got 2×3$"),
        ([[1, 2], [3]], [1, 2], ShapeError, r"^W: expected every row to have 2 entries, row 1 has 1$"),
        ([[1, float("nan")], [0, 0]], [1, 2], InvalidNumber, r"^W\[0\]\[1\]: expected a finite real number, got nan$"),
        ([[1, 0], [0, 0]], [1, float("nan")], InvalidNumber, r"^v\[1\]: expected a finite real number, got nan$"),
        ([[1]], [float("-inf")], InvalidNumber, r"^v\[0\]: expected a finite real number, got -inf$"),
        ([[1]], [], ShapeError, r"^v: expected length 1, got 0$"),
        ([], [1], ShapeError, r"^W: expected a d×d matrix with d >= 1, got an empty one$"),
        (5, [1], ShapeError, r"^W: expected a matrix \(list of rows\), got int$"),
        ([[1]], 5, ShapeError, r"^v: expected a vector, got int$"),
        (np.zeros((1, 1, 1)), [1], ShapeError, r"^W: expected a 2-d matrix, got an array of shape \(1, 1, 1\)$"),
        (np.eye(2), np.ones((2, 1)), ShapeError, r"^v: expected a vector, got an array of shape \(2, 1\)$"),
        ([["__import__('os')"]], [1], InvalidNumber, r"^W\[0\]\[0\]: expected an integer, 'p/q' or decimal string"),
    ],
)
def test_single_head_validation(W, v, error, msg):
    with pytest.raises(error, match=msg) as info:
        SingleHead(W, v)
    assert isinstance(info.value, ValueError)


def test_single_head_rejects_string_vector():
    with pytest.raises((ShapeError, InvalidNumber)):
        SingleHead([[1, 2], [3, 4]], "12")


def test_single_head_stores_exact_fractions():
    h = SingleHead(np.array([[0.1, 2], [3, 4]]), ["1/3", np.float32(0.5)])
    assert h.W == ((Fraction(0.1), Fraction(2)), (Fraction(3), Fraction(4)))
    assert h.v == (Fraction(1, 3), Fraction(1, 2))
    assert all(isinstance(x, Fraction) for r in h.W for x in r)
    assert h.d == 2
    assert h == SingleHead([[Fraction(0.1), 2], [3, 4]], [Fraction(1, 3), "0.5"])
    with pytest.raises(AttributeError):
        h.v = (1, 2)


# -- SingleHead evaluation --------------------------------------------------------------------


def _random_X(rng, d, N):
    return [[Fraction(int(rng.integers(-8, 9)), int(rng.integers(1, 5))) for _ in range(d)] for _ in range(N)]


def _mp_f(W, v, X, dps=40):
    """Independent mpmath evaluation of a single head."""
    with mpmath.workdps(dps):
        d = len(v)
        xN = X[-1]
        Wx = [sum((W[a][b] * xN[b] for b in range(d)), Fraction(0)) for a in range(d)]
        s = [sum((x[a] * Wx[a] for a in range(d)), Fraction(0)) for x in X]
        u = [sum((v[a] * x[a] for a in range(d)), Fraction(0)) for x in X]
        m = max(s)
        e = [mpmath.exp(mpmath.mpf((si - m).numerator) / (si - m).denominator) for si in s]
        return mpmath.fsum(ei * mpmath.mpf(ui.numerator) / ui.denominator for ei, ui in zip(e, u)) / mpmath.fsum(e)


def test_exact_ball_agrees_with_float_and_mpmath():
    rng = np.random.default_rng(11)
    for trial in range(30):
        d = int(rng.integers(1, 6))
        h = SingleHead.random(d, seed=1000 + trial)
        X = _random_X(rng, d, int(rng.integers(1, 6)))
        ball = h.exact(X).ball(128)
        lo, hi = ball_interval(ball)
        assert hi - lo < Fraction(1, 2**100) * (1 + abs(lo))
        mid = float(ball.mid())
        f = h.float(X)
        assert abs(mid - f) <= 1e-12 * max(1.0, abs(mid))
        assert abs(mid - float(_mp_f(h.W, h.v, X))) <= 1e-15 * max(1.0, abs(mid))
        assert h.ball(X, prec=128).overlaps(ball)


def test_exact_is_the_softmax_exp_ratio():
    h = SingleHead([[1, "-2/3"], [0, 5]], ["1/2", 0])
    X = [[1, 0], [0, 1]]
    # scores s_i = x_i^T W x_N with x_N = e_2: s = (W[0][1], W[1][1]) = (-2/3, 5); values v^T x_i = (1/2, 0)
    expected = ExpRatio(ExpPoly([("1/2", "-2/3"), (0, 5)]), ExpPoly([(1, "-2/3"), (1, 5)]))
    assert h.exact(X) == expected
    s, c = h.scores(X)
    assert s == [fmpq(-2, 3), fmpq(5)] and c == [fmpq(1, 2), fmpq(0)]
    assert h.exact([[3, 7]]) == ExpRatio.rational(Fraction(3, 2))  # one token: f = v^T x


def test_scores_dense_path_for_long_query_token():
    # a last token with more than 4 nonzeros takes the matrix path
    h = SingleHead.random(6, seed=3)
    X = [[1, 2, 0, -1, 0, 1], [1, 1, 1, 1, 1, "1/2"]]
    s, c = h.scores(X)
    Xf = Sequence.from_rows(X).dense()
    for i in range(2):
        expected_s = sum(Xf[i][a] * h.W[a][b] * Xf[1][b] for a in range(6) for b in range(6))
        assert Fraction(int(s[i].p), int(s[i].q)) == expected_s
        assert Fraction(int(c[i].p), int(c[i].q)) == sum(h.v[a] * Xf[i][a] for a in range(6))


def test_float_on_batches_close_to_exact():
    h = SingleHead.random(3, seed=2)
    rng = np.random.default_rng(2)
    B = rng.normal(size=(25, 4, 3))
    out = h.float(B)
    assert out.shape == (25,)
    for i in range(25):
        exact = float(h.exact(B[i]).ball(128).mid())
        assert abs(out[i] - exact) <= 1e-13 * max(1.0, abs(exact))


def test_float_on_batches_equals_per_sequence():
    h = SingleHead.random(3, seed=1)
    B = np.random.default_rng(1).normal(size=(20, 4, 3))
    out = h.float(B)
    assert [float(y) for y in out] == [h.float(B[i]) for i in range(20)]


def test_float_shape_error():
    h = SingleHead.random(3, seed=2)
    with pytest.raises(ShapeError, match=r"^X: expected shape \(N, 3\) or \(n, N, 3\), got \(5, 2, 2\)$"):
        h.float(np.zeros((5, 2, 2)))
    with pytest.raises(ShapeError, match=r"^X: expected shape \(N, 3\) or \(n, N, 3\), got "):
        h.float(np.zeros((2, 2)))


def test_float_shape_error_reports_callers_shape():
    h = SingleHead.random(3, seed=2)
    with pytest.raises(ShapeError, match=r"got \(2, 2\)$"):
        h.float(np.zeros((2, 2)))


def test_exact_rejects_bad_queries():
    h = SingleHead.random(3, seed=2)
    with pytest.raises(ShapeError, match=r"^X: expected every token to have d=3 entries, token 0 has 2$"):
        h.exact([[1, 2]])
    with pytest.raises(InvalidNumber, match=r"^X\[0\]\[2\]: expected a finite real number, got nan$"):
        h.exact([[1, 2, float("nan")]])


# -- SingleHead.random ----------------------------------------------------------------------


def test_random_reproducible_and_seed_dependent():
    assert SingleHead.random(4, seed=0) == SingleHead.random(4, seed=0)
    assert SingleHead.random(4, seed=0, grid="float32") == SingleHead.random(4, seed=0, grid="float32")
    heads = {json.dumps(SingleHead.random(4, seed=s).to_json()) for s in range(10)}
    assert len(heads) == 10


def test_random_rational_grid_entries():
    for seed in range(5):
        h = SingleHead.random(5, seed=seed, grid="rational:7", bound=2)
        for x in [y for r in h.W for y in r] + list(h.v):
            assert x.denominator <= 7 and abs(x) <= 2
        assert all(x != 0 for x in h.v)


@pytest.mark.parametrize("grid, dtype", [("float32", np.float32), ("float16", np.float16)])
def test_random_float_grid_entries_exactly_on_grid(grid, dtype):
    for seed in range(5):
        h = SingleHead.random(5, seed=seed, grid=grid)
        entries = [y for r in h.W for y in r] + list(h.v)
        for x in entries:
            assert Fraction(float(dtype(float(x)))) == x
        # not trivially on a coarser grid: some entry needs more than 8 significant bits
        assert any(x.denominator > 2**8 for x in entries)


def test_random_bfloat16_entries_on_grid():
    h = SingleHead.random(4, seed=0, grid="bfloat16")
    for x in [y for r in h.W for y in r] + list(h.v):
        bits = int(np.array(float(x), dtype=np.float32).view(np.uint32))
        assert Fraction(float(np.float32(float(x)))) == x and bits & 0xFFFF == 0


@pytest.mark.parametrize("d", [1, 3, 6])
def test_random_v_zeros(d):
    for k in range(d):
        for seed in range(4):
            h = SingleHead.random(d, seed=seed, v_zeros=k)
            assert sum(1 for x in h.v if x == 0) == k


@pytest.mark.parametrize("d", [3, 5])
def test_random_rank(d):
    for r in range(d + 1):
        for seed in range(3):
            h = SingleHead.random(d, seed=seed, rank=r)
            M = fmpq_mat(d, d, [fmpq(x.numerator, x.denominator) for row in h.W for x in row])
            assert M.rank() <= r
            if r == 0:
                assert all(x == 0 for row in h.W for x in row)


def test_random_validation():
    with pytest.raises(ShapeError, match=r"^d: expected an integer d >= 1, got 0$"):
        SingleHead.random(0, seed=0)
    with pytest.raises(ValueError, match=r"^v_zeros: expected 0 <= v_zeros <= d-1 = 2, got 3$"):
        SingleHead.random(3, seed=0, v_zeros=3)
    for rank in (4, -1, True):  # booleans are not ranks
        with pytest.raises(InvalidArgument, match=rf"^rank: expected an integer 0 <= rank <= d = 3, got {rank}$"):
            SingleHead.random(3, seed=0, rank=rank)
    with pytest.raises(ValueError, match=r"^grid: expected "):
        SingleHead.random(3, seed=0, grid="float8")


def test_random_grid_none_is_a_clear_error():
    with pytest.raises(ValueError, match="grid"):
        SingleHead.random(2, seed=0, grid=None)


# -- from_native ---------------------------------------------------------------------------


def test_from_native_by_hand():
    # d=2, r=1, d_v=3:
    #   W = scale · W_K^T W_Q = [[3], [-1]] · [[1, 2]] = [[3, 6], [-1, -2]]   (scale = 1/sqrt(1) = 1)
    #   v = W_V^T W_O^T w:  W_O^T w = [1, -1, 2];  W_V^T [1, -1, 2] = [1 + 2, -1 + 2] = [3, 1]
    h = SingleHead.from_native(
        W_Q=[[1, 2]], W_K=[[3, -1]], W_V=[[1, 0], [0, 1], [1, 1]], W_O=[[1, 0, 2], [0, 1, 0]], w=[1, -1]
    )
    assert h.W == ((3, 6), (-1, -2))
    assert h.v == (3, 1)


def test_from_native_scores_match_native_attention():
    rng = np.random.default_rng(4)
    d, r, dv = 3, 4, 2
    Q = [[int(rng.integers(-3, 4)) for _ in range(d)] for _ in range(r)]
    K = [[int(rng.integers(-3, 4)) for _ in range(d)] for _ in range(r)]
    V = [[int(rng.integers(-3, 4)) for _ in range(d)] for _ in range(dv)]
    O = [[int(rng.integers(-3, 4)) for _ in range(dv)] for _ in range(d)]
    w = [int(rng.integers(-3, 4)) for _ in range(d)]
    h = SingleHead.from_native(Q, K, V, O, w)  # r = 4: scale 1/2 exactly
    X = _random_X(rng, d, 4)
    q = [sum(Fraction(Q[k][j]) * X[-1][j] for j in range(d)) for k in range(r)]
    s, c = h.scores(X)
    for i, x in enumerate(X):
        key = [sum(Fraction(K[k][j]) * x[j] for j in range(d)) for k in range(r)]
        native_score = Fraction(1, 2) * sum(a * b for a, b in zip(key, q))
        val = [sum(Fraction(V[a][j]) * x[j] for j in range(d)) for a in range(dv)]
        out = [sum(O[i2][a] * val[a] for a in range(dv)) for i2 in range(d)]
        native_value = sum(w[i2] * out[i2] for i2 in range(d))
        assert Fraction(int(s[i].p), int(s[i].q)) == native_score
        assert Fraction(int(c[i].p), int(c[i].q)) == native_value


def test_from_native_irrational_scale():
    msg = (
        r"^scale: 1/sqrt\(r\) is irrational for head dimension r=2; pass scale= explicitly "
        r"\(for a float model, the float it multiplies the scores by\)$"
    )
    with pytest.raises(InvalidNumber, match=msg) as info:
        SingleHead.from_native([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 1]], [[1], [1]], [1, 1])
    assert isinstance(info.value, ValueError)
    h = SingleHead.from_native([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 1]], [[1], [1]], [1, 1], scale="1/3")
    assert h.W == ((Fraction(1, 3), 0), (0, Fraction(1, 3)))
    assert h.v == (2, 2)


def test_from_native_shape_errors():
    with pytest.raises(ShapeError, match=r"^W_K: expected 1 rows, got 2$"):
        SingleHead.from_native([[1, 0]], [[1, 0], [0, 1]], [[1, 1]], [[1], [1]], [1, 1])
    with pytest.raises(ShapeError, match=r"^w: expected length 2, got 3$"):
        SingleHead.from_native([[1, 0]], [[1, 0]], [[1, 1]], [[1], [1]], [1, 1, 1])


# -- JSON -------------------------------------------------------------------------------------


def test_json_round_trip():
    for seed in range(3):
        for grid in ("rational:7", "float32"):
            h = SingleHead.random(3, seed=seed, grid=grid)
            data = json.loads(json.dumps(h.to_json()))
            assert SingleHead.from_json(data) == h
    h = SingleHead([["1/3", -2], [0, "0.5"]], ["7/2", 0])
    assert h.to_json() == {"kind": "single-head", "d": 2, "W": [["1/3", "-2"], ["0", "1/2"]], "v": ["7/2", "0"]}


@pytest.mark.parametrize(
    "data, error, msg",
    [
        ({"kind": "multi-head", "W": [[1]], "v": [1]}, ShapeError, r"^model: expected a JSON object of kind 'single-head', got kind 'multi-head'$"),
        ([[1]], ShapeError, r"^model: expected a JSON object of kind 'single-head', got list$"),
        ("x", ShapeError, r"^model: expected a JSON object of kind 'single-head', got str$"),
        ({"kind": "single-head", "v": [1]}, ShapeError, r"^model: missing field\(s\) \['W'\]$"),
        ({"kind": "single-head"}, ShapeError, r"^model: missing field\(s\) \['W', 'v'\]$"),
        ({"W": [[1, 0], [0, 1]], "v": [1, 2], "d": 3}, ShapeError, r"^model: field d=3 does not match len\(v\)=2$"),
        (
            {"kind": "single-head", "d": 1, "W": [["__import__('os')"]], "v": ["1"]},
            InvalidNumber,
            r"^W\[0\]\[0\]: expected an integer, 'p/q' or decimal string, got \"__import__\('os'\)\"$",
        ),
        ({"W": [["1"]], "v": ["nan"]}, InvalidNumber, r"^v\[0\]: expected an integer, 'p/q' or decimal string, got 'nan'$"),
    ],
)
def test_from_json_rejects(data, error, msg):
    with pytest.raises(error, match=msg):
        SingleHead.from_json(data)


@pytest.mark.parametrize("d, rank", [(6, 2), (12, 3), (20, 20)])
def test_dense_probes_evaluated_from_their_neighbour_equal_a_fresh_evaluation(d, rank):
    # The low-rank probes [b + u_k; b] are kept as [b] and the offset u_k (one or two entries),
    # and exact evaluation reads W b once per column.  It must agree, bit for bit, with the
    # same sequences rebuilt from their rows (no shortcut), on models whose int forms and
    # cached columns are fresh, and on the same model after many probes (warm caches); the
    # pair form the replay compares must be the fresh model's up to a common score shift.
    from exact.learn.low_rank import _probes, _sketch
    from exact.learn.single_head import ProbePlan

    rng = np.random.default_rng(d)
    head = SingleHead.random(d, seed=d, rank=rank)
    plan = ProbePlan.choose(head.v)
    cols = [_sketch(rng, d) for _ in range(3)]
    probes = _probes(plan, [(k, b) for b in cols for k in range(d)])
    assert sum(p._offset is not None for p in probes) == len(probes)  # every dense probe took the shortcut
    assert all(p.length == 2 and len(p._offset[1]) <= 2 for p in probes)
    fresh_model = SingleHead(head.W, head.v)
    for p in probes:
        plain = Sequence(d, p.rows)
        assert plain == p and plain._offset is None and p == plain
        assert head.exact(p) == fresh_model.exact(plain)
        assert head.scores(p) == SingleHead(head.W, head.v).scores(plain)
        s1, c1, s2, c2 = head._pair(p)
        (t1, t2), (e1, e2) = fresh_model.scores(plain)
        assert (s1 - s2, c1, c2) == (t1 - t2, e1, e2)


def test_a_head_kept_as_factors_answers_as_its_dense_form():
    """``SingleHead.from_factors`` keeps ``W = scale·KᵀQ`` as factors: its exact values, the replay's
    pair form, the integer size behind the verification queries' scale, rank and equality are those
    of the dense head, on logit-primitive probes, sparse and dense sequences."""
    import random as _random

    from exact.certify import failed_entries
    from exact.oracles import ExactOracle
    from exact.sequences import Sequence as Seq

    g = _random.Random(2)
    for _ in range(40):
        d, r = g.randint(1, 5), g.randint(1, 3)
        K = [[Fraction(g.randint(-5, 5), g.randint(1, 7)) for _ in range(d)] for _ in range(r)]
        Q = [[Fraction(g.randint(-5, 5), g.randint(1, 7)) for _ in range(d)] for _ in range(r)]
        v = [Fraction(g.randint(-5, 5), g.randint(1, 7)) or Fraction(1) for _ in range(d)]
        scale = Fraction(g.randint(1, 4), g.randint(1, 3))
        h = SingleHead.from_factors(K, Q, v, scale=scale)
        dense = SingleHead([[scale * sum((K[k][i] * Q[k][j] for k in range(r)), Fraction(0)) for j in range(d)]
                            for i in range(d)], v)
        assert "_Wmat" not in h.__dict__  # nothing dense was formed so far
        assert h._w_size() == dense._w_size() and h.magnitude_bits() == dense.magnitude_bits()
        seqs = []
        for _ in range(6):
            rows = [[Fraction(g.randint(-3, 3), g.randint(1, 3)) if g.random() < 0.5 else 0 for _ in range(d)]
                    for _ in range(g.randint(1, 4))]
            seqs.append(Seq.from_rows(rows))
            a = {i: x for i in range(d) if (x := Fraction(g.randint(-2, 2)))}
            seqs.append(Seq.sparse(d, [a, {g.randrange(d): Fraction(g.randint(1, 3), g.randint(1, 2))}]))
        assert all(h.exact(X) == dense.exact(X) for X in seqs)
        for model, other in ((h, dense), (dense, h)):
            oracle = ExactOracle(model)
            oracle.query_batch(seqs)
            assert failed_entries(other, oracle.transcript) == []
        assert h.rank == dense.rank and h == dense


def test_the_integer_size_of_a_factored_head_is_exact_row_by_row_when_one_float_product_could_round():
    """Chains of three factors, and two factors whose integer product exceeds 2^53, take the row-wise
    path: the same ``(max |W_int|, D_W)`` and magnitude as the dense head (the verification
    queries' scale, which a certificate rebuilds from the dense W)."""
    import random as _random

    from exact.linalg import QMatrix

    g = _random.Random(7)
    for trial in range(30):
        d, r = g.randint(1, 6), g.randint(1, 3)
        big = 2**60 if trial % 2 else 1

        def rnd(rows, cols, big=big):
            return QMatrix.from_rows([[Fraction(g.randint(-9, 9) * big, g.randint(1, 9)) for _ in range(cols)]
                                      for _ in range(rows)])

        factors = (rnd(d, r), rnd(r, r), rnd(r, d)) if trial % 3 else (rnd(d, r), rnd(r, d))
        v = [Fraction(g.randint(1, 5), g.randint(1, 4)) for _ in range(d)]
        h = SingleHead._from_factors(factors, v)
        W = factors[0]
        for F in factors[1:]:
            W = W @ F
        dense = SingleHead(W.rows(), v)
        assert h._w_size() == dense._w_size() and h.magnitude_bits() == dense.magnitude_bits()
        assert "_Wmat" not in h.__dict__ and "W" not in h.__dict__
