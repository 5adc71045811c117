"""msprobe dumps as input: compare, stats, overflow and convert on msprobe's layout and files, and
msprobe against opdump dumps of the same model (no name in common: paired by module, op type and
order). The msprobe-format dumps come from msprobe_workload.py (resnet18, written as msprobe's
data dump document describes); the planted change (layer2[0].conv2's weight x1.5) is the known
answer."""
import csv
import json
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BUILD, PYTHON

WORKLOAD = __import__("pathlib").Path(__file__).with_name("msprobe_workload.py")
OPDUMP_ANSWER = "Default/net-ResNet/layer2-Sequential/0-BasicBlock/conv2-Conv2d/conv2d-op0"
MSPROBE_ANSWER = "Functional.conv2d.6.forward"  # conv1, layer1 (4 convs), layer2[0].conv1, then this


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """Dumps by name, each made once: {tool}-{task}-{level}-{plant}[-npy]."""
    root = tmp_path_factory.mktemp("msprobe")
    made = {}

    def get(tool, task="statistics", level="mix", plant="none", tensor_format="pt"):
        name = f"{tool}-{task}-{level}-{plant}" + ("-npy" if tensor_format == "npy" else "")
        if name not in made:
            out = root / name
            subprocess.run([PYTHON, str(WORKLOAD), "--tool", tool, "--out", str(out), "--task", task, "--level", level,
                            "--plant", plant, "--tensor-format", tensor_format, "--opdump-path", str(BUILD / "python")],
                           check=True, capture_output=True, timeout=600)
            made[name] = out
        return made[name]

    return get


def compare(run, target, reference, out, *extra):
    proc = run("compare", target, reference, "-o", out, "-q", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "compare_summary.json").read_text()), proc


@pytest.mark.parametrize("level", ["mix", "L1"])
def test_opdump_against_msprobe_finds_the_planted_op(run, dumps, tmp_path, level):
    # mix: paired by module path, op type and call index (construct.json); L1: by execution order and type
    s, _ = compare(run, dumps("opdump", plant="layer2_conv"), dumps("msprobe", level=level), tmp_path / "a")
    assert s["first_divergence"]["op_name"] == OPDUMP_ANSWER, s["first_divergence"]
    s, _ = compare(run, dumps("msprobe", level=level, plant="layer2_conv"), dumps("opdump"), tmp_path / "b")
    assert s["first_divergence"]["op_name"] == MSPROBE_ANSWER, s["first_divergence"]
    rows = (tmp_path / "b" / "compare_result.csv").read_text()
    assert f"{MSPROBE_ANSWER},float32,{OPDUMP_ANSWER}" in rows  # the pair, named by both tools


@pytest.mark.parametrize("level", ["mix", "L1"])
def test_opdump_against_msprobe_without_change_is_clean(run, dumps, tmp_path, level):
    s, _ = compare(run, dumps("opdump"), dumps("msprobe", level=level), tmp_path / "c")
    assert s["first_divergence"] is None
    assert s["error"] == 0 and s["warning"] == 0
    # every forward API msprobe recorded found its aten op: conv2d 20, batch_norm 20 (5 tensors each), ...
    assert s["pass"] >= 249, s
    csv = (tmp_path / "c" / "compare_result.csv").read_text().splitlines()
    paired = [line for line in csv[1:] if ",Functional.batch_norm." in line and "Default/net-ResNet/" in line]
    assert len(paired) == 20 * 6  # input, weight, bias, running mean and var, output: in aten's order


def test_msprobe_against_msprobe_by_name(run, dumps, tmp_path):
    s, _ = compare(run, dumps("msprobe", plant="layer2_conv"), dumps("msprobe"), tmp_path / "d")
    assert s["first_divergence"]["op_name"] == MSPROBE_ANSWER
    assert s["aligned"] == 0  # same names: nothing needed aligning
    s, _ = compare(run, dumps("msprobe"), dumps("msprobe"), tmp_path / "e")
    assert s["first_divergence"] is None and s["error"] == 0 and s["pass"] == s["rows"]


