"""Debug scenes on real PyTorch models with planted faults: overflow (online and offline),
exception dump, watcher, sampling and the single-operator layout."""
import csv
import glob
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import torch

from conftest import BUILD, PYTHON, ms_config
from dump_reader import tensors

SCRIPT = pathlib.Path(__file__).with_name("debug_workload.py")


@pytest.fixture
def scene(tmp_path):
    """Runs debug_workload.py SCENE with a config dict; returns (result dict, stderr)."""
    counter = [0]

    def _run(name, config=None, extra=()):
        counter[0] += 1
        result = tmp_path / f"result{counter[0]}.json"
        cmd = [PYTHON, str(SCRIPT), name, "--result", str(result), *extra]
        if config is not None:
            cfg = tmp_path / f"config{counter[0]}.json"
            cfg.write_text(json.dumps(config))
            cmd += ["--config", str(cfg)]
        env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(result.read_text()), proc.stderr

    return _run


def files(root, pattern):
    return sorted(glob.glob(os.path.join(root, "**", pattern), recursive=True))


# ---- overflow -----------------------------------------------------------------------------------

def test_overflow_dump_names_the_planted_op_first(scene, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_debug": "on"}}
    out, err = scene("overflow", cfg)
    root = out["root"]
    summary = json.load(open(os.path.join(root, "overflow_summary.json")))
    assert summary["root_cause"]["op_type"] == "exp"
    assert summary["root_cause"]["inputs_finite"] is True
    # every overflowing op is printed as it happens, the root cause at the end
    assert "overflow: Default/net-PlantedOverflow/exp-op" in err
    assert "overflow root cause: Default/net-PlantedOverflow/exp-op" in err
    # only overflowing ops are dumped: exp and what inherits from it, never tanh or fc
    names = [os.path.basename(p) for p in files(root, "*.npy")]
    assert any(n.startswith("exp.") for n in names) and not any(n.startswith("tanh.") for n in names)
    assert not any(n.startswith("linear.Default_net-PlantedOverflow_fc-Linear") for n in names)
    assert any(n.startswith("linear.Default_net-PlantedOverflow_head-Linear") for n in names)
    # the exp op's files: its finite input and its infinite output, read back by numpy
    exp_out = [p for p in files(root, "exp.*.output.0.*.npy")]
    exp_in = [p for p in files(root, "exp.*.input.0.*.npy")]
    assert len(exp_out) == 1 and len(exp_in) == 1
    assert np.isfinite(np.load(exp_in[0])).all()
    assert np.isinf(np.load(exp_out[0])).any()
    # one Opdebug record per overflowing op, named as the MindSpore Dump guide says
    records = files(root, "Opdebug.Node_OpDebug.*.output.0.json")
    assert len(records) == summary["overflow_ops"] >= 3
    exp_record = [json.load(open(r)) for r in records if json.load(open(r))["op_type"] == "exp"][0]
    assert exp_record["tensors"][-1]["io"] == "output" and exp_record["tensors"][-1]["nan_or_inf"] > 0
    # backward ops with NaN/Inf gradients are found too, named after their forward op
    assert any(e["op_name"].startswith("Gradients/") for e in summary["ops"])


# The checks made by ATen reductions, batched across ops (device_batch.h): on a GPU, and on the CPU
# with device_path_on_cpu. exp's output is clamped in place after backward, while its check
# may still be pending: the dump shows what exp wrote, not what the clamp left.
@pytest.mark.parametrize("where", ["cpu-aten", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device"))])
def test_overflow_checked_by_device_reductions(scene, tmp_path, where):
    cfg = ms_config(tmp_path / "d", common={"op_debug_mode": 3}, device_path_on_cpu=where == "cpu-aten")
    out, err = scene("overflow", cfg, extra=["--device", "cuda" if where == "cuda" else "cpu", "--clamp-after"])
    summary = json.load(open(os.path.join(out["root"], "overflow_summary.json")))
    assert summary["root_cause"]["op_type"] == "exp" and summary["root_cause"]["inputs_finite"] is True
    assert "overflow root cause: Default/net-PlantedOverflow/exp-op" in err
    exp_out = files(out["root"], "exp.*.output.0.*.npy")
    assert len(exp_out) == 1 and np.isinf(np.load(exp_out[0])).any()
    # the ops after exp inherit its Inf, forward and backward; tanh and fc stay clean
    names = [os.path.basename(p) for p in files(out["root"], "*.npy")]
    assert not any(n.startswith("tanh.") for n in names)
    assert any(e["op_name"].startswith("Gradients/") for e in summary["ops"])
    assert out["report"]["overflow_checks"] > 0 and out["report"]["overflow_bounded"] == 0


def test_overflow_number_caps_what_is_dumped_not_the_root_cause(scene, tmp_path):
    cfg = ms_config(tmp_path / "d", common={"op_debug_mode": 3, "overflow_number": 1})
    out, err = scene("overflow", cfg)
    records = files(out["root"], "Opdebug.*.json")
    assert len(records) == 1
    assert json.load(open(records[0]))["op_type"] == "exp"
    summary = json.load(open(os.path.join(out["root"], "overflow_summary.json")))
    assert summary["root_cause"]["op_type"] == "exp"


def test_fp16_range_check_flags_values_float16_cannot_hold(scene, tmp_path):
    # tanh(..) * 1e5 is finite in float32 but beyond float16: only the range check sees it.
    plain = {"dump": {"dump_path": str(tmp_path / "a"), "dump_debug": "on"}}
    out, _ = scene("overflow", plain, extra=["--fp16-plant"])
    assert json.load(open(os.path.join(out["root"], "overflow_summary.json")))["root_cause"]["op_type"] == "exp"
    ranged = {"dump": {"dump_path": str(tmp_path / "b"), "dump_debug": "on"}, "opdump": {"check_fp16_range": True}}
    out, err = scene("overflow", ranged, extra=["--fp16-plant"])
    root = json.load(open(os.path.join(out["root"], "overflow_summary.json")))["root_cause"]
    assert root["op_type"] == "mul" and root["check"] == "nan_inf_and_fp16_range"
    assert root["tensors"][-1]["beyond_fp16"] > 0 and root["tensors"][-1]["nan_or_inf"] == 0
    assert "beyond float16" in err


def test_context_manager_of_seed_003(scene, tmp_path):
    out, err = scene("overflow", extra=["--context", str(tmp_path / "ctx")])
    assert out["root_cause"]["op_type"] == "exp"
    assert out["root"].startswith(str(tmp_path / "ctx"))
    assert [e["op_type"] for e in out["overflows"]][0] == "exp"


# 4 KB: copied before the op (by a memcpy); the same every other column, a strided view (copied by
# ATen); 1.6 MB: checked instead
@pytest.mark.parametrize("elements,strided", [(1000, False), (1000, True), (400_000, False)])
def test_overflow_in_place_keeps_what_the_op_read(tmp_path, elements, strided):
    code = ("import json, sys, torch, opdump\n"
            "n, strided = int(sys.argv[2]), sys.argv[3] == '1'\n"
            "x = torch.full((n * 2,) if strided else (n,), 200.0)\n"
            "x[1::2] = 0.5 if strided else 200.0\n"  # (a copy of the wrong bytes would show)
            "with opdump.dumper(check_overflow=True, dump_path=sys.argv[1]) as d:\n"
            "    y = x * 1.0\n"          # finite
            "    (y[::2] if strided else y).exp_()\n"  # in place: exp(200) overflows float32
            "print(json.dumps(d.root_cause))\n"
            "print(d.h5_path)\n")
    proc = subprocess.run([PYTHON, "-c", code, str(tmp_path / "o"), str(elements), "1" if strided else "0"],
                          capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert proc.returncode == 0, proc.stderr
    root = json.loads(proc.stdout.splitlines()[-2])
    h5_path = proc.stdout.splitlines()[-1]
    assert root["op_type"] == "exp_" and root["inputs_finite"] is True
    written = root["tensors"][0]
    assert (written["io"], written["nan_or_inf"]) == ("input", 0)  # as the op read it: finite
    assert root["tensors"][1]["nan_or_inf"] == elements  # the output
    import h5py
    with h5py.File(h5_path, "r") as f:  # the torch_npu dumper's .h5: exp_ is the second op
        written_input = f["exp_/2/input/self"]
        if elements == 1000:  # small: copied before the op, dumped as it was
            assert written["overwritten_in_place"] is False
            np.testing.assert_array_equal(written_input[()], np.full(elements, 200.0, np.float32))
        else:  # large: checked before the op, not copied; the file says why it holds nothing
            assert written["overwritten_in_place"] is True
            assert written_input.shape is None and "overwritten in place" in written_input.attrs["Placeholder"]


def test_overflow_scene_checks_models_registered_before_it(scene, tmp_path):
    # the registered-before-config rule is CANN's for acl model dumps only: a debug scene sees every model
    out, err = scene("overflow", extra=["--context", str(tmp_path / "ctx"), "--register"])
    assert out["root_cause"]["op_type"] == "exp"
    assert out["root_cause"]["op_name"] == "Default/net-PlantedOverflow/exp-op0"
    assert out["root_cause"]["inputs_finite"] is True
    assert out["root_cause"]["rank"] == 0


def test_offline_scan_of_a_full_dump_names_the_same_op(scene, run, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_list": [{"model_name": "net"}], "dump_mode": "all"}}
    out, _ = scene("overflow", cfg)
    result = tmp_path / "scan.json"
    proc = run("overflow", out["root"], "--json", result, check=0)
    assert "root cause: Default/net-PlantedOverflow/exp-op0 (exp) on rank 0" in proc.stdout
    scan = json.load(open(result))
    assert scan["root_cause"]["op_type"] == "exp"
    types = [e["op_type"] for e in scan["ops"]]
    assert types[0] == "exp" and "tanh" not in types


def test_offline_scan_of_statistics_only(scene, run, tmp_path):
    cfg = ms_config(tmp_path / "d", saved_data="statistic",
                    common={"statistic_category": ["max", "min", "avg", "count", "nan count",
                                                   "negative inf count", "positive inf count"]})
    out, _ = scene("overflow", cfg)
    proc = run("overflow", out["root"], check=0)
    assert "root cause: Default/net-PlantedOverflow/exp-op" in proc.stdout


def test_offline_scan_of_bad_input_is_a_clear_error(run, tmp_path):
    proc = run("overflow", tmp_path / "missing", check=1)
    assert "missing" in proc.stderr
    bad = tmp_path / "x.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'")
    proc = run("overflow", bad, check=1)
    assert "x.npy" in proc.stderr
    # a folder without any dump is an error, not "0 overflowing ops"
    (tmp_path / "empty").mkdir()
    proc = run("overflow", tmp_path / "empty", check=1)
    assert "no npy, bin, statistic.csv or Opdebug files" in proc.stderr


# ---- exception dump -----------------------------------------------------------------------------

@pytest.mark.parametrize("dump_scene", ["aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump",
                                        "lite_exception"])
def test_exception_dump_keeps_the_exception_and_dumps_the_inputs(scene, tmp_path, dump_scene):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_scene": dump_scene}}
    out, err = scene("exception", cfg)
    assert out["got"] == out["expected"] and out["got"][0] == "RuntimeError"
    folder = os.path.join(out["root"], "net", "0", "0")
    found = tensors(folder)
    mm = {k: v for k, v in found.items() if k[0] == "mm"}
    assert sorted((k[2], k[3]) for k in mm) == [("input", 0), ("input", 1)]  # no output: it failed
    shapes = sorted(np.load(p).shape for p in mm.values())
    assert shapes == [(4, 8), (5, 3)]
    # only the failing op is dumped, not the ops before it
    assert {k[0] for k in found} == {"mm"}
    extra = files(folder, "*.exception.json")
    if dump_scene in ("aic_err_brief_dump", "lite_exception"):
        assert extra == []
        return
    info = json.load(open(extra[0]))
    assert info["op_type"] == "mm" and [i["shape"] for i in info["inputs"]] == [[4, 8], [5, 3]]
    assert info["arguments"]["operator"] == "aten::mm"
    if dump_scene == "aic_err_detail_dump":
        assert "debug_workload.py" in info["python_stack"] and "in forward" in info["python_stack"]
        # the C++ stack at the failure: taken inside opdump's end callback, through the failing op's dispatch
        frames = info["cpp_stack"].splitlines()
        assert "libopdump_torch.so" in frames[0], frames[:3]
        assert any("at::RecordFunction::end" in f for f in frames[:4]), frames[:4]
        assert any("at::_ops::mm::call" in f for f in frames), frames
    else:
        assert "python_stack" not in info


def test_mindspore_exception_mode_dumps_inputs_only(scene, tmp_path):
    out, _ = scene("exception", ms_config(tmp_path / "d", common={"op_debug_mode": 4}))
    assert out["got"] == out["expected"]
    npys = files(out["root"], "*.npy")
    assert npys and all(".input." in p for p in npys)
    assert all(os.path.basename(p).startswith("mm.") for p in npys)


# ---- watcher ------------------------------------------------------------------------------------

def read_report(root):
    return list(csv.DictReader(open(os.path.join(root, "watcher_report.csv"))))


def test_watcher_names_the_culprit_and_the_victim(scene, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_scene": "watcher", "dump_mode": "output",
                    "dump_list": [{"layer": ["relu", "mul_"], "watcher_nodes": ["linear"]}]}}
    out, err = scene("watcher", cfg)
    rows = read_report(out["root"])
    by_layer = {r["Layer Op"].rsplit("/", 1)[-1].split("-op")[0]: r for r in rows}
    assert set(by_layer) == {"relu", "mul_"}
    assert by_layer["relu"]["Changed Elements"] == "0"
    culprit = by_layer["mul_"]
    assert culprit["Changed Elements"] == "5" and culprit["First Changed Index"] == "0"
    assert "fc-Linear/linear-op" in culprit["Watched Op"]
    assert "watcher: Default/net-PlantedOverwrite/mul_-op" in err
    # the watched output as produced, and as it was after each layer op
    base = os.path.join(out["root"], "net", "0", "0")
    produced = np.load(files(base, "linear.*.output.0.*.npy")[0])
    after = {os.path.basename(os.path.dirname(p)): np.load(p) for p in files(os.path.join(base, "watcher"), "*.npy")}
    assert len(after) == 2
    first, second = [after[k] for k in sorted(after, key=lambda k: int(k.split("_")[-1]))]
    np.testing.assert_array_equal(first, produced)
    np.testing.assert_array_equal(second.reshape(-1)[5:], produced.reshape(-1)[5:])
    np.testing.assert_allclose(second.reshape(-1)[:5], produced.reshape(-1)[:5] * 0.5)


def test_watcher_without_layer_checks_after_every_op(scene, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_scene": "watcher", "dump_mode": "output",
                    "dump_list": [{"watcher_nodes": ["linear"]}]}}
    out, _ = scene("watcher", cfg)
    rows = read_report(out["root"])
    assert len(rows) >= 4  # add, relu, mul_, sigmoid, sum...
    changed = [r for r in rows if r["Changed Elements"] != "0"]
    assert len(changed) == 1 and "/mul_-op" in changed[0]["Layer Op"]
    # only the change was dumped
    assert len(files(os.path.join(out["root"], "net", "0", "0", "watcher"), "*.npy")) == 1


# ---- sampling and single-operator dump ------------------------------------------------------------

def test_sample_mode_dumps_the_first_sample_num_elements(scene, tmp_path):
    cfg = ms_config(tmp_path / "d", saved_data="full", e2e={"sample_mode": 1, "sample_num": 100},
                    common={"statistic_category": ["max", "min", "count"]})
    out, _ = scene("sample", cfg)
    outputs = [p for p in files(out["root"], "linear.*.output.0.*.npy")]
    assert len(outputs) == 1
    sampled = np.load(outputs[0])
    assert sampled.shape == (100,)  # 256 elements: the first 100 in row-major order
    np.testing.assert_array_equal(sampled, np.array(out["output"][:100], dtype=np.float32))
    # statistics still describe the whole tensor
    rows = list(csv.DictReader(open(files(out["root"], "statistic.csv")[0])))
    row = [r for r in rows if r["Op Type"] == "linear" and r["IO"] == "output"][0]
    assert int(row["Count"]) == 4 * 64
    # tensors of at most sample_num elements are whole: the input (4, 8) and the bias (64,)
    assert np.load(files(out["root"], "linear.*.input.0.*.npy")[0]).shape == (4, 8)
    assert np.load(files(out["root"], "linear.*.input.2.*.npy")[0]).shape == (64,)
    assert np.load(files(out["root"], "linear.*.input.1.*.npy")[0]).shape == (100,)


def test_single_operator_layout_for_ops_outside_models(scene, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "d"), "dump_list": [], "dump_op_switch": "on", "dump_mode": "all"}}
    out, _ = scene("singleop", cfg)
    root = out["root"]
    top = tensors(root)  # the CANN offline-model dump guide: {dump_path}/{time}/{device_id}/{op files}
    assert {k[0] for k in top} >= {"matmul"} and "linear" not in {k[0] for k in top}
    in_model = tensors(os.path.join(root, "net", "0", "0"))
    assert {k[0] for k in in_model} == {"linear"}
