"""`opdump convert --to msprobe`: a dump written as msprobe's step{N}/rank{R}/dump.json, construct.json and
stack.json, read back with json (as msprobe reads it), by opdump's own compare, and -- where msprobe's source is
at $MSPROBE_SRC (its `python` folder) -- by msprobe's own compare."""
import csv
import json
import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

from conftest import BUILD, PYTHON
from test_msprobe_front_door import SCRIPT, msprobe_config


def dump_with_opdump(tmp_path, name, level="mix", step=(0, 1), *extra):
    """msprobe_script.py through opdump's PrecisionDebugger (statistics task); returns (dump folder, result)."""
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(msprobe_config(tmp_path / name, level=level, step=list(step))))
    result = tmp_path / f"{name}_result.json"
    proc = subprocess.run([PYTHON, str(SCRIPT), str(result), "--config", str(config), "--model-arg", *extra],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(BUILD / "python")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / name, json.loads(result.read_text())


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
    config = tmp_path / "tensor.json"
    config.write_text(json.dumps(msprobe_config(tmp_path / "dump", task="tensor", level="L1", step=[1], file_format="npy")))
    result = tmp_path / "result.json"
    subprocess.run([PYTHON, str(SCRIPT), str(result), "--config", str(config)], check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=str(BUILD / "python")), cwd=tmp_path, timeout=600)
    proc = run("convert", tmp_path / "dump", "-o", tmp_path / "ms", "--to", "msprobe")
    assert proc.returncode == 0, proc.stderr
    assert "computed from their values" in proc.stdout
    data = json.loads((tmp_path / "ms" / "step1" / "rank0" / "dump.json").read_text())["data"]
    x = json.loads(result.read_text())["inputs"][1]
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


def msprobe_compare(tmp_path, target, golden, out):
    """msprobe's own compare (its source at $MSPROBE_SRC) of two step folders: its result as a DataFrame."""
    stub = tmp_path / "stub"
    stub.mkdir(exist_ok=True)
    (stub / "einops.py").write_text("def rearrange(*a, **k):\n    raise NotImplementedError\n")  # msprobe imports it
    proc = subprocess.run([PYTHON, "-m", "msprobe.msprobe", "compare", "-tp", str(target), "-gp", str(golden),
                           "-o", str(out)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=f"{MSPROBE_SRC}:{stub}"))
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
    # msprobe flags the outputs that part further than their inputs: not the Linears (their scaled input
    # scales their output alike) but the square, which leaves float32's range
    assert "Aten.square.0.forward.output.0" in flagged, flagged
    assert not any(name.startswith("Aten.linear.") for name in flagged), flagged
