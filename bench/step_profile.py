"""Where a dumped training step's time goes, against the plain step, in one run: resnet18 (the workload of
bench_torch.py, msprobe_workload.py) on the CPU or a GPU, each mode in its own process under the steady allocator:

  the step          median over --steps synchronized steps, and its ratio to plain
  threads           CPU time per step of each thread, by name (the training thread, torch's autograd and
                    OpenMP threads, opdump-stats, opdump-writer)
  launches          kernel launches per step (on a GPU: host time per launch is what a step pays)
  ops               the ops whose self time (torch.profiler, two steps) grew most over plain, per step,
                    with their calls and microseconds per call: where the dump's per-op work lands

opdump's work at an op's start runs before the profiler opens that op's record, so it shows in the self time
of the op around it (an autograd node's, for the ATen op it calls); its work at an op's end shows in the op's
own. A GPU machine runs it from scripts/gpu_check.sh; here:

    PYTHONPATH=build/python /usr/bin/python3 bench/step_profile.py [--device cuda] [--modes stats,overflow] [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import msprobe_workload
import steady_allocator

MODES = {"stats": 0, "overflow": 3}  # the modes and their op_debug_mode


def thread_cpu_ms():
    """CPU milliseconds of each thread of this process so far, by (thread id, name)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) * 1000.0 / ticks  # utime + stime
    return out


def worker(mode, steps, device, path, threads):
    import threading
    import torch
    from torch.profiler import ProfilerActivity, profile
    if threads:
        torch.set_num_threads(threads)
    model, opt, step = msprobe_workload.build("resnet18", device)
    if mode != "plain":
        import opdump
        opdump.register_model(model, "resnet")
        opdump.hook_optimizer(opt)
        opdump.set_dump(msprobe_workload.dump_config(path, op_debug_mode=MODES[mode]))
    for _ in range(6):  # warm-up: the heap and the caches settle
        step()
    main = str(threading.get_native_id())
    before, times = thread_cpu_ms(), []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    threads = {}
    for key, ms in thread_cpu_ms().items():
        name = "training (main)" if key[0] == main else key[1]
        threads[name] = threads.get(name, 0.0) + (ms - before.get(key, 0.0)) / steps
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "cpu" else [])
    with profile(activities=activities) as prof:
        for _ in range(2):
            step()
    averages = prof.key_averages()
    ops = {e.key: [e.count / 2, e.self_cpu_time_total / 2] for e in averages}
    launches = sum(e.count for e in averages if e.key.startswith(("cudaLaunchKernel", "cuLaunchKernel"))) / 2
    if mode != "plain":
        opdump.finalize_dump()
    print(json.dumps({"step_ms": statistics.median(times) * 1e3, "threads": threads, "ops": ops,
                      "launches": launches}))


def run(mode, args, workdir):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", mode, "--steps", str(args.steps),
                          "--device", args.device, "--threads", str(args.threads), "--dir", os.path.join(workdir, mode)],
                         capture_output=True, text=True, env=steady_allocator.environment("steady"), timeout=900)
    if out.returncode != 0:
        sys.exit(f"step_profile: the {mode} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--modes", default="stats,overflow", help="comma-separated, of " + ", ".join(MODES))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--top", type=int, default=12, help="ops listed per mode")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.steps, args.device, args.dir, args.threads)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        sys.exit(f"step_profile: --modes: {', '.join(unknown)} not one of {', '.join(MODES)}")
    with tempfile.TemporaryDirectory() as workdir:
        plain = run("plain", args, workdir)
        results = {m: run(m, args, workdir) for m in modes}
    print(f"resnet18 4x3x64x64, SGD momentum 0.9, {args.device}, {args.threads or 'default'} torch threads, "
          f"median of {args.steps} steps, "
          f"{steady_allocator.LABELS['steady']}")
    for name, r in [("plain", plain)] + list(results.items()):
        ratio = r["step_ms"] / plain["step_ms"]
        launches = f", {r['launches']:.0f} kernel launches" if args.device != "cpu" else ""
        print(f"\n{name:9s} {r['step_ms']:7.1f} ms a step ({ratio:.2f}x plain){launches}")
        for thread, ms in sorted(r["threads"].items(), key=lambda kv: -kv[1]):
            if ms >= 0.05:
                print(f"  thread {thread:22s} {ms:7.2f} ms CPU a step")
        if r is plain:
            continue
        grown = sorted(r["ops"].items(), key=lambda kv: -(kv[1][1] - plain["ops"].get(kv[0], [0, 0])[1]))
        print(f"  {'op (self time, torch.profiler)':44s} {'calls':>6s} {'plain us':>9s} {'us/call':>8s} {'+ms a step':>10s}")
        for op, (calls, self_us) in grown[:args.top]:
            base_calls, base_us = plain["ops"].get(op, [0, 0])
            print(f"  {op[:44]:44s} {calls:6.0f} {base_us / base_calls if base_calls else 0:9.1f} "
                  f"{self_us / calls if calls else 0:8.1f} {(self_us - base_us) / 1e3:10.2f}")


if __name__ == "__main__":
    main()
