"""`opdump convert --to msprobe`: a dump written as msprobe's step{N}/rank{R}/dump.json, construct.json and
stack.json, read back with json (as msprobe reads it), by opdump's own compare, and -- where msprobe's source is
at $MSPROBE_SRC (its `python` folder) -- by msprobe's own compare."""
import csv
import json
import math
import os
import pathlib
import subprocess
import warnings

import numpy as np
import pytest

from conftest import BUILD, PYTHON
from test_msprobe_front_door import SCRIPT, msprobe_config, script_command


def dump_with_opdump(tmp_path, name, level="mix", step=(0, 1), *extra):
    """msprobe_script.py through opdump's PrecisionDebugger (statistics task); returns (dump folder, result)."""
    out, _ = run_script(tmp_path, name, msprobe_config(tmp_path / name, level=level, step=list(step)), "--model-arg", *extra)
    return tmp_path / name, out


def stats_of(values):
    a = np.asarray(values, dtype=np.float64)
    return {"Max": a.max(), "Min": a.min(), "Mean": a.mean(), "Norm": np.linalg.norm(a)}


def test_a_mix_dump_becomes_msprobes_layout_with_the_scripts_own_statistics(tmp_path, run):
    dump, out = dump_with_opdump(tmp_path, "dump")
    proc = run("convert", dump, "-o", tmp_path / "ms", "--to", "msprobe")
    assert proc.returncode == 0, proc.stderr
    assert "in msprobe's layout" in proc.stdout
    assert sorted(p.relative_to(tmp_path / "ms").as_posix() for p in (tmp_path / "ms").glob("step*/rank*")) == \
        ["step0/rank0", "step1/rank0"]
    for step in (0, 1):
        folder = tmp_path / "ms" / f"step{step}" / "rank0"
        dump_json = json.loads((folder / "dump.json").read_text())
        assert (dump_json["task"], dump_json["level"], dump_json["framework"]) == ("statistics", "mix", "pytorch")
        data = dump_json["data"]
        names = list(data)
        # module records keep msprobe's names; ATen ops are msprobe's Aten.{op}.{n}.{direction}
        assert "Module.0.Linear.forward.0" in names and "Module.2.Linear.backward.0" in names
        assert {"Aten.linear.0.forward", "Aten.linear.1.forward", "Aten.relu.0.forward"} <= set(names), names
        assert names.index("Aten.linear.0.forward") < names.index("Module.0.Linear.forward.0")  # execution order
        # the statistics are msprobe's (Max, Min, Mean, Norm) of the script's own tensors
        x, y = out["inputs"][step], out["outputs"][step]
        first = data["Aten.linear.0.forward"]
        assert set(first) == {"input_args", "input_kwargs", "output"}
        t = first["input_args"][0]
        assert (t["type"], t["dtype"], t["shape"]) == ("torch.Tensor", "torch.float32", [2, 8])
        for key, value in stats_of(x).items():
            assert t[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
        for key, value in stats_of(y).items():
            assert data["Module.2.Linear.forward.0"]["output"][0][key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
        # backward records: the gradients reaching the module (input) as msprobe keys them
        grad = data["Module.2.Linear.backward.0"]
        assert set(grad) == {"input", "output"}
        expected = 2 * np.asarray(y, dtype=np.float64) / np.asarray(y).size  # d mean(y^2) / dy
        assert grad["input"][0]["Max"] == pytest.approx(expected.max(), rel=1e-5)
        # construct.json: each call's enclosing module call, as msprobe's level mix writes it
        construct = json.loads((folder / "construct.json").read_text())
        assert construct["Aten.linear.0.forward"] == "Module.0.Linear.forward.0"
        assert construct["Aten.linear.1.forward"] == "Module.2.Linear.forward.0"
        assert construct["Module.0.Linear.forward.0"] is None
        assert json.loads((folder / "stack.json").read_text()) == {}


def test_non_finite_statistics_are_what_torch_gives_written_as_pythons_json_writes_them(tmp_path, run):
    """A MindSpore statistic.csv with the non-finite counts: msprobe's Max/Min/Mean/Norm are torch's
    reductions, so NaN anywhere makes them NaN and an infinity is the extreme it is."""
    folder = tmp_path / "dump" / "rank_0" / "Net" / "0" / "3"
    folder.mkdir(parents=True)
    head = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,"
            "Max Value,Min Value,Avg Value,L2Norm Value,NaN Count,Negative Inf Count,Positive Inf Count\n")
    rows = [  # op, slot: max, min, avg, l2norm, nan, -inf, +inf
        ("nan", "1.5,-2,0.25,3,1,0,0"),
        ("posinf", "1.5,-2,0.25,3,0,0,2"),
        ("both", "1.5,-2,0.25,3,0,1,1"),
        ("allinf", "null,null,null,null,0,0,4"),
        ("finite", "1.5,-2,0.25,3,0,0,0"),
        ("unknown", "null,null,null,null,,,"),
    ]
    text = head + "".join(f"relu,Default/net-Net/{op}/relu-op0,{i},0,1,output,0,16,float32,(4),{cells}\n"
                          for i, (op, cells) in enumerate(rows))
    (folder / "statistic.csv").write_text(text)
    proc = run("convert", tmp_path / "dump", "-o", tmp_path / "ms", "--to", "msprobe")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "ms" / "step3" / "rank0" / "dump.json").read_text()
    assert "NaN" in text and "-Infinity" in text and '"\\u0001' not in text  # bare words, as json.dump writes them
    out = [record["output"][0] for record in json.loads(text)["data"].values()]
    got = [tuple(t[k] for k in ("Max", "Min", "Mean", "Norm")) for t in out]
    inf = math.inf

    def same(a, b):
        return all((x is None and y is None) or (x is not None and y is not None and
                   ((math.isnan(x) and math.isnan(y)) or x == y)) for x, y in zip(a, b))
    nan = math.nan
    expected = [(nan, nan, nan, nan), (inf, -2, inf, inf), (inf, -inf, nan, inf), (inf, inf, inf, inf),
                (1.5, -2, 0.25, 3), (None, None, None, None)]
    for g, e, (op, _) in zip(got, expected, rows):
        assert same(g, e), (op, g, e)


