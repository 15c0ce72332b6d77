"""The command line's noisy oracles: --noise, --learner, the certified bound and its check."""

import json

import pytest

from exact.models import SingleHead
from test_cli import ERROR_PREFIX, assert_one_line_error, assert_option_error, run


@pytest.fixture
def gaussian4(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SingleHead.gaussian(4, seed=2).to_json()))
    return path


@pytest.mark.parametrize("learner", ["paper", "frame"])
@pytest.mark.parametrize("noise", ["uniform:1e-6", "round:6", "float32", "adversarial:1e-6"])
def test_a_noisy_learn_reports_a_bound_that_holds(capsys, gaussian4, learner, noise):
    rc, out, err = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", noise, "--learner", learner,
                       "--w-bound", 2, "--token-norm", 1, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == f"noisy-{learner}" and result["queries"] == 20 and not result["exact"]
    assert result["within_bound"] is True and set(result["error_bound"]) == {"W_frobenius", "W_max", "v_norm", "v_max"}
    for key, value in result["measured_error"].items():
        assert value <= result["error_bound"][key]


def test_noise_alone_picks_the_frame_learner_and_prints_the_bound_and_the_measured_error(capsys, gaussian4):
    rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", "uniform:1e-4", "--w-bound", 2)
    assert rc == 0
    assert "bound       certified ‖ΔW‖_F <= " in out and "within the bound: yes" in out
    assert "queries     20 (d² + d = 20)" in out


def test_the_noise_seed_changes_the_answers_and_is_reproducible(capsys, gaussian4):
    outs = []
    for seed in (1, 1, 2):
        rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", "uniform:1e-3",
                         "--noise-seed", seed, "--w-bound", 2, "--json", "--quiet")
        outs.append(json.loads(out)["model"])
    assert outs[0] == outs[1] != outs[2]


def test_answers_that_disprove_the_w_bound_exit_2(capsys, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(SingleHead([[3, 0], [0, 0]], [1, 1]).to_json()))  # ‖W‖_F = 3 > 2
    for learner in ("paper", "frame"):
        rc, _, err = run(capsys, "learn", "single-head", "--model", path, "--noise", "uniform:1e-6", "--learner",
                         learner, "--w-bound", 2, "--quiet")
        assert rc == 2 and "raise --w-bound" in assert_one_line_error(err)


def test_a_result_outside_its_bound_exits_1(capsys, gaussian4, monkeypatch):
    """The command line checks the bound against the model file; a learner whose result broke
    its own bound (here a wrapper that shifts W) is reported and exits 1."""
    import dataclasses

    from exact import registry
    from exact.models import SingleHead as Head

    spec = registry.get("noisy-frame")

    def shifted(oracle, **kwargs):
        r = spec.learn(oracle, **kwargs)
        W = [[x + 1 if (i, j) == (0, 0) else x for j, x in enumerate(row)] for i, row in enumerate(r.model.W)]
        return dataclasses.replace(r, model=Head(W, r.model.v))

    monkeypatch.setitem(registry._REGISTRY, "noisy-frame", dataclasses.replace(spec, learn=shifted))
    rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", "uniform:1e-6", "--w-bound", 2,
                     "--json", "--quiet")
    assert rc == 1 and json.loads(out)["within_bound"] is False
    rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", "uniform:1e-6", "--w-bound", 2)
    assert rc == 1 and "within the bound: NO: the bound does not hold" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--noise", "uniform:1e-6", "--method", "single-head"], "--noise: learner 'single-head' is exact"),
        (["--learner", "paper", "--method", "noisy-frame"], "--learner paper: conflicts with --method noisy-frame"),
        (["--noise-seed", "3"], "--noise-seed: applies only with --noise"),
        (["--noise", "uniform:1e-6", "--learner", "paper"], "--w-bound: learner 'noisy-paper' needs it"),
    ],
)
def test_inconsistent_noise_options_exit_2_with_one_line(capsys, gaussian4, argv, message):
    rc, _, err = run(capsys, "learn", "single-head", "--model", gaussian4, *argv)
    assert rc == 2
    assert message in assert_one_line_error(err)


@pytest.mark.parametrize("spec", ["uniform:-1", "round:-2", "gauss:1", "uniform:1e99999", "round:1.5"])
def test_bad_noise_specs_exit_2_naming_the_option(capsys, gaussian4, spec):
    rc, _, err = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", spec, "--w-bound", 2)
    assert rc == 2
    assert_option_error(err, "learn single-head", "--noise")


def test_noise_on_an_exact_only_command_points_at_the_noisy_learners(capsys, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(SingleHead.random(3, seed=1, rank=1).to_json()))
    rc, _, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 1, "--noise", "uniform:1e-6")
    assert rc == 2 and "learn single-head --learner paper|frame" in assert_one_line_error(err, ERROR_PREFIX)


