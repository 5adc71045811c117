"""Replay benchmark: faulty kernels planted in one training run, found by `opdump replay` from that run
alone with no other op flagged; fault-free runs (float32, bfloat16 autocast, dropout) clean; and the
replay's speed against the training step's own time, measured in the same run.

    PYTHONPATH=build/python /usr/bin/python3 bench/replay_bench.py [--opdump build/opdump] [--only NAME ...]

Faults are CPU kernels overridden through torch.library inside the training process only (the replay
process runs PyTorch's own; TRAIN's fault argument takes several, comma-separated; tests/python/test_replay.py
trains with it too): a sigmoid 0.2% too large, and an in-place one; a float32 tanh computed in bfloat16; a conv2d
whose first output channel is 0.5% too large (also under bfloat16 autocast); a gelu under bfloat16 autocast, a
log_softmax and a matrix product (only a linear layer's backward calls it), each 0.3% too large. Models: an MLP
block (linear, layer_norm, gelu, tanh, sigmoid, softmax), a small CNN (conv2d, batch_norm, relu, max_pool2d,
linear) and a sequence model (embedding, gru, a transformer encoder layer built with dropout=0.0), each trained
two steps,
iteration 1 dumped (tensors, save_kernel_args, forward and backward); and msprobe's tensor dump of
resnet18's forward (its Python API calls; a linear kernel 0.2% too large); an LSTM, whose backward makes many ops of
one name. Prints one line per scenario
and "localized K/N, controls clean C/M"; exit 0 when all are right. The step and the replays run under the
steady allocator of the other benchmarks (steady_allocator.py): glibc's defaults fault a plain step's memory in
again every step and make it look slower than it is."""
import argparse
import csv
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import steady_allocator

HERE = pathlib.Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3"

