"""msprobe's front door: a script written for msprobe's PrecisionDebugger, its import changed to opdump's,
run with msprobe's config.json; the dump read back and checked against the script's own tensors."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

from conftest import BUILD, PYTHON
from dump_reader import load, statistics, tensors

SCRIPT = pathlib.Path(__file__).with_name("msprobe_script.py")


def msprobe_config(dump_path, task="statistics", level="L1", step=(), rank=(), **task_fields):
    """msprobe's config.json as its template writes it."""
    fields = {"scope": [], "list": [], "data_mode": ["all"]}
    if task != "overflow_check":
        fields["summary_mode"] = "statistics"
    fields.update(task_fields)
    return {"task": task, "dump_path": str(dump_path), "rank": list(rank), "step": list(step), "level": level,
            "enable_dataloader": False, "async_dump": False, task: fields}


def script_command(tmp_path, name, config, extra):
    """The command running msprobe_script.py with `config` (a dict, written beside; None: none), and its result file."""
    result = tmp_path / f"{name}_result.json"
    cmd = [PYTHON, str(SCRIPT), str(result), *extra]
    if config is not None:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(config))
        cmd += ["--config", str(path)]
    return cmd, result


@pytest.fixture
def script(tmp_path):
    """Runs msprobe_script.py with a config dict; returns (result, stderr, returncode)."""
    counter = [0]

    def _run(config=None, *extra, expect_ok=True, env=None):
        counter[0] += 1
        cmd, result = script_command(tmp_path, f"run{counter[0]}", config, extra)
        run_env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), **(env or {}))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=600, cwd=tmp_path)
        if expect_ok:
            assert proc.returncode == 0, proc.stderr
            return json.loads(result.read_text()), proc.stderr
        return None, proc.stderr, proc.returncode

    return _run


def step_folders(dump_path):
    net = dump_path / "rank_0" / "Net" / "0"
    return sorted(int(p.name) for p in net.iterdir()) if net.exists() else []


def rows_of(folder, op_type):
    return [r for r in statistics(folder) if r["Op Type"] == op_type]


def test_statistics_task_dumps_the_selected_steps_between_start_and_stop(script, tmp_path):
    plain, _ = script(None, "--plain")
    out, err = script(msprobe_config(tmp_path / "dump", step=[1, 2]))
    assert out["losses"] == plain["losses"]  # bit-identical with dumping
    assert step_folders(tmp_path / "dump") == [1, 2]
    for step in (1, 2):
        folder = tmp_path / "dump" / "rank_0" / "Net" / "0" / str(step)
        rows = statistics(folder)
        # msprobe's statistics (Max, Min, Mean, Norm) of the first Linear's input: the script's own x
        x = np.array(out["inputs"][step], dtype=np.float32)
        first = [r for r in rows_of(folder, "linear") if r["IO"] == "input" and r["Slot"] == "0"][0]
        assert first["Shape"] == "(2,8)"
        assert float(first["Max Value"]) == pytest.approx(x.max(), rel=1e-6)
        assert float(first["Min Value"]) == pytest.approx(x.min(), rel=1e-6)
        assert float(first["Avg Value"]) == pytest.approx(x.astype(np.float64).mean(), rel=1e-6, abs=1e-9)
        assert float(first["L2Norm Value"]) == pytest.approx(np.linalg.norm(x.astype(np.float64)), rel=1e-6)
        # forward, backward and the optimizer ran between start() and stop(); the exp after stop() did not count
        types = {r["Op Type"] for r in rows}
        assert {"linear", "relu", "mean"} <= types, types
        assert "exp" not in types
        # the model passed to start() names its ops by module path
        assert any("Sequential-Sequential/0-Linear" in r["Op Name"] for r in rows)


def test_keyword_overrides_and_the_model_argument(script, tmp_path):
    out, _ = script(msprobe_config(tmp_path / "dump", step=[1, 2], level="mix"), "--model-arg", "--keyword-step", "3")
    assert step_folders(tmp_path / "dump") == [3]  # step= wins over the file's list
    rows = statistics(tmp_path / "dump" / "rank_0" / "Net" / "0" / "3")
    assert any("Sequential-Sequential/2-Linear" in r["Op Name"] for r in rows)


