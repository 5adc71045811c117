"""resnet18 CPU training steps, side by side in one run (each mode in its own process, rounds
interleaved so that machine noise hits every mode alike):

  plain      no opdump
  off        opdump loaded, dump configured, the iteration not selected   (goal <= 1.02x)
  stats      statistics mode at api level                                  (goal <= 1.1x)
  overflow   overflow mode (op_debug_mode 3): every output checked, nothing overflows   (goal <= 1.3x)
  tensor     tensor mode at api level; MB/s against a raw sequential write of the same bytes

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_torch.py [--steps 10] [--rounds 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import json, sys, time, torch, torchvision
mode, steps, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=10)
opt = torch.optim.SGD(m.parameters(), lr=0.01)  # as in the msprobe measurement (peers.md)
x = torch.randn(4, 3, 64, 64); y = torch.randint(0, 10, (4,))
def step():
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
if mode != "plain":
    import opdump
    cfg = {"common_dump_settings": {"dump_mode": 0, "path": path, "net_name": "resnet",
           "iteration": "1000000000" if mode == "off" else "all",
           "saved_data": "tensor" if mode == "tensor" else "statistic", "input_output": 0, "kernels": [],
           "support_device": [0], "op_debug_mode": 3 if mode == "overflow" else 0},
           "e2e_dump_settings": {"enable": True}}
    json.dump(cfg, open(path + ".json", "w"))
    opdump.set_dump(path + ".json"); opdump.register_model(m, "resnet"); opdump.hook_optimizer(opt)
for _ in range(3): step()
times = []
for _ in range(steps):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
t0 = time.perf_counter()
report = opdump.finalize_dump() if mode != "plain" else {}
drain = time.perf_counter() - t0
print(json.dumps({"times": times, "report": report, "drain": drain}))
"""


def run_mode(mode, steps, workdir):
    path = os.path.join(workdir, mode)
    shutil.rmtree(path, ignore_errors=True)
    out = subprocess.run([sys.executable, "-c", WORKER, mode, str(steps), path], capture_output=True, text=True,
                         env=dict(os.environ), check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    shutil.rmtree(path, ignore_errors=True)
    return data


def raw_write_mbps(nbytes, workdir):
    import numpy as np
    buf = np.ones(nbytes // 4, dtype=np.float32)
    path = os.path.join(workdir, "raw.bin")
    t = time.perf_counter()
    with open(path, "wb") as f:
        buf.tofile(f)
    dt = time.perf_counter() - t
    os.remove(path)
    return nbytes / dt / 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--modes", default="plain,off,stats,overflow,tensor", help="comma-separated; plain is always run")
    args = p.parse_args()
    workdir = tempfile.mkdtemp(dir=args.dir, prefix="opdump-bench-")
    modes = ["plain"] + [m for m in args.modes.split(",") if m and m != "plain"]
    medians = {m: [] for m in modes}
    tensor_info = []
    # Tensor mode runs after the others: the gigabytes it writes are flushed to disk for a
    # while afterwards and would slow whatever ran next.
    for _ in range(args.rounds):
        for mode in modes:
            if mode != "tensor":
                d = run_mode(mode, args.steps, workdir)
                medians[mode].append(statistics.median(d["times"]))
    for _ in range(args.rounds if "tensor" in modes else 0):
        d = run_mode("tensor", args.steps, workdir)
        medians["tensor"].append(statistics.median(d["times"]))
        tensor_info.append(d)
        os.sync()
    shutil.rmtree(workdir, ignore_errors=True)
    base = statistics.median(medians["plain"])
    print(f"resnet18, batch 4x3x64x64, SGD, CPU; median step over {args.steps} steps x {args.rounds} rounds")
    for mode in modes:
        med = statistics.median(medians[mode])
        print(f"  {mode:7s} {med * 1e3:8.1f} ms/step   ratio {med / base:5.2f}x")
    if not tensor_info:
        return
    d = tensor_info[-1]
    written = d["report"]["bytes_written"]
    per_step = written / (args.steps + 3)
    total_time = sum(d["times"]) + d["drain"]
    print(f"  tensor mode wrote {written / 1e6:.0f} MB ({per_step / 1e6:.0f} MB/step); "
          f"{written / total_time / 1e6:.0f} MB/s including the final drain; raw sequential write of the same "
          f"bytes here: {raw_write_mbps(int(written), args.dir):.0f} MB/s")


if __name__ == "__main__":
    main()