def test_threshold_learning_reports_bits_and_a_bound_that_holds(capsys, gaussian4):
    rc, out, err = run(capsys, "learn", "single-head", "--model", gaussian4, "--threshold", "--epsilon", "1e-5",
                       "--v-bound", 10, "--w-bound", 2, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == "threshold" and result["queries"] == 20 and result["within_bound"] is True
    assert 0 < result["details"]["bit_queries"] <= 0.8 * result["details"]["full_range_bits"]
    rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--threshold", "--epsilon", "1e-5",
                     "--v-bound", 10, "--w-bound", 2, "--learner", "frame", "--quiet")
    assert rc == 0 and "threshold bits for 20 value queries" in out and "prior misses: 0" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--threshold", "--noise", "uniform:1e-6", "--epsilon", "1e-5", "--v-bound", 1, "--w-bound", 2],
         "--threshold: learner 'threshold' takes neither --method nor --noise"),
        (["--threshold", "--v-bound", 1, "--w-bound", 2], "--epsilon: learner 'threshold' needs it"),
        (["--threshold", "--epsilon", "1e-5", "--w-bound", 2], "--v-bound: learner 'threshold' needs it"),
    ],
)
def test_threshold_option_errors_exit_2(capsys, gaussian4, argv, message):
    rc, _, err = run(capsys, "learn", "single-head", "--model", gaussian4, *argv)
    assert rc == 2 and message in assert_one_line_error(err)


def test_the_command_line_adversary_knows_the_learner_it_faces(capsys, gaussian4):
    errors = {}
    for noise in ("adversarial:1e-6", "uniform:1e-6"):
        rc, out, _ = run(capsys, "learn", "single-head", "--model", gaussian4, "--noise", noise, "--learner", "paper",
                         "--w-bound", 2, "--token-norm", 1, "--json", "--quiet")
        result = json.loads(out)
        assert rc == 0 and result["within_bound"] is True
        errors[noise] = result["measured_error"]["W_frobenius"]
    assert errors["adversarial:1e-6"] > 2 * errors["uniform:1e-6"]


USER_MODULE = '''
import numpy as np
W = np.array([[0.5, -0.25], [0.125, 1.0]])
v = np.array([1.0, -0.5])

def f(X):
    X = np.asarray(X, dtype=float)
    s = X @ W @ X[-1]
    a = np.exp(s - s.max()); a /= a.sum()
    return float(a @ (X @ v))
'''


@pytest.fixture
def user_function(tmp_path, monkeypatch):
    name = f"user_model_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    yield f"{name}:f"
    __import__("sys").modules.pop(name, None)


def test_a_real_function_is_learned_exactly_on_a_grid_and_with_a_bound_under_noise(capsys, user_function):
    rc, out, err = run(capsys, "learn", "single-head", "--oracle", user_function, "--d", 2, "--accuracy", "1e-13",
                       "--grid", "dyadic:8", "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["exact"] and result["model"]["W"] == [["1/2", "-1/4"], ["1/8", "1"]]
    assert result["certificate"]["holds"] and "equals_model" not in result
    rc, out, err = run(capsys, "learn", "single-head", "--oracle", user_function, "--d", 2, "--noise-bound", "1e-12",
                       "--w-bound", 2, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == "noisy-frame" and result["error_bound"]["W_frobenius"] < 1e-8


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--d", 2, "--accuracy", "1e-13", "--oracle", "{fn}x"], "has no callable"),
        (["--d", 2, "--accuracy", "1e-13", "--oracle", "no_such_module_xyz:f"], "cannot import module 'no_such_module_xyz'"),
        (["--accuracy", "1e-13", "--oracle", "{fn}"], "needs --d, the token dimension"),
        (["--d", 2, "--oracle", "{fn}"], "needs exactly one of --accuracy and --noise-bound"),
        (["--d", 2, "--accuracy", "1e-13", "--noise-bound", "1e-9", "--oracle", "{fn}"], "needs exactly one of"),
        (["--d", 2, "--accuracy", "1e-13", "--oracle", "{fn}", "--model", "m.json"], "--model does not apply"),
        (["--d", 2], "--d: applies only with --oracle MODULE:CALLABLE"),
        ([], "--model: the model file to simulate is required"),
    ],
)
def test_callable_oracle_option_errors_exit_2(capsys, user_function, argv, message):
    argv = [str(a).replace("{fn}", user_function) for a in argv]
    rc, _, err = run(capsys, "learn", "single-head", *argv)
    assert rc == 2 and message in assert_one_line_error(err)


def test_a_malformed_oracle_name_is_an_option_error(capsys):
    rc, _, err = run(capsys, "learn", "single-head", "--oracle", "os.system('x')", "--d", 2, "--accuracy", 1)
    assert rc == 2
    assert_option_error(err, "learn single-head", "--oracle")