@pytest.mark.parametrize("tensor_format", ["pt", "npy"])
def test_tensor_mode_compares_values(run, dumps, tmp_path, tensor_format):
    target = dumps("msprobe", task="tensor", plant="layer2_conv", tensor_format=tensor_format)
    s, _ = compare(run, target, dumps("opdump", task="tensor"), tmp_path / "f")
    assert s["first_divergence"]["op_name"] == MSPROBE_ANSWER
    # values, not statistics; only the module entries opdump has no counterpart for stay apart
    assert s["bytes_compared"] > 1_000_000 and s["not_compared"] == s["unmatched"] == 152
    rows = list(csv.DictReader(open(tmp_path / "f" / "compare_result.csv")))
    conv = next(r for r in rows if r["Target"] == MSPROBE_ANSWER and r["TensorIndex"] == "output.0")
    # the weight x1.5 scales the output: same direction (cosine 1), 50% larger
    assert float(conv["RelativeEuclideanDistance"]) == pytest.approx(0.5, rel=1e-3) and conv["Result"] != "pass", conv
    first_conv = next(r for r in rows if r["Target"] == "Functional.conv2d.0.forward" and r["TensorIndex"] == "output.0")
    assert float(first_conv["CosineSimilarity"]) > 0.999999 and first_conv["Result"] == "pass"


def test_stats_reads_recorded_and_computed_statistics(run, dumps, tmp_path):
    stats = dumps("msprobe")
    recorded = json.loads((stats / "step0" / "rank0" / "dump.json").read_text())["data"]
    conv = recorded["Functional.conv2d.0.forward"]["output"][0]
    out = run("stats", stats, check=0).stdout
    line = next(l for l in out.splitlines() if l.startswith("Functional.conv2d.0.forward output.0"))
    assert repr(conv["Max"]) in line.split(), (conv, line)

    tensors = dumps("msprobe", task="tensor")
    run("stats", tensors, "--csv", tmp_path / "stats.csv", check=0)
    import torch
    rows = {(r["Op Name"], r["IO"], r["Slot"]): r for r in csv.DictReader(open(tmp_path / "stats.csv"))}
    assert len(rows) == 401
    t = torch.load(str(tensors / "step0" / "rank0" / "dump_tensor_data" / "Functional.linear.0.forward.output.0.pt"))
    row = rows[("Functional.linear.0.forward", "output", "0")]
    assert np.float32(row["Max Value"]) == t.max().numpy() and np.float32(row["Min Value"]) == t.min().numpy()
    assert float(row["L2Norm Value"]) == pytest.approx(t.double().norm().item(), rel=1e-7)  # float32 data


def test_overflow_finds_the_first_infinite_api(run, dumps):
    out = run("overflow", dumps("msprobe", plant="inf_fc"), check=0).stdout
    assert "3 overflowing ops" in out, out
    assert "Functional.linear.0.forward (linear)" in out
    clean = run("overflow", dumps("msprobe"), check=0).stdout
    assert "0 overflowing ops" in clean


