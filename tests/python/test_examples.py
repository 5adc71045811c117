"""The shipped examples and the demo run and dump what they say."""
import csv
import glob
import os
import subprocess

import numpy as np
import torch

from conftest import BUILD, PYTHON, ROOT
import dump_reader as dr


def test_torch_demo_dumps_and_its_statistics_match(run, tmp_path):
    proc = run("demo", "-o", tmp_path / "demo", check=0)
    assert "dumped" in proc.stdout and "folder:" in proc.stdout
    folder = tmp_path / "demo" / "rank_0" / "AlexNetSmall" / "0" / "0"
    files = dr.tensors(str(folder))
    rows = dr.statistics(str(folder))
    assert len(files) == len(rows) > 100
    conv_bwd = [k for k in files if k[0] == "convolution_backward"]
    assert conv_bwd and all("conv" in k[1] for k in conv_bwd)
    for row in rows[:50]:
        a = dr.load(files[(row["Op Type"], dr.sanitize(row["Op Name"]), row["IO"], int(row["Slot"]))])
        if a.size:
            assert np.float32(row["Max Value"]) == np.float32(a.max())


def test_cpp_inference_with_acl_json(tmp_path):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.head = torch.nn.Linear(4 * 14 * 14, 5)

        def forward(self, x):
            return self.head(torch.relu(self.conv(x)).flatten(1))

    torch.jit.script(Net()).save(str(tmp_path / "net.pt"))
    proc = subprocess.run([str(BUILD / "examples" / "infer_acl"), str(tmp_path / "net.pt"),
                           str(ROOT / "examples" / "acl_inference.json"), "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # {dump_path}/{time}/{device}/{model_name}/{model_id}/{data_index}/
    runs = glob.glob(str(tmp_path / "acl_dump" / "*" / "0" / "scripted_net" / "0" / "*"))
    assert sorted(os.path.basename(r) for r in runs) == ["0", "1"]
    names = {k[1] for k in dr.tensors(runs[0])}
    assert any("conv-Conv2d" in n for n in names), names  # TorchScript submodules name the ops
    assert all(k[2] == "output" for k in dr.tensors(runs[0]))


def test_python_training_with_mindspore_config(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.run([PYTHON, str(ROOT / "examples" / "train_mindspore.py"),
                           str(ROOT / "examples" / "mindspore_dump.json"), str(tmp_path / "ms")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    base = tmp_path / "ms" / "rank_0" / "LeNet" / "0"
    assert sorted(os.listdir(base)) == ["0", "2"]
    rows = list(csv.DictReader(open(base / "0" / "statistic.csv")))
    types = {r["Op Type"] for r in rows}
    assert "conv2d" in types and "convolution_backward" in types
    assert all("conv" in r["Op Type"] or "fc3-Linear" in r["Op Name"] for r in rows)
    assert all(len(r["XXH3"]) == 16 for r in rows)


def test_find_overflow_example_names_exp_online_and_offline(run, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.run([PYTHON, str(ROOT / "examples" / "find_overflow.py"), str(tmp_path / "o")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "root cause: Default/exp-op" in proc.stdout and "loss: nan" in proc.stdout
    h5 = glob.glob(str(tmp_path / "o" / "*.h5"))
    assert len(h5) == 1 and h5[0] in proc.stdout  # the torch_npu dumper's file
    offline = run("overflow", h5[0], check=0)
    assert "root cause: Default/exp-op0 (exp) on rank 0" in offline.stdout
