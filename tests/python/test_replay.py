"""opdump replay on real training steps: every dumped op re-run from its dumped inputs and recorded
arguments, judged against float64 by its dtype's standard. Faulty kernels planted in the run are
found from that one run and nothing else is flagged; fp32, bf16-autocast and dropout runs are clean."""
import csv
import json
import os
import pathlib
import subprocess

import pytest

from conftest import BUILD, PYTHON, ms_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPLAY = BUILD / "opdump_replay"
pytestmark = pytest.mark.skipif(not REPLAY.exists(), reason="built without the PyTorch adapter")

# A small MLP training step; argv: dump config, then flags: --faulty (two CPU kernels overridden
# through torch.library to be wrong: sigmoid 0.2% too large, tanh computed in bfloat16),
# --bf16 (forward under bfloat16 autocast), --dropout.
TRAIN = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
flags = set(sys.argv[3:])
torch.manual_seed(0)
if "--faulty" in flags:
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("sigmoid", lambda x: torch.reciprocal(1 + torch.exp(-x)) * (1 + 2e-3), "CPU")
    lib.impl("tanh", lambda x: (1 - 2 / (torch.exp(2 * x.bfloat16()) + 1)).to(x.dtype), "CPU")
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2, self.fc3 = (torch.nn.Linear(32, 64), torch.nn.LayerNorm(64),
                                                  torch.nn.Linear(64, 64), torch.nn.Linear(64, 10))
        self.drop = torch.nn.Dropout(0.2) if "--dropout" in flags else torch.nn.Identity()
    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.fc1(x).float()))  # 1.13: CPU autocast leaves layer_norm mixed
        h = self.drop(torch.tanh(self.fc2(h)).float() * torch.sigmoid(h))
        return torch.softmax(self.fc3(h).float(), dim=-1)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
opdump.register_model(net, "net")
opdump.hook_optimizer(opt)
opdump.set_dump(sys.argv[1])
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
for _ in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled="--bf16" in flags):
        out = net(x)
    torch.nn.functional.nll_loss(torch.log(out.float()), y).backward()
    opt.step()
print(json.dumps(opdump.finalize_dump()))
"""


def dump_and_replay(tmp_path, *flags, save_args=True, saved_data="tensor"):
    cfg = ms_config(tmp_path / "d", iteration="1", saved_data=saved_data, e2e={"save_kernel_args": save_args})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    proc = subprocess.run([PYTHON, "-c", TRAIN, str(tmp_path / "c.json"), str(BUILD / "python"), *flags],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "replay"
    replay = subprocess.run([str(BUILD / "opdump"), "replay", str(tmp_path / "d"), "-o", str(out)],
                            capture_output=True, text=True, timeout=600)
    return replay, out


def results(out):
    rows = list(csv.DictReader(open(out / "replay_result.csv")))
    return rows, json.load(open(out / "replay_summary.json"))


def test_fp32_step_replays_clean(tmp_path):
    replay, out = dump_and_replay(tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["ops"]["replayed"] == summary["ops"]["total"] > 40, summary
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    assert summary["first_error"] is None and "no op fails on its own inputs" in replay.stdout
    assert {r["OpType"] for r in rows} >= {"linear", "layer_norm", "gelu", "tanh", "sigmoid", "softmax", "addmm",
                                           "native_layer_norm_backward", "gelu_backward"} - {"addmm"}
    judged = [r for r in rows if r["Result"] == "pass"]
    assert all(r["Standard"].startswith(r["DataType"] + ":") for r in judged), judged[:3]
    assert all(float(r["RelL2Error"]) <= 1.2207e-4 for r in judged if r["DataType"] == "Float")


def test_planted_faulty_kernels_found_and_nothing_else(tmp_path):
    replay, out = dump_and_replay(tmp_path, "--faulty")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    flagged = {(r["OpType"], r["OpName"]) for r in rows if r["Result"] in ("error", "warning")}
    assert flagged == {("tanh", "Default/net-Net/tanh-op0"), ("sigmoid", "Default/net-Net/sigmoid-op0")}, flagged
    assert all(r["Result"] == "error" for r in rows if (r["OpType"], r["OpName"]) in flagged)
    first = summary["first_error"]
    assert first["op_type"] == "tanh" and "rel_l2" in first["reason"], first  # tanh runs first in forward
    assert "first op that fails on its own inputs: tanh Default/net-Net/tanh-op0" in replay.stdout
    assert subprocess.run([str(BUILD / "opdump"), "replay", str(tmp_path / "d"), "-o", str(out), "-q",
                           "--fail-on", "error"], timeout=600).returncode == 3


def test_bf16_autocast_and_dropout_replay_clean(tmp_path):
    replay, out = dump_and_replay(tmp_path, "--bf16", "--dropout")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] in ("error", "warning")]
    skipped = [r for r in rows if r["Result"] == "skipped"]
    assert skipped and all("random number generator" in r["Reason"] for r in skipped), skipped
    assert {r["OpType"] for r in skipped} <= {"dropout", "native_dropout", "bernoulli_"}
    assert summary["ops"]["skipped"] <= 0.2 * summary["ops"]["total"], summary["ops"]
    # the ops autocast ran in bfloat16 are judged by the bfloat16 standard
    linear = [r for r in rows if r["OpType"] == "linear" and r["Result"] == "pass"]
    assert linear and all(r["DataType"] == "BFloat16" for r in linear), linear


def test_replay_says_what_is_missing(tmp_path):
    replay, out = dump_and_replay(tmp_path, save_args=False)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["ops"]["replayed"] == 0 and summary["ops"]["skipped"] == summary["ops"]["total"] > 0
    assert "save_kernel_args" in replay.stderr
    stats = tmp_path / "stats"
    stats.mkdir()
    replay, _ = dump_and_replay(stats, saved_data="statistic")
    assert replay.returncode == 1 and "holds no tensors" in replay.stderr, replay.stderr


def test_standards_file_matches_the_docs():
    standards = json.loads((ROOT / "data" / "replay_standards.json").read_text())
    doc = (ROOT / "docs" / "replay.md").read_text()
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        row = [line for line in doc.splitlines() if line.startswith(f"| {dtype} |")]
        assert len(row) == 1, dtype
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        assert float(cells[1]) == standards[dtype]["rel_l2"] and float(cells[2]) == standards[dtype]["max_norm"], row
    assert f"{standards['error_factor']} times" in doc
