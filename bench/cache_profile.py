"""A dumped training step counted instead of timed: instructions, instruction-cache misses and data-cache misses per
step, by library, for each mode against the plain step, from valgrind's cache simulator (callgrind --cache-sim=yes).
The workload is bench_torch.py's (msprobe_workload.py: resnet18 4x3x64x64, SGD momentum 0.9, every iteration
dumped, under the steady allocator); the counts are the same from one run to the next, so a change to the op path
shows here when this VM's +-3% step-time noise hides it from bench_torch.py.

  plain      no opdump
  records    no opdump: PyTorch's op records alone (bench/record_floor.cc, as bench_torch.py's `records`), the floor
             under any op-level observer
  listed     every op named and listed in the execution order, none of its tensors captured
  stats      statistics mode at api level (what bench_torch.py's `stats` mode dumps)
  overflow   overflow mode (op_debug_mode 3)

Each mode runs in its own process under valgrind, warms up for --warmup steps and counts --steps steps between
two marks (bench/callgrind_marks.c, built beside bench_core when valgrind's headers are installed). Valgrind runs
a program about 50x slower: resnet18 takes 7-8 minutes a mode for one counted step on this VM.

The simulated caches are valgrind's model of this CPU's first level (32 KB instruction and data caches, 8-way),
not the CPU itself: read the misses as how many cache lines of code and data a step touches that its previous
use did not leave in cache. Between two op records a kernel streams megabytes through the caches, so the op path
starts each callback with its code out of the first level: its instruction misses are what it costs, more than
its instructions.

    PYTHONPATH=build/python /usr/bin/python3 bench/cache_profile.py [--modes plain,stats] [--steps 1] [--model tiny]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import bench_libraries
import msprobe_workload
import steady_allocator

WORKER = r"""
import ctypes, json, sys, torch
sys.path.insert(0, sys.argv[6])  # this bench's folder
import msprobe_workload
mode, model, warmup, steps, path, marks_library, threads, floor_library = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[7], int(sys.argv[8]), sys.argv[9])
torch.set_num_threads(threads)
marks = ctypes.CDLL(marks_library)
m, opt, step = msprobe_workload.build(model, "cpu")
if mode == "records":
    ctypes.CDLL(floor_library).opdump_record_floor_on()
elif mode != "plain":
    import opdump
    cfg = msprobe_workload.dump_config(path, "all", "statistic", 3 if mode == "overflow" else 0)
    if mode == "listed":  # a kernels list no op matches (opdump warns about it at the end, on stderr)
        cfg["common_dump_settings"].update(dump_mode=1, kernels=["NoOpIsCalledThis"])
    json.dump(cfg, open(path + ".json", "w"))
    opdump.register_model(m, "net"); opdump.hook_optimizer(opt)
    opdump.set_dump(path + ".json")
for _ in range(warmup):
    step()
marks.opdump_callgrind_start()
for _ in range(steps):
    step()
marks.opdump_callgrind_stop()
if mode not in ("plain", "records"):
    opdump.finalize_dump()
