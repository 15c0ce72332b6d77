"""The command line for ReLU networks and one-layer Transformers: random, learn, canonical forms, exit codes."""

import dataclasses
import json

import pytest

from exact import registry
from exact.ffn import ReLUFFN
from exact.transformer import Transformer
from test_cli import assert_one_line_error, run


def _model(capsys, tmp_path, kind, *args):
    rc, out, err = run(capsys, "random", kind, *args)
    assert rc == 0, err
    path = tmp_path / f"{kind}.json"
    path.write_text(out)
    return path, json.loads(out)


def test_random_models_are_seeded_json(capsys, tmp_path):
    _, a = _model(capsys, tmp_path, "ffn", "--d", 5, "--m", 7, "--seed", 3)
    _, b = _model(capsys, tmp_path, "ffn", "--d", 5, "--m", 7, "--seed", 3)
    assert a == b and a["kind"] == "ffn" and (a["d"], a["m"]) == (5, 7)
    assert ReLUFFN.from_json(a) == ReLUFFN.random(5, 7, seed=3)
    _, t = _model(capsys, tmp_path, "transformer", "--d", 3, "--m", 4, "--seed", 1)
    assert t["kind"] == "transformer" and Transformer.from_json(t) == Transformer.random(3, 4, seed=1)


def test_learn_ffn_reports_canonical_forms_counts_and_identifiability(capsys, tmp_path):
    path, data = _model(capsys, tmp_path, "ffn", "--d", 6, "--m", 6, "--seed", 2)
    rc, out, err = run(capsys, "learn", "ffn", "--model", path, "--m", 6, "--seed", 0, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    net = ReLUFFN.from_json(data)
    details = result["details"]
    assert result["equals_model"] is True and details["identifiable"] is True and result["exact"] is True
    assert details["units_seen"] is True and details["function_form"] == net.function_form().to_json()
    assert details["unit_forms"] == [net.unit_form().to_json()]
    assert result["queries"] <= (6 + 1) * 4 + 10 * 6 + 32 - result["verification_queries"]
    assert result["certificate"]["holds"] is True
    rc, out, _ = run(capsys, "learn", "ffn", "--model", path, "--m", 6)
    assert rc == 0 and "exact       yes: the canonical form equals the model's" in out
    assert "units       identifiable: 6 units" in out


def test_learn_transformer_counts_value_queries_and_oracle_calls(capsys, tmp_path):
    path, data = _model(capsys, tmp_path, "transformer", "--d", 4, "--m", 4, "--seed", 5)
    rc, out, err = run(capsys, "learn", "transformer", "--model", path, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    d = 4
    ffn_queries = result["details"]["ffn_queries"]
    assert result["queries"] == ffn_queries + 2 * (d * d + d) and result["details"]["odd_queries"] == d * d + d
    assert result["model"]["W"] == data["W"] and result["equals_model"] is True
    rc, out, _ = run(capsys, "learn", "transformer", "--model", path)
    assert rc == 0 and "odd queries (two calls each)" in out


def test_a_result_that_is_not_the_canonical_form_exits_1(capsys, tmp_path, monkeypatch):
    path, _ = _model(capsys, tmp_path, "ffn", "--d", 4, "--m", 3, "--seed", 1)
    spec = registry.get("ffn")

    def wrong(oracle, **kwargs):
        r = spec.learn(oracle, **kwargs)
        return dataclasses.replace(r, model=ReLUFFN(r.model.A, [2 * x for x in r.model.w]))

    monkeypatch.setitem(registry._REGISTRY, "ffn", dataclasses.replace(spec, learn=wrong))
    rc, out, _ = run(capsys, "learn", "ffn", "--model", path, "--json", "--quiet")
    assert rc == 1 and json.loads(out)["equals_model"] is False


@pytest.mark.parametrize("argv, message", [
    (["learn", "transformer", "--model", "ZERO"], "Aᵀw = 0"),
    (["learn", "ffn", "--model", "HEAD"], "learns ffn models, got a single-head"),
    (["learn", "ffn", "--model", "FFN", "--grid", "rational:7"], "unrecognized arguments: --grid"),
    (["random", "ffn", "--d", 3], "--m"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, argv, message):
    files = {
        "ZERO": Transformer([[1, 0], [0, 1]], [[1, 1], [-1, -1]], [1, 1]).to_json(),
        "HEAD": {"kind": "single-head", "W": [["1"]], "v": ["1"]},
        "FFN": ReLUFFN.random(2, 2, seed=0).to_json(),
    }
    args = []
    for a in argv:
        if a in files:
            p = tmp_path / f"{a}.json"
            p.write_text(json.dumps(files[a]))
            a = str(p)
        args.append(a)
    rc, _, err = run(capsys, *args)
    assert rc == 2 and message in err
    if "unrecognized" not in message and "--m" != message:
        assert_one_line_error(err, prefix="exact-attention: ")