TRAIN = r"""
import json, sys, time, torch
sys.path.insert(0, sys.argv[2])
import opdump
model, faults, flags = sys.argv[3], sys.argv[4].split(","), set(sys.argv[5:])
torch.manual_seed(0)
lib = torch.library.Library("aten", "IMPL")
if "sigmoid" in faults:
    lib.impl("sigmoid", lambda x: torch.reciprocal(1 + torch.exp(-x)) * (1 + 2e-3), "CPU")
if "sigmoid_inplace" in faults:  # what a gru's gates call
    lib.impl("sigmoid_", lambda x: x.copy_(torch.reciprocal(1 + torch.exp(-x)) * (1 + 2e-3)), "CPU")
if "tanh_bf16" in faults:
    lib.impl("tanh", lambda x: (1 - 2 / (torch.exp(2 * x.bfloat16()) + 1)).to(x.dtype), "CPU")
if "maximum_out" in faults:  # what Adam's amsgrad calls, out= its own buffer
    lib.impl("maximum.out", lambda a, b, *, out: out.copy_(torch.ops.aten.maximum.default(a, b) * 1.01), "CPU")
if "addcmul_inplace" in faults:  # what Adam's _foreach_addcmul_ calls per tensor on the CPU
    lib.impl("addcmul_", lambda x, t1, t2, value=1: x.add_(t1 * t2 * value * 1.01), "CPU")
if "gelu" in faults:  # written out (erf), 0.3% too large
    lib.impl("gelu", lambda x, approximate="none": (0.5 * x * (1 + torch.erf(x * 0.7071067811865476))).to(x.dtype) * 1.003,
             "CPU")
if "log_softmax" in faults:
    lib.impl("_log_softmax", lambda x, dim, half: (x - torch.logsumexp(x, dim, keepdim=True)) * 1.003, "CPU")
if "mm" in faults:  # a linear layer's gradients (its forward calls addmm): backward alone is faulty
    lib.impl("mm", lambda a, b: torch.bmm(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0) * 1.003, "CPU")
if "conv_channel" in faults:
    def conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
        y = torch.ops.aten.convolution(x, w, b, stride, padding, dilation, False, [0, 0], groups)
        scale = torch.ones(y.shape[1], 1, 1, dtype=y.dtype); scale[0] = 1.005
        return y * scale
    lib.impl("conv2d", conv2d, "CPU")
class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2, self.fc3 = (torch.nn.Linear(64, 128), torch.nn.LayerNorm(128),
                                                  torch.nn.Linear(128, 128), torch.nn.Linear(128, 10))
        self.drop = torch.nn.Dropout(0.1) if "--dropout" in flags else torch.nn.Identity()
    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.fc1(x).float()))
        h = self.drop(torch.tanh(self.fc2(h)).float() * torch.sigmoid(h))
        return torch.log_softmax(self.fc3(h).float(), dim=-1)
class Cnn(torch.nn.Module):
    # --channels24: conv2 gives 24 channels, not a multiple of oneDNN's channel block (8 or 16)
    def __init__(self):
        super().__init__()
        c = 24 if "--channels24" in flags else 32
        self.conv1, self.bn1 = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.conv2, self.bn2 = torch.nn.Conv2d(16, c, 3, padding=1), torch.nn.BatchNorm2d(c)
        self.drop = torch.nn.Dropout(0.1) if "--dropout" in flags else torch.nn.Identity()
        self.fc = torch.nn.Linear(c * 8 * 8, 10)
    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return torch.log_softmax(self.fc(self.drop(x.flatten(1))).float(), dim=-1)
class Seq(torch.nn.Module):
    # composites autocast reaches inside (gru's linear layers), a transformer layer built with dropout=0.0, and a
    # float32 residual plus a bfloat16 attention output
    def __init__(self):
        super().__init__()
        self.emb, self.rnn = torch.nn.Embedding(50, 32), torch.nn.GRU(32, 32, batch_first=True)
        self.layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.fc = torch.nn.Linear(32, 10)
    def forward(self, t):
        h, _ = self.rnn(self.emb(t))
        return torch.log_softmax(self.fc(self.layer(h).mean(1)).float(), dim=-1)
class Lstm(torch.nn.Module):
    # api ops whose backward makes several autograd nodes of one type, and so several ops of one name (the
    # MulBackward0s of an LSTM on PyTorch 1.13, and of an LSTM cell, composite on every version: a float32
    # gradient times a bfloat16 gate under autocast, or both bfloat16)
    def __init__(self):
        super().__init__()
        self.emb, self.rnn = torch.nn.Embedding(50, 32), torch.nn.LSTM(32, 32, batch_first=True)
        self.cell, self.fc = torch.nn.LSTMCell(32, 32), torch.nn.Linear(32, 10)
    def forward(self, t):
        h, _ = self.rnn(self.emb(t))
        state = (torch.zeros(t.shape[0], 32), torch.zeros(t.shape[0], 32))  # float32 under autocast too
        for step in h.unbind(1)[-3:]:
            state = self.cell(step, state)
        return torch.log_softmax(self.fc(h.mean(1) + state[0]).float(), dim=-1)
net = {"mlp": Mlp, "cnn": Cnn, "seq": Seq, "lstm": Lstm}[model]()
x = {"mlp": lambda: torch.randn(32, 64), "cnn": lambda: torch.randn(8, 3, 32, 32),
     "seq": lambda: torch.randint(0, 50, (8, 10)), "lstm": lambda: torch.randint(0, 50, (4, 12))}[model]()
y = torch.randint(0, 10, (x.shape[0],))
opt = (torch.optim.Adam(net.parameters(), lr=1e-3, amsgrad=True) if "--amsgrad" in flags
       else torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4, foreach=True) if "--foreach" in flags
       else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9))
opdump.register_model(net, "net"); opdump.hook_optimizer(opt)
opdump.set_dump(sys.argv[1])
for _ in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled="--bf16" in flags):
        out = net(x)
    torch.nn.functional.nll_loss(out.float(), y).backward()
    if "--clip" in flags:  # its total norm + 1e-6: a float32 tensor and a Python number
        torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()
opdump.finalize_dump()
"""