"""

MODES = ("plain", "records", "listed", "stats", "overflow")
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw")

# Where a function's cost is counted, by the library it is in (first match wins).
GROUPS = (
    ("opdump kernels", lambda obj, fn: "libopdump" in obj and re.search(r"::[km]_(avx2|baseline)::", fn)),
    ("opdump adapter", lambda obj, fn: "libopdump_torch" in obj),
    # (the bench's own libraries, the marks and the records' floor, are not opdump's: counted as "other")
    ("opdump core", lambda obj, fn: ("libopdump" in obj and not re.search(r"callgrind_marks|record_floor", obj))
     or "_opdump" in obj),
    ("torch", lambda obj, fn: re.search(r"libtorch|libc10", obj)),
    ("oneDNN, OpenMP, BLAS", lambda obj, fn: re.search(r"libdnnl|libgomp|blas|lapack|libsleef", obj)),
    ("python", lambda obj, fn: re.search(r"python3|libpython", obj)),
    ("libc", lambda obj, fn: "libc.so" in obj or (not obj and fn.startswith("./"))),  # glibc's own sources
    ("libstdc++", lambda obj, fn: "libstdc++" in obj),
    ("thread-locals (ld.so)", lambda obj, fn: "ld-linux" in obj),  # __tls_get_addr: torch's and opdump's
    ("generated code, other", lambda obj, fn: True),  # oneDNN's JIT kernels have no library
)


def marks_library(pythonpath):
    """bench/callgrind_marks.c as built beside the opdump package the workers import."""
    return bench_libraries.built(pythonpath, "libopdump_callgrind_marks.so")


def no_counts():
    """{group: [0, 0, 0, 0]}: every group, nothing counted yet."""
    return {name: [0] * len(EVENTS) for name, _ in GROUPS}


def add(into, group, counts):
    into[group] = [a + b for a, b in zip(into[group], counts)]


def all_groups(per_group):
    """The counts of every group together."""
    return [sum(c[i] for c in per_group.values()) for i in range(len(EVENTS))]


def parse_annotate(text):
    """{group: [Ir, I1mr, D1mr, D1mw]} from callgrind_annotate's per-function table (exclusive costs)."""
    totals = no_counts()
    row = re.compile(r"^\s*((?:[\d,]+|\.)(?:\s+\([^)]*\))?\s+){%d}(\S.*)$" % len(EVENTS))
    for line in text.splitlines():
        match = row.match(line)
        if not match or "PROGRAM TOTALS" in line:
            continue
        cells = re.sub(r"\([^)]*\)", " ", line[:match.start(2)]).split()
        if len(cells) != len(EVENTS):
            continue
        counts = [0 if c == "." else int(c.replace(",", "")) for c in cells]
        name = match.group(2)
        obj = name[name.rindex("[") + 1:-1] if name.endswith("]") and "[" in name else ""
        fn = name[:name.rindex("[")].strip() if obj else name.strip()
        add(totals, next(g for g, belongs in GROUPS if belongs(obj, fn)), counts)
    return totals


