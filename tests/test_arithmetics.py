"""Where one algorithm runs in three arithmetics (docs/exactness.md), measured.

Each test records which arithmetic the driver builds for a learner and which of its
primitives (``values``, ``combine``, ``approximate_logits``) the learner calls, and checks
the statement the documentation makes about that learner.  The documentation's table is
also checked against the registry: every registered learner has a row, with its modes.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from exact import ExactOracle, FloatOracle, MultiHead, NoisyOracle, SingleHead, registry
from exact.arith import CertifiedArithmetic, FloatArithmetic, SymbolicArithmetic
from exact.ffn import ReLUFFN
from exact.learn import (
    learn_ffn,
    learn_low_rank,
    learn_low_rank_cs,
    learn_multi_head,
    learn_noisy,
    learn_noisy_frame,
    learn_noisy_refine,
    learn_single_head,
    learn_threshold,
    learn_transformer,
)
from exact.learn import driver
from exact.transformer import Transformer

PAGE = Path(__file__).resolve().parents[1] / "docs" / "exactness.md"
CLASSES = {"certified": CertifiedArithmetic, "symbolic": SymbolicArithmetic, "float": FloatArithmetic}
PRIMITIVES = ("values", "combine", "approximate_logits")


@pytest.fixture
def spy(monkeypatch):
    """Record the arithmetics the driver builds and the primitives called on them."""
    built: list[str] = []
    calls: Counter = Counter()
    for mode, cls in CLASSES.items():
        for name in PRIMITIVES:
            original = getattr(cls, name)

            def wrapped(self, *args, __original=original, __name=name, __cls=cls, __mode=mode, **kwargs):
                if type(self) is __cls:
                    calls[(__mode, __name)] += 1
                return __original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, wrapped)
    init = driver.Run.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.append(self.arith.name)

    monkeypatch.setattr(driver.Run, "__init__", recording_init)

    class Spy:
        def reset(self):
            built.clear()
            calls.clear()

        @property
        def built(self):
            return list(built)

        def called(self, mode):
            return {name for (m, name) in calls if m == mode}

        def any_called(self):
            return bool(calls)

    return Spy()


def _transcript(oracle):
    return [q.X for q in oracle.transcript]


def test_single_head_runs_one_code_path_in_all_three_arithmetics(spy):
    truth = SingleHead.random(3, seed=1)
    seen = {}
    for mode in ("certified", "symbolic", "float"):
        spy.reset()
        oracle = ExactOracle(truth)
        result = learn_single_head(oracle, mode=mode, checks=0)
        assert spy.built == [mode] and result.mode == mode
        assert spy.called(mode) == {"values", "combine"}  # v, then the d² logits in one combine
        assert result.queries == 12
        seen[mode] = _transcript(oracle)
    assert seen["certified"] == seen["symbolic"]  # the same probe set
    assert seen["float"][:3] == seen["certified"][:3] and seen["float"] != seen["certified"]  # scaled probes


def test_low_rank_runs_one_code_path_in_both_exact_arithmetics(spy):
    truth = SingleHead.random(4, seed=1, rank=1)
    seen = {}
    for mode in ("certified", "symbolic"):
        spy.reset()
        oracle = ExactOracle(truth)
        result = learn_low_rank(oracle, rank=1, mode=mode, seed=0, checks=0)
        assert spy.built == [mode] and result.model == truth
        assert spy.called(mode) == {"values", "combine"}
        seen[mode] = _transcript(oracle)
    assert seen["certified"] == seen["symbolic"]


def test_low_rank_cs_reads_its_logits_through_the_arithmetic_the_oracle_selects(spy):
    pytest.importorskip("cvxpy")
    truth = SingleHead.random(4, seed=1, rank=1)
    for oracle, mode in ((ExactOracle(truth), "certified"), (FloatOracle(truth), "float")):
        spy.reset()
        result = learn_low_rank_cs(oracle, rank=1, seed=0)
        assert spy.built == [mode] and result.mode == "cs" and not result.exact
        assert {"values", "approximate_logits"} <= spy.called(mode)


def test_multi_head_asks_its_arithmetic_for_no_number(spy):
    truth = MultiHead([([[1, 0], [0, -1]], [1, 2]), ([[0, 1], [1, 0]], [-1, "1/2"])])
    seen = {}
    for mode in ("certified", "symbolic", "float"):
        spy.reset()
        oracle = ExactOracle(truth)
        result = learn_multi_head(oracle, heads=2, mode=mode, seed=1, checks=0)
        assert spy.built == [mode] and result.mode == mode
        seen[mode] = _transcript(oracle)
        assert result.queries == (29 if mode != "float" else len(seen[mode]))  # checks=0: all the learner's
        assert not spy.any_called()  # the block fit, its confirmation and the sweep are the learner's own code
    assert seen["certified"] == seen["symbolic"]  # one plan of probes; float mode runs its own (the sweep)
    assert len(seen["float"]) > 29


def test_the_transformer_learns_its_attention_through_the_single_head_learner(spy):
    T = Transformer([[1, "1/2"], [0, -1]], [[1, 1], [2, -1], [0, 1]], [1, "-1/2", 2])
    result = learn_transformer(ExactOracle(T), m=3, seed=0)
    assert result.model.W == T.W
    assert spy.built == ["certified", "certified"]  # the transformer's run, then learn_single_head's
    assert spy.called("certified") == {"values", "combine"}


def test_the_ffn_learner_asks_its_arithmetic_for_no_number(spy):
    net = ReLUFFN([[1, 2, 0], [0, -1, 3]], [1, "-1/2"])
    result = learn_ffn(ExactOracle(net), m=2, seed=0)
    assert result.exact and spy.built == ["certified"] and not spy.any_called()


@pytest.mark.parametrize("learner", [learn_noisy, learn_noisy_frame, learn_noisy_refine])
def test_the_noisy_learners_ask_their_arithmetic_for_no_number(spy, learner):
    truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    result = learner(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2)
    assert not result.exact and spy.built == ["float"] and not spy.any_called()


def test_the_threshold_learner_asks_its_arithmetic_for_no_number(spy):
    truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    result = learn_threshold(truth, epsilon="1e-6", v_bound=2, w_bound=2)
    assert not result.exact and spy.built == ["float"] and not spy.any_called()


def _table() -> dict[str, set[str]]:
    """The documentation's table: registry name -> the modes it states."""
    text = PAGE.read_text()
    section = text.split("## Where one algorithm runs in three arithmetics", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`learn_"):
            continue
        names = re.findall(r"\(([^)]*)\)", cells[0])[-1]
        modes = set(re.findall(r"certified|symbolic|float", cells[2]))
        for name in re.findall(r"`([^`]+)`", names):
            rows[name] = modes
    return rows


def test_the_documented_table_covers_every_registered_learner_with_its_modes():
    rows = _table()
    assert len(rows) >= 11
    assert rows == {spec.name: set(spec.modes) for spec in registry.learners()}


# -- what the arithmetics refuse, with a message naming it ---------------------------------


def test_symbolic_mode_names_an_answer_that_is_not_exact():
    from fractions import Fraction

    from exact.arith import Measurement
    from exact.errors import OracleInconsistent

    arith = SymbolicArithmetic(ExactOracle(SingleHead([[1]], [1])))
    with pytest.raises(OracleInconsistent, match=r"^v\[0\]: an exact oracle answered a float, not an exact answer$"):
        arith.values([0.5], ["v[0]"])
    with pytest.raises(OracleInconsistent, match=r"^measurement #0: an exact oracle answered a Fraction, not an exact"):
        arith.combine([Fraction(1, 2)], [Measurement(Fraction(0), Fraction(1))], [[(1, 0)]], None)


def test_the_exact_arithmetics_name_a_float_base():
    from fractions import Fraction

    from exact.arith import Measurement
    from exact.errors import InvalidArgument

    oracle = ExactOracle(SingleHead([[1]], [1]))
    answer = oracle.query([[1], [0]])
    meas = [Measurement(0.0, Fraction(1))]
    with pytest.raises(InvalidArgument, match=r"^certified arithmetic: expected an exact base, slope or scale, got the float 0\.0$"):
        CertifiedArithmetic(oracle).combine([answer], meas, [[(1, 0)]], ["W[0][0]"])
    with pytest.raises(InvalidArgument, match=r"^measurement #0: symbolic mode needs exact bases and slopes, got the float 0\.0$"):
        SymbolicArithmetic(oracle).combine([answer], meas, [[(1, 0)]], None)