# The resnet18 step of the other benchmarks, timed without a dump and then dumped for the replay.
RESNET = r"""
import json, statistics, sys, time, torch, torchvision
sys.path.insert(0, sys.argv[2])
import opdump
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=1000)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(4, 3, 64, 64); y = torch.randint(0, 1000, (4,))
def step():
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
for _ in range(3): step()
times = []
for _ in range(10):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
opdump.register_model(m, "resnet"); opdump.hook_optimizer(opt)
opdump.set_dump(sys.argv[1])
step(); step()
opdump.finalize_dump()
print(json.dumps({"step": statistics.median(times)}))
"""

# name: (model, fault, flags, the ops that must be flagged; empty for a control)
SCENARIOS = {
    "mlp_sigmoid": ("mlp", "sigmoid", [], {"sigmoid"}),
    "mlp_tanh_bf16": ("mlp", "tanh_bf16", [], {"tanh"}),
    "cnn_conv_channel": ("cnn", "conv_channel", [], {"conv2d"}),
    "cnn_sigmoid_absent": ("cnn", "sigmoid", [], set()),  # a faulty kernel the model never calls
    # under bfloat16 autocast the convolution runs in bfloat16, whose norm bounds are wider than the fault
    "cnn_conv_channel_bf16": ("cnn", "conv_channel", ["--bf16"], {"conv2d"}),
    # a gelu 0.3% off under bfloat16 autocast (its input the linear layer's bfloat16 output), a log_softmax 0.3% off
    # after a gru and a transformer layer, and a matrix product 0.3% off that only a linear layer's backward calls
    "mlp_gelu_bf16": ("mlp", "gelu", ["--bf16"], {"gelu"}),
    "seq_log_softmax": ("seq", "log_softmax", [], {"log_softmax"}),
    "mlp_mm_backward": ("mlp", "mm", [], {"mm"}),
    "mlp_fp32": ("mlp", "none", [], set()),
    "mlp_bf16_autocast": ("mlp", "none", ["--bf16"], set()),
    "mlp_dropout": ("mlp", "none", ["--dropout"], set()),
    "mlp_clip_grad_norm": ("mlp", "none", ["--clip"], set()),
    # Adam's amsgrad keeps the largest second moment with maximum(..., out=) into its own buffer
    "mlp_amsgrad": ("mlp", "none", ["--amsgrad"], set()),
    "mlp_maximum_out": ("mlp", "maximum_out", ["--amsgrad"], {"maximum"}),
    # Adam over all parameters at once: _foreach_ ops that write their tensor lists and return nothing
    "mlp_adam_foreach": ("mlp", "none", ["--foreach"], set()),
    "mlp_addcmul_foreach": ("mlp", "addcmul_inplace", ["--foreach"], {"_foreach_addcmul_"}),
    "cnn_fp32": ("cnn", "none", [], set()),
    "cnn_dropout": ("cnn", "none", ["--dropout"], set()),
    "cnn_bf16_autocast": ("cnn", "none", ["--bf16"], set()),
    # a gru, whose gates call a faulty in-place sigmoid inside it
    "seq_sigmoid_inplace": ("seq", "sigmoid_inplace", [], {"gru"}),
    "seq_fp32": ("seq", "none", [], set()),
    "seq_bf16_autocast": ("seq", "none", ["--bf16"], set()),
    # an lstm and an lstm cell: each autograd node of a type one makes shares one name with the others; a
    # tanh computed in bfloat16 inside both
    "lstm_bf16_autocast": ("lstm", "none", ["--bf16"], set()),
    "lstm_tanh_bf16": ("lstm", "tanh_bf16", [], {"lstm", "lstm_cell"}),
    # msprobe's tensor dump of resnet18's forward (tests/python/msprobe_workload.py): Python API calls
    "msprobe_linear_kernel": ("msprobe", "linear_kernel", [], {"linear"}),
    "msprobe_fp32": ("msprobe", "none", [], set()),
    "msprobe_bf16_autocast": ("msprobe", "none", ["--bf16"], set()),
}
MSPROBE_WORKLOAD = HERE.parent / "tests" / "python" / "msprobe_workload.py"