def test_convert_pt_to_npy_is_torch_load(run, tmp_path):
    code = """
import sys, torch
d = sys.argv[1]
torch.save(torch.arange(12.).reshape(3, 4), d + '/f32.pt')
torch.save(torch.arange(12.).reshape(3, 4).t(), d + '/transposed.pt')
torch.save(torch.arange(20.)[5:11].reshape(2, 3), d + '/slice.pt')
torch.save(torch.tensor([1.5, -2.25], dtype=torch.bfloat16), d + '/bf16.pt')
torch.save(torch.tensor([1.5, 65504], dtype=torch.float16), d + '/f16.pt')
torch.save(torch.tensor([[1, 2], [3, -4]]), d + '/i64.pt')
torch.save(torch.tensor([True, False]), d + '/bool.pt')
torch.save(torch.tensor(3.25), d + '/scalar.pt')
torch.save(torch.tensor([1 + 2j]), d + '/c64.pt')
torch.save(torch.nn.Parameter(torch.ones(2, 2)), d + '/param.pt')
torch.save({'a': torch.ones(1)}, d + '/dict.pt')
"""
    src = tmp_path / "pt"
    src.mkdir()
    subprocess.run([PYTHON, "-c", code, str(src)], check=True)
    proc = run("convert", src, "-o", tmp_path / "npy")
    assert proc.returncode == 1 and "10 tensor(s)" in proc.stdout and "1 failed" in proc.stdout
    assert "dict.pt: holds a dict, not one tensor" in proc.stderr, proc.stderr
    import torch
    for name in ("f32", "transposed", "slice", "bf16", "f16", "i64", "bool", "scalar", "c64", "param"):
        expected = torch.load(str(src / f"{name}.pt")).detach()
        if expected.dtype == torch.bfloat16:
            expected = expected.float()  # npy has no bfloat16: stored as float32, as MindSpore does
        got = np.load(tmp_path / "npy" / f"{name}.npy")
        assert got.dtype == expected.numpy().dtype and got.shape == tuple(expected.shape), name
        assert np.array_equal(got, expected.numpy()), name


def test_ranks_and_bad_files(run, dumps, tmp_path):
    dump = tmp_path / "ranks"
    shutil.copytree(dumps("msprobe"), dump)
    shutil.copytree(dump / "step0" / "rank0", dump / "step0" / "rank1")
    assert json.loads(run("compare", dump, dump, "--list-ranks", check=0).stdout) == [0, 1]
    s, _ = compare(run, dump, dump, tmp_path / "both")
    assert s["rows"] == 2 * 401 and s["pass"] == 2 * 401

    (dump / "step0" / "rank1" / "dump.json").write_text('{"task": "statistics", "data": {"Functional.relu.0.forward": ')
    proc = run("compare", dump, dump, "-o", tmp_path / "bad")
    assert proc.returncode == 1
    assert "step0/rank1/dump.json: not valid JSON" in proc.stderr

    (dump / "step0" / "rank1" / "dump.json").write_text('{"common_dump_settings": {"path": "/x"}}')
    proc = run("compare", dump, dump, "-o", tmp_path / "config")
    assert proc.returncode == 0
    assert "step0/rank1/dump.json: not an msprobe dump.json" in proc.stderr


def test_tensor_files_without_their_dump_json(run, dumps, tmp_path):
    # dump_tensor_data/ copied on its own: the names say the API, the side and the slot
    for side, plant in (("target", "layer2_conv"), ("reference", "none")):
        shutil.copytree(dumps("msprobe", task="tensor", plant=plant) / "step0" / "rank0" / "dump_tensor_data",
                        tmp_path / side)
    (tmp_path / "target" / "checkpoint.pt").write_bytes(b"not one of the dump's tensors")
    s, proc = compare(run, tmp_path / "target", tmp_path / "reference", tmp_path / "out")
    assert s["rows"] == 401 and s["unmatched"] == 0, proc.stdout
    assert "msprobe tensor files without their dump.json: no execution order" in proc.stderr
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare_result.csv")))
    conv = next(r for r in rows if r["Target"] == MSPROBE_ANSWER and r["TensorIndex"] == "output.0")
    assert conv["OpType"] == "conv2d" and conv["Result"] != "pass"
    weight = next(r for r in rows if r["Target"] == MSPROBE_ANSWER and r["TensorIndex"] == "input.1")
    assert weight["Result"] != "pass" and float(weight["RelativeEuclideanDistance"]) == pytest.approx(0.5, rel=1e-3)
    assert all(r["Result"] == "pass" for r in rows if r["Target"].startswith(("Functional.conv2d.0.", "Module.conv1.")))
    bn_weight = next(r for r in rows if r["Target"] == "Functional.batch_norm.0.forward" and r["TensorIndex"] == "input.1")
    assert bn_weight["Shape"] == "(64)"  # the keyword weight= in aten's slot 1