def test_level_L0_records_modules_forward_and_backward(script, tmp_path):
    out, _ = script(msprobe_config(tmp_path / "dump", task="tensor", level="L0", step=[1]), "--model-arg")
    folder = tmp_path / "dump" / "rank_0" / "Net" / "0" / "1"
    files = tensors(folder)
    assert {op_type for op_type, _, _, _ in files} == {"Linear", "ReLU"}  # modules only, no API records
    x = np.array(out["inputs"][1], dtype=np.float32)
    y = np.array(out["outputs"][1], dtype=np.float32)
    np.testing.assert_array_equal(load(files[("Linear", "Module_0_Linear_forward_0", "input", 0)]), x)
    np.testing.assert_array_equal(load(files[("Linear", "Module_2_Linear_forward_0", "output", 0)]), y)
    # the gradient reaching the last Linear's output: d mean(y^2) / dy = 2 y / y.size
    np.testing.assert_allclose(load(files[("Linear", "Module_2_Linear_backward_0", "input", 0)]), 2 * y / y.size, rtol=1e-6)
    assert ("ReLU", "Module_1_ReLU_backward_0", "input", 0) in files


def test_level_mix_records_modules_and_apis(script, tmp_path):
    script(msprobe_config(tmp_path / "dump", level="mix", step=[0]), "--model-arg")
    types = {r["Op Type"] for r in statistics(tmp_path / "dump" / "rank_0" / "Net" / "0" / "0")}
    assert {"Linear", "ReLU", "linear", "relu"} <= types, types


def test_list_summary_mode_and_data_mode(script, tmp_path):
    script(msprobe_config(tmp_path / "dump", step=[0], list=["relu"], data_mode=["output"], summary_mode="md5"))
    rows = statistics(tmp_path / "dump" / "rank_0" / "Net" / "0" / "0")
    assert rows and {r["Op Type"] for r in rows} <= {"relu", "relu_", "threshold_backward"}, {r["Op Type"] for r in rows}
    assert {r["IO"] for r in rows} == {"output"}
    assert all(len(r["MD5"]) == 32 for r in rows)


def test_tensor_task_writes_the_tensors(script, tmp_path):
    out, _ = script(msprobe_config(tmp_path / "dump", task="tensor", step=[2], file_format="npy"))
    folder = tmp_path / "dump" / "rank_0" / "Net" / "0" / "2"
    found = [path for (op_type, name, io, slot), path in tensors(folder).items()
             if op_type == "linear" and io == "input" and slot == 0 and "0-Linear" in name]
    assert len(found) == 1, sorted(tensors(folder))
    np.testing.assert_array_equal(load(found[0]), np.array(out["inputs"][2], dtype=np.float32))
    assert statistics(folder)  # msprobe's tensor task keeps the statistics too


def test_overflow_check_task_names_the_planted_op(script, tmp_path):
    _, err = script(msprobe_config(tmp_path / "dump", task="overflow_check", overflow_nums=-1), "--plant-overflow", "2")
    summaries = list((tmp_path / "dump").rglob("overflow_summary.json"))
    assert len(summaries) == 1, err
    summary = json.loads(summaries[0].read_text())
    assert summary["root_cause"]["op_type"] in ("square", "pow"), summary["root_cause"]
    assert summary["root_cause"]["inputs_finite"] is True


def test_a_rank_not_listed_dumps_nothing(script, tmp_path):
    out, _ = script(msprobe_config(tmp_path / "dump", rank=[1]), env={"RANK": "0"})
    assert step_folders(tmp_path / "dump") == []
    out, _ = script(msprobe_config(tmp_path / "dump2", rank=[1], step=[0]), env={"RANK": "1", "LOCAL_RANK": "1"})
    assert (tmp_path / "dump2" / "rank_1" / "Net" / "0" / "0" / "statistic.csv").exists()


@pytest.mark.parametrize("change, field", [
    ({"level": "L3"}, "level"),
    ({"task": "free_benchmark"}, "task"),
    ({"statistics": {"scope": ["Module.0.Linear.forward.0"]}}, "statistics.scope"),
    ({"step": [0, "two"]}, "step[1]"),
])
def test_what_opdump_lacks_fails_at_construction_naming_the_field(script, tmp_path, change, field):
    config = msprobe_config(tmp_path / "dump")
    config.update(change)
    _, err, code = script(config, expect_ok=False)
    assert code != 0
    assert "ConfigError" in err and field in err, err
    assert not (tmp_path / "dump").exists()  # nothing written


def test_mix_without_a_model_is_an_error(tmp_path):
    import opdump
    opdump.PrecisionDebugger._reset()
    try:
        debugger = opdump.PrecisionDebugger(dump_path=str(tmp_path / "d"), level="mix")  # no config file: overrides only
        with pytest.raises(ValueError, match="pass the model"):
            debugger.start()
        assert not opdump.dumping()
    finally:
        opdump.PrecisionDebugger._reset()
