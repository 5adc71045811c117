"""The torch_npu 1.5 dumper's .h5 dump against opdump's npy dump of the same training step, side by side
in one run: resnet18 on the msprobe workload (4x3x64x64, 1000 classes, SGD with momentum 0.9), one
step dumped (every op's inputs and outputs, api level), each round in fresh processes in rotated
order. Prints per mode the dumped step's time, the bytes written, MB/s (bytes over the dumped step,
finalize included), the writer's peak memory in flight and the process's peak RSS; and the ratio h5/npy. Both run
under the steady allocator of the other benchmarks (steady_allocator.py).

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_h5.py [--rounds 3] [--dir /var/tmp]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import steady_allocator

WORKER = r"""
import json, resource, sys, time, torch, torchvision, opdump
mode, path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(1)
model = torchvision.models.resnet18(num_classes=1000)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 1000, (4,))
def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()
for _ in range(3):
    step()
t0 = time.perf_counter(); step(); plain = time.perf_counter() - t0
t0 = time.perf_counter()
if mode == "h5":
    with opdump.dumper(use_dump=True, dump_path=path) as d:
        step()
    report = d.report
else:
    opdump.set_dump({"dump": {"dump_path": path, "dump_list": [], "dump_op_switch": "on", "dump_mode": "all"}})
    step()
    report = opdump.finalize_dump()
dumped = time.perf_counter() - t0
print(json.dumps({"plain": plain, "dumped": dumped, "bytes": report["bytes_written"], "ok": report["ok"],
                  "peak_inflight": report["peak_inflight_bytes"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", default=tempfile.gettempdir(), help="where the dumps are written (the same disk for both)")
    args = p.parse_args()
    modes = ["npy", "h5"]
    results = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes[r % 2:] + modes[:r % 2]:
            work = tempfile.mkdtemp(prefix="opdump_bench_h5_", dir=args.dir)
            target = os.path.join(work, "run.h5" if mode == "h5" else "npy")
            try:
                out = subprocess.run([sys.executable, "-c", WORKER, mode, target], capture_output=True, text=True,
                                     check=True, timeout=900, env=steady_allocator.environment()).stdout
                results[mode].append(json.loads(out.splitlines()[-1]))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    print(f"resnet18 4x3x64x64 training step, one step dumped (inputs and outputs, api level); {args.rounds} rounds, "
          f"medians; dumps in {args.dir}; {steady_allocator.LABELS['steady']}")
    rates = {}
    for mode in modes:
        rs = results[mode]
        assert all(x["ok"] for x in rs), rs
        dumped = statistics.median(x["dumped"] for x in rs)
        plain = statistics.median(x["plain"] for x in rs)
        mb = statistics.median(x["bytes"] for x in rs) / 1e6
        rates[mode] = mb / dumped
        print(f"  {mode:4s} plain step {plain * 1e3:6.1f} ms, dumped step {dumped * 1e3:7.1f} ms, {mb:7.1f} MB written, "
              f"{rates[mode]:6.0f} MB/s, peak in flight {statistics.median(x['peak_inflight'] for x in rs) / 1e6:6.1f} MB, "
              f"peak RSS {statistics.median(x['rss_mb'] for x in rs):6.0f} MB")
    print(f"h5 / npy write rate: {rates['h5'] / rates['npy']:.2f}x (goal >= 1.0x)")


if __name__ == "__main__":
    main()