def test_a_tensor_dump_converts_with_statistics_computed_from_its_values(tmp_path, run):
    out, _ = run_script(tmp_path, "tensor", msprobe_config(tmp_path / "dump", task="tensor", level="L1", step=[1],
                                                           file_format="npy"))
    proc = run("convert", tmp_path / "dump", "-o", tmp_path / "ms", "--to", "msprobe")
    assert proc.returncode == 0, proc.stderr
    assert "computed from their values" in proc.stdout
    data = json.loads((tmp_path / "ms" / "step1" / "rank0" / "dump.json").read_text())["data"]
    x = out["inputs"][1]
    t = data["Aten.linear.0.forward"]["input_args"][0]
    for key, value in stats_of(x).items():
        assert t[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key


def test_opdumps_compare_reads_the_converted_dumps(tmp_path, run):
    a, _ = dump_with_opdump(tmp_path, "a")
    b, _ = dump_with_opdump(tmp_path, "b")
    for name, dump in (("a", a), ("b", b)):
        assert run("convert", dump, "-o", tmp_path / f"ms_{name}", "--to", "msprobe").returncode == 0
    proc = run("compare", tmp_path / "ms_a", tmp_path / "ms_b", "-o", tmp_path / "report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(tmp_path / "report" / "compare_result.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) > 20
    assert {r["Match"] for r in rows} == {"name"}  # every tensor paired by its msprobe name
    assert {r["Result"] for r in rows} == {"pass"}, [r for r in rows if r["Result"] != "pass"][:3]
    assert "Module.2.Linear.backward.0" in {r["Target"] for r in rows}


def test_bad_sources_fail_naming_them_and_write_nothing(tmp_path, run):
    (tmp_path / "empty").mkdir()
    proc = run("convert", tmp_path / "empty", "-o", tmp_path / "out", "--to", "msprobe")
    assert proc.returncode != 0 and "nothing to convert" in proc.stderr and str(tmp_path / "empty") in proc.stderr
    assert not (tmp_path / "out").exists()
    proc = run("convert", tmp_path / "missing", "-o", tmp_path / "out", "--to", "msprobe")
    assert proc.returncode != 0 and "missing" in proc.stderr
    proc = run("convert", tmp_path / "empty", "-o", tmp_path / "out", "--to", "msprobe", "--shape", "2,3")
    assert proc.returncode != 0 and "--shape" in proc.stderr


MSPROBE_SRC = os.environ.get("MSPROBE_SRC")


# Modules msprobe imports that Debian does not package, stood in for (msprobe_stubs/: never called here).
MSPROBE_STUBS = pathlib.Path(__file__).with_name("msprobe_stubs")


def msprobe_compare(tmp_path, target, golden, out):
    """msprobe's own compare (its source at $MSPROBE_SRC) of two step folders: its result as a DataFrame."""
    proc = subprocess.run([PYTHON, "-m", "msprobe.msprobe", "compare", "-tp", str(target), "-gp", str(golden),
                           "-o", str(out)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=f"{MSPROBE_SRC}:{MSPROBE_STUBS}"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    import pandas
    return pandas.read_csv(next(out.glob("compare_result_*.csv")))


@pytest.mark.skipif(not MSPROBE_SRC, reason="msprobe's compare needs its source: MSPROBE_SRC=<msprobe>/python")
def test_msprobes_own_compare_reads_converted_dumps(tmp_path, run):
    a, _ = dump_with_opdump(tmp_path, "a")
    b, _ = dump_with_opdump(tmp_path, "b")
    c, _ = dump_with_opdump(tmp_path, "c", "mix", (0, 1), "--plant-overflow", "1")  # step 1's input scaled by 1e20
    for name, dump in (("a", a), ("b", b), ("c", c)):
        assert run("convert", dump, "-o", tmp_path / f"ms_{name}", "--to", "msprobe").returncode == 0
    same = msprobe_compare(tmp_path, tmp_path / "ms_a" / "step1", tmp_path / "ms_b" / "step1", tmp_path / "same")
    assert len(same) > 20
    assert set(same["Result"]) == {"pass"}, same[same["Result"] != "pass"][["NPU Name", "Err_message"]]
    assert "Module.0.Linear.forward.0.input.0" in set(same["NPU Name"])
    changed = msprobe_compare(tmp_path, tmp_path / "ms_c" / "step1", tmp_path / "ms_a" / "step1", tmp_path / "changed")
    flagged = set(changed[changed["Result"] != "pass"]["NPU Name"])
    assert flagged  # msprobe's rules (an output parting further than its inputs) see the scaled step
    assert not any(name.startswith("Aten.linear.") for name in flagged), flagged  # scaled input, output alike


# ---- PrecisionDebugger writing msprobe's layout itself ("opdump": {"layout": "msprobe"}) ----------------------

def run_script(tmp_path, name, config, *extra, msprobe=False, env=None):
    """msprobe_script.py with `config` (None: no debugger); returns the script's result and its stderr."""
    cmd, result = script_command(tmp_path, name, config, extra)
    pythonpath = str(BUILD / "python")
    if msprobe:
        pythonpath = f"{MSPROBE_SRC}:{MSPROBE_STUBS}"
        cmd.append("--msprobe")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=pythonpath, **(env or {})))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(result.read_text()), proc.stderr


def layout_config(dump_path, level="mix", step=(1, 2), task="statistics", **fields):
    config = msprobe_config(dump_path, task=task, level=level, step=list(step), **fields)
    config["opdump"] = {"layout": "msprobe"}
    return config


def step_data(dump_path, step):
    return json.loads((dump_path / f"step{step}" / "rank0" / "dump.json").read_text())


def test_precision_debugger_writes_msprobes_layout_recorded_as_msprobe_records(tmp_path):
    plain, _ = run_script(tmp_path, "plain", None, "--plain")
    out, err = run_script(tmp_path, "dump", layout_config(tmp_path / "dump"), "--model-arg")
    assert out["losses"] == plain["losses"]  # bit-identical with dumping
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["step1", "step2"]
    for step in (1, 2):
        folder = tmp_path / "dump" / f"step{step}" / "rank0"
        dump = step_data(tmp_path / "dump", step)
        assert (dump["task"], dump["level"], dump["framework"]) == ("statistics", "mix", "pytorch")
        data, names = dump["data"], list(dump["data"])
        # framework APIs by their Python names, modules by path and class, each counted in its step
        for name in ("Functional.linear.0.forward", "Functional.relu.0.forward", "Functional.linear.1.forward",
                     "Tensor.square.0.forward", "Tensor.mean.0.forward", "Module.0.Linear.forward.0",
                     "Module.1.ReLU.forward.0", "Module.2.Linear.forward.0", "Functional.linear.1.backward",
                     "Functional.linear.0.backward", "Module.2.Linear.backward.0", "Tensor.add_.0.forward"):
            assert name in names, (name, names)
        assert not any(name.startswith("Torch.exp") for name in names)  # after stop(): not recorded
        assert not any(name.startswith(("Torch.addmm", "Torch.matmul")) for name in names)  # inside F.linear
        assert names.index("Functional.linear.0.forward") < names.index("Module.0.Linear.forward.0")
        # F.linear(input, weight, bias): the Python arguments, the input's statistics the script's own
        linear = data["Functional.linear.0.forward"]
        assert [a["shape"] for a in linear["input_args"]] == [[2, 8], [16, 8], [16]]
        assert [a["requires_grad"] for a in linear["input_args"]] == [False, True, True]
        assert linear["output"][0]["requires_grad"] is True and linear["input_kwargs"] == {}
        for key, value in stats_of(out["inputs"][step]).items():
            assert linear["input_args"][0][key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
        module = data["Module.2.Linear.forward.0"]
        for key, value in stats_of(out["outputs"][step]).items():
            assert module["output"][0][key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
        assert set(module["parameters"]) == {"weight", "bias"}
        # backward: the gradients reaching the API ("input") and those it passes on ("output")
        y = np.asarray(out["outputs"][step], dtype=np.float64)
        grad = data["Functional.linear.1.backward"]
        assert grad["input"][0]["Max"] == pytest.approx((2 * y / y.size).max(), rel=1e-5)
        # the node F.linear made (addmm(bias, input, weight.t())): gradients in its inputs' order, as msprobe has them
        assert [g["shape"] if g else None for g in grad["output"]] == [[4], [2, 16], [16, 4]]
        # construct.json: each call's module call; stack.json: the script's line of each call
        construct = json.loads((folder / "construct.json").read_text())
        assert construct["Functional.linear.0.forward"] == "Module.0.Linear.forward.0"
        assert construct["Module.0.Linear.forward.0"] is None
        stacks = json.loads((folder / "stack.json").read_text())
        square = [frames for names_, frames in stacks.values() if "Tensor.square.0.forward" in names_]
        assert square and any("msprobe_script.py" in f and "out.square()" in f for f in square[0]), square


def test_tensor_task_and_md5_summaries(tmp_path):
    import zlib
    import torch
    out, _ = run_script(tmp_path, "tensor", layout_config(tmp_path / "tensor", level="L1", step=[1], task="tensor"))
    dump = step_data(tmp_path / "tensor", 1)
    entry = dump["data"]["Functional.linear.0.forward"]["input_args"][0]
    assert entry["data_name"] == "Functional.linear.0.forward.input.0.pt"
    assert dump["dump_data_dir"] == str(tmp_path / "tensor" / "step1" / "rank0" / "dump_tensor_data")
    saved = torch.load(pathlib.Path(dump["dump_data_dir"]) / entry["data_name"])
    np.testing.assert_array_equal(saved.numpy(), np.asarray(out["inputs"][1], dtype=np.float32))
    out, _ = run_script(tmp_path, "md5", layout_config(tmp_path / "md5", level="L1", step=[0], summary_mode="md5"))
    entry = step_data(tmp_path / "md5", 0)["data"]["Functional.linear.0.forward"]["input_args"][0]
    assert entry["md5"] == f"{zlib.crc32(np.asarray(out['inputs'][0], dtype=np.float32).tobytes()):08x}"


def test_list_and_data_mode_choose_what_is_recorded(tmp_path):
    run_script(tmp_path, "relu", layout_config(tmp_path / "relu", level="L1", step=[0], list=["relu"]))
    assert {name.rsplit(".", 2)[0] for name in step_data(tmp_path / "relu", 0)["data"]} == {"Functional.relu"}
    run_script(tmp_path, "fwd", layout_config(tmp_path / "fwd", level="L1", step=[0], data_mode=["forward", "output"]))
    data = step_data(tmp_path / "fwd", 0)["data"]
    assert data and all(name.endswith(".forward") and set(v) == {"output"} for name, v in data.items()), data


def test_each_rank_writes_its_own_folder_and_an_unlisted_rank_none(tmp_path):
    run_script(tmp_path, "r1", layout_config(tmp_path / "r1", level="L1", step=[0], rank=[1]),
               env={"RANK": "1", "LOCAL_RANK": "1"})
    assert [p.relative_to(tmp_path / "r1").as_posix() for p in (tmp_path / "r1").glob("step*/rank*")] == ["step0/rank1"]
    _, err = run_script(tmp_path, "r0", layout_config(tmp_path / "r0", level="L1", step=[0], rank=[1]),
                        env={"RANK": "0", "LOCAL_RANK": "0"})
    assert not (tmp_path / "r0").exists()
    assert "recorded nothing" in err, err  # an empty result is said, not silent


def test_a_step_left_open_is_written_at_exit(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(layout_config(tmp_path / "dump", level="L1", step=[])))
    code = ("import torch\nfrom opdump import PrecisionDebugger\n"
            f"d = PrecisionDebugger(config_path={str(config)!r})\n"
            "d.start(torch.nn.Linear(2, 2))\ntorch.relu(torch.ones(3))\n")  # no stop(), no step(): the script ends
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert proc.returncode == 0, proc.stderr
    assert list(step_data(tmp_path / "dump", 0)["data"]) == ["Torch.relu.0.forward"]


def test_opdumps_compare_reads_the_layout_and_names_a_planted_change(tmp_path, run):
    run_script(tmp_path, "a", layout_config(tmp_path / "a"), "--model-arg")
    run_script(tmp_path, "b", layout_config(tmp_path / "b"), "--model-arg", "--plant-overflow", "2")
    proc = run("compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "report")
    with open(tmp_path / "report" / "compare_result.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    by_step = {step: [r for r in rows if r["Iteration"] == step] for step in ("1", "2")}
    assert by_step["1"] and {r["Result"] for r in by_step["1"]} == {"pass"}  # the same step 1
    assert any(r["Result"] != "pass" for r in by_step["2"])  # step 2's input was scaled
    summary = json.loads((tmp_path / "report" / "compare_summary.json").read_text())
    assert proc.returncode == 0, proc.stderr
    assert summary, summary


@pytest.mark.parametrize("change, field", [
    ({"task": "overflow_check"}, "opdump.layout"),
    ({"level": "L2"}, "level"),
    ({"opdump": {"layout": "ms"}}, "opdump.layout"),
])
def test_what_the_layout_cannot_hold_fails_at_construction(tmp_path, change, field):
    config = layout_config(tmp_path / "dump")
    if change.get("task") == "overflow_check":
        config = {k: v for k, v in config.items() if k != "statistics"}
        config["overflow_check"] = {"overflow_nums": 1}
    config.update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([PYTHON, str(SCRIPT), str(tmp_path / "r.json"), "--config", str(path)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert proc.returncode != 0 and "ConfigError" in proc.stderr and field in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "dump").exists()


def test_the_layout_is_the_front_doors_own(tmp_path):
    import opdump
    config = layout_config(tmp_path / "dump")
    with pytest.raises(opdump.ConfigError, match="PrecisionDebugger"):
        opdump.set_dump(config)  # the engine writes MindSpore's layout only
    assert not (tmp_path / "dump").exists()


def test_apis_are_restored_and_a_failing_record_never_stops_the_training(tmp_path):
    import torch
    import opdump
    from opdump.msprobe_writer import MsprobeWriter
    original = (torch.nn.functional.linear, torch.Tensor.__add__, torch.relu)
    opdump.PrecisionDebugger._reset()
    try:
        debugger = opdump.PrecisionDebugger(dump_path=str(tmp_path / "d"), level="L1", step=[0])
        debugger.config["opdump"] = {"layout": "msprobe"}
        debugger.msprobe_layout = True
        model = torch.nn.Linear(3, 2)
        debugger.start(model)
        assert torch.nn.functional.linear is not original[0]  # wrapped while dumping
        model(torch.ones(4, 3))
        with warnings.catch_warnings():  # Python 3.12+ warns of fork() beside threads; the child only exits
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()  # as a DataLoader worker is: the child records nothing
        if pid == 0:
            os._exit(0 if not opdump.PrecisionDebugger._instance._recorder.active else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert opdump.PrecisionDebugger._instance._recorder.active  # the parent goes on recording
        with pytest.raises(RuntimeError):  # the API's own error, unchanged
            torch.nn.functional.linear(torch.ones(2, 5), model.weight)
        broken = MsprobeWriter.describe

        def failing(self, value, stem):
            raise OSError("disk on fire")
        MsprobeWriter.describe = failing
        try:
            with pytest.warns(UserWarning, match="disk on fire"):
                y = model(torch.ones(4, 3))
        finally:
            MsprobeWriter.describe = broken
        assert y.shape == (4, 2)
        debugger.stop()
        debugger.step()
    finally:
        opdump.PrecisionDebugger._reset()
    assert (torch.nn.functional.linear, torch.Tensor.__add__, torch.relu) == original


def torch_major():
    import torch
    return int(torch.__version__.split(".")[0])


@pytest.mark.skipif(not MSPROBE_SRC, reason="msprobe's own dump needs its source: MSPROBE_SRC=<msprobe>/python")
@pytest.mark.parametrize("level, task", [("L1", "statistics"), ("mix", "statistics"), ("L0", "statistics"),
                                         ("L1", "tensor"), ("mix", "tensor")])
def test_msprobes_compare_flags_nothing_between_msprobe_and_opdump_dumps_of_one_script(tmp_path, level, task):
    if task == "tensor" and torch_major() < 2:
        pytest.skip("msprobe's tensor task fails on PyTorch 1.x (it calls Tensor.untyped_storage, new in 2.0)")
    ours, _ = run_script(tmp_path, "ours", layout_config(tmp_path / "ours", level=level, step=[0, 1], task=task))
    theirs, _ = run_script(tmp_path, "theirs", msprobe_config(tmp_path / "theirs", level=level, step=[0, 1], task=task),
                           msprobe=True)
    assert ours["losses"] == theirs["losses"]
    for step in (0, 1):
        msprobe_dump = next((tmp_path / "theirs" / f"step{step}").iterdir()) / "dump.json"
        ours_dump = tmp_path / "ours" / f"step{step}" / "rank0" / "dump.json"
        for target, golden in ((ours_dump, msprobe_dump), (msprobe_dump, ours_dump)):
            result = msprobe_compare(tmp_path, target, golden, tmp_path / f"cmp_{step}_{target == ours_dump}")
            assert len(result) > 5
            assert set(result["Result"]) == {"pass"}, result[result["Result"] != "pass"][["NPU Name", "Err_message"]]
        # every call msprobe recorded has its name among ours (msprobe's module parameters' gradients aside)
        theirs_names = json.loads(msprobe_dump.read_text())["data"]
        ours_names = json.loads(ours_dump.read_text())["data"]
        assert not {n for n in theirs_names if n not in ours_names and ".parameters_grad." not in n}