def dump_scenario(work, model, fault, flags, python_path):
    """Runs the scenario's step with its fault and dumps it into work/d."""
    if model == "msprobe":
        subprocess.run([PYTHON, str(MSPROBE_WORKLOAD), "--tool", "msprobe", "--out", str(work / "d"), "--task", "tensor",
                        "--level", "mix", "--plant", fault, *flags], check=True, capture_output=True, timeout=1800)
        return
    (work / "c.json").write_text(json.dumps(config(work / "d")))
    subprocess.run([PYTHON, "-c", TRAIN, str(work / "c.json"), python_path, model, fault, *flags],
                   check=True, capture_output=True, timeout=1800)


def config(path):
    return {"common_dump_settings": {"dump_mode": 0, "path": str(path), "net_name": "net", "iteration": "1",
                                     "saved_data": "tensor", "input_output": 0, "kernels": [],
                                     "support_device": [0]},
            "e2e_dump_settings": {"enable": True, "save_kernel_args": True}}


def replay(opdump, dump, out):
    t = time.perf_counter()
    proc = subprocess.run([opdump, "replay", str(dump), "-o", str(out), "-q"], capture_output=True, text=True,
                          timeout=1800, env=steady_allocator.environment())
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    rows = list(csv.DictReader(open(out / "replay_result.csv")))
    return rows, json.load(open(out / "replay_summary.json")), seconds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--opdump", default=str(HERE.parent / "build" / "opdump"))
    p.add_argument("--python-path", default=str(HERE.parent / "build" / "python"))
    p.add_argument("--only", nargs="*")
    p.add_argument("--no-resnet", action="store_true", help="skip the speed measurement on resnet18")
    args = p.parse_args()
    found = faults = clean = controls = 0
    with tempfile.TemporaryDirectory(prefix="opdump-replay-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        for name, (model, fault, flags, expected) in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            work = tmp / name
            work.mkdir()
            dump_scenario(work, model, fault, flags, args.python_path)
            rows, summary, seconds = replay(args.opdump, work / "d", work / "out")
            flagged = sorted({r["OpType"] for r in rows if r["Result"] in ("error", "warning")})
            ok = set(flagged) == expected
            skipped = summary["ops"]["skipped"] / max(summary["ops"]["total"], 1)
            if expected:
                faults += 1
                found += ok
            else:
                controls += 1
                clean += ok
            print(f"  {name:22s} {'right' if ok else 'WRONG'}: flagged {flagged or 'nothing'} (expected "
                  f"{sorted(expected) or 'nothing'}); {summary['ops']['replayed']}/{summary['ops']['total']} ops "
                  f"replayed ({skipped:.0%} skipped) in {seconds:.1f} s")
        if not args.no_resnet and not args.only:
            work = tmp / "resnet18"
            work.mkdir()
            (work / "c.json").write_text(json.dumps(config(work / "d")))
            proc = subprocess.run([PYTHON, "-c", RESNET, str(work / "c.json"), args.python_path], check=True,
                                  capture_output=True, text=True, timeout=1800, env=steady_allocator.environment())
            step = json.loads(proc.stdout.strip().splitlines()[-1])["step"]
            rows, summary, seconds = replay(args.opdump, work / "d", work / "out")
            ops = summary["ops"]["replayed"]
            print(f"  resnet18 step (4x3x64x64, SGD momentum 0.9, api level; {steady_allocator.LABELS['steady']}): "
                  f"{summary['ops']['total']} ops, "
                  f"{ops} replayed in {seconds:.1f} s ({ops / seconds:.0f} ops/s, file reading included); the step "
                  f"itself {step * 1e3:.0f} ms: replay = {seconds / step:.0f} steps; "
                  f"{summary['rows']['error'] + summary['rows']['warning']} outputs flagged")
    print(f"localized {found}/{faults}, controls clean {clean}/{controls}")
    return 0 if found == faults and clean == controls else 1


if __name__ == "__main__":
    sys.exit(main())