def run_mode(mode, args, workdir, pythonpath):
    out = os.path.join(workdir, f"callgrind.{mode}")
    env = steady_allocator.environment()
    env["PYTHONPATH"] = pythonpath
    cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--separate-threads=yes", "--instr-atstart=no",
           f"--callgrind-out-file={out}.%p",
           sys.executable, "-c", WORKER, mode, args.model, str(args.warmup), str(args.steps),
           os.path.join(workdir, mode), os.path.dirname(os.path.abspath(__file__)), marks_library(pythonpath),
           str(args.threads), bench_libraries.record_floor(pythonpath)]
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        if unknown := unrecognised_instruction(done.stderr):
            sys.exit(f"cache_profile: valgrind cannot run mode {mode} on this CPU: it met an instruction it does not "
                     f"decode ({unknown}) and stopped the process. Valgrind decodes some instructions (rdtscp) only "
                     "where the CPU reports them, and a virtual machine may hide them (see the flags in /proc/cpuinfo); "
                     "torch loads such a library (libhwy, through its image codecs) before any step runs. Count on "
                     "another machine, or sample the step here with perf (bench/step_profile.py, perf record).")
        sys.exit(f"cache_profile: mode {mode} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    # The training thread's counts are the marks' dump (thread 1: the one that runs the steps); every other thread's
    # (opdump's writer and statistics threads, torch's) are dumped at exit, with nothing counted after the stop mark.
    training = [f for f in glob.glob(out + ".*") if f.endswith(".1-01")]
    if len(training) != 1:
        sys.exit(f"cache_profile: mode {mode}: expected one callgrind dump from the marks, found {training}")
    others = [f for f in glob.glob(out + ".*-*") if not f.endswith("-01")]  # thread 1's exit dump is empty too
    per_thread = {"training": counts_of(training), "others": counts_of(others)}
    if not sum(c[0] for c in per_thread["training"].values()):
        sys.exit(f"cache_profile: mode {mode}: callgrind counted no instructions between the marks")
    return {which: {g: [c / args.steps for c in counts] for g, counts in totals.items()}
            for which, totals in per_thread.items()}


def unrecognised_instruction(stderr):
    """Where valgrind stopped at an instruction it does not decode ("FUNCTION (in LIBRARY)"), from its log; None when
    the log does not say so."""
    if "did not recognise" not in stderr and "unhandled instruction" not in stderr:
        return None
    where = re.search(r"Illegal opcode at address 0x[0-9A-Fa-f]+\s*\n==\d+==\s+at 0x[0-9A-Fa-f]+: (.*)", stderr)
    return where.group(1).strip() if where else "its log names no function"


def counts_of(files):
    """parse_annotate over callgrind dumps, summed."""
    totals = no_counts()
    for f in files:
        annotate = subprocess.run(["callgrind_annotate", "--threshold=100", "--show=" + ",".join(EVENTS), f],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        for group, counts in parse_annotate(annotate.stdout).items():
            add(totals, group, counts)
    return totals


def print_table(title, per_group, plain=None):
    print(f"\n{title}")
    print(f"  {'':22} {'instructions':>14} {'I-cache misses':>16} {'D-cache read misses':>21} "
          f"{'D-cache write misses':>22}")
    rows = list(per_group.items()) + [("all", all_groups(per_group))]
    for group, counts in rows:
        if plain is not None:
            base = plain[group] if group != "all" else all_groups(plain)
            counts = [a - b for a, b in zip(counts, base)]
        if not any(round(c) for c in counts) and group != "all":
            continue
        ir, i1, d1r, d1w = counts
        print(f"  {group:22} {ir / 1e6:13.2f}M {i1 / 1e3:15.1f}K {d1r / 1e3:20.1f}K {d1w / 1e3:21.1f}K")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", default="plain,stats", help="comma-separated, from: " + ",".join(MODES))
    p.add_argument("--steps", type=int, default=1, help="steps counted per mode")
    p.add_argument("--warmup", type=int, default=3, help="steps run before the counted ones")
    p.add_argument("--model", choices=msprobe_workload.MODELS, default="resnet18")
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads (valgrind runs one thread at a time; torch's other threads are "
                        "counted among every other thread)")
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--keep", action="store_true",
                   help="keep callgrind's dumps (the training thread's is callgrind.MODE.PID-01 under the folder "
                        "printed) for callgrind_annotate or kcachegrind, function by function")
    args = p.parse_args()
    modes = args.modes.split(",")
    if unknown := [m for m in modes if m not in MODES]:
        sys.exit(f"cache_profile: unknown mode(s) {','.join(unknown)}: choose from {','.join(MODES)}")
    if args.steps < 1 or args.warmup < 0:
        sys.exit("cache_profile: --steps must be at least 1 and --warmup at least 0")
    for tool in ("valgrind", "callgrind_annotate"):
        if not shutil.which(tool):
            sys.exit(f"cache_profile: {tool} not found: install Debian's valgrind package (scripts/install-deps.sh)")
    pythonpath = os.environ.get("PYTHONPATH", "")
    if not marks_library(pythonpath):
        sys.exit("cache_profile: needs bench/callgrind_marks.c built (libopdump_callgrind_marks.so in the bench folder "
                 "beside the opdump package on PYTHONPATH; cmake builds it when valgrind's headers are installed)")
    if "records" in modes and not bench_libraries.record_floor(pythonpath):
        sys.exit("cache_profile: --modes records needs bench/record_floor.cc built (libopdump_record_floor.so in the "
                 "bench folder beside the opdump package on PYTHONPATH)")
    workdir = tempfile.mkdtemp(prefix="opdump_cache_profile_", dir=args.dir)
    try:
        print(f"{args.model}, {args.steps} counted step(s) after {args.warmup}, torch threads {args.threads}, "
              f"{steady_allocator.LABELS['steady']}; per step:")
        results = {}
        for mode in modes:
            results[mode] = run_mode(mode, args, workdir, pythonpath)
            print_table(f"{mode}: the training thread", results[mode]["training"])
            print_table(f"{mode}: every other thread", results[mode]["others"])
        if "plain" in results:
            for mode in modes:
                if mode != "plain":
                    for which in ("training", "others"):
                        print_table(f"{mode} over plain: {'the training thread' if which == 'training' else 'every other thread'}",
                                    results[mode][which], results["plain"][which])
    finally:
        if args.keep:
            print(f"\ncallgrind's dumps kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
