"""resnet18 CPU training steps on the workload of the msprobe figure (4x3x64x64, 1000 classes, SGD
with momentum 0.9, every iteration dumped), side by side in one run (each mode in its own process,
rounds interleaved so that machine noise hits every mode alike); wall time and the CPU time of the
whole process (every thread) per step:

  plain      no opdump
  off        opdump loaded, dump configured, the iteration not selected   (goal <= 1.02x)
  records    no opdump: PyTorch's op records alone, a RecordFunction callback that asks for every op's inputs
             and outputs as opdump's does and returns at once (bench/record_floor.cc; the floor under any
             op-level observer on PyTorch, which `listed` and the modes below sit on)
  listed     the iteration dumped with no op selected: every op named and listed in the execution order, none
             of its tensors captured (what statistics and overflow mode pay before they read a tensor)
  stats      statistics mode at api level, the model's ops included       (goal <= 1.15x wall, <= 1.5x CPU)
  overflow   overflow mode (op_debug_mode 3): every output checked, nothing overflows   (goal <= 1.1x)
  tensor     tensor mode at api level; MB/s against the disk: the same files written by plain write() calls
             (4 threads past the page cache as opdump writes them, and 2 threads through it; the faster of
             the two in each round), and beside it one sequential file of the same bytes
  MODE@WHERE a mode with opdump.host_work forced (stats@background, overflow@inline): where host
             statistics and overflow checks run, side by side with the default (auto)

Each process warms up for 4 steps, and under the steady allocator until two steps in a row take no more than 64
page faults each (at most 24 steps; not in tensor mode, whose warm-up writes): the heap grows to its high-water
mark over the first steps, more slowly with a dump holding tensors (resnet50 in overflow mode: about 10 steps;
resnet18's statistics on PyTorch 2.6 with one thread: about 20, with a quiet step among them).

Separate processes differ by up to +-20% in step time on this VM whatever they run, so each
mode is also measured inside one process, where that noise cancels:
  blocks     blocks of 4 undumped steps and 4 steps dumped from set_dump to finalize_dump,
             alternating; ratio = median over block pairs of (dumped / undumped), each block's
             median over its last 3 steps: a dump's first step pays what dumping every iteration
             pays once (its folders, and the weights the undumped steps changed summarized again;
             about 7 ms more than the steps after it on resnet18 with both cores, December 6)
  alt        every other iteration of one dump selected (the statistics of a dumped step are
             finished while the next, undumped one runs)

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_torch.py [--steps 10] [--rounds 3] [--model resnet50|tiny]

--model resnet50 (batch 16: about 10x the step) shows whether the overhead grows with the model; --model tiny
(100 Linear(16, 16)+ReLU layers) the fixed cost per op, printed in microseconds for every model.
--device cuda trains on the GPU (scripts/gpu_check.sh runs it on a GPU machine).

--baseline OTHER/python measures a second build of opdump (an earlier commit, say) in the same
rounds, each of its modes right after this build's: the last lines give this build's step time
over the baseline's, mode by mode, and each one-process ratio is followed by the baseline's
(before/after figures from one run).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench_libraries
import msprobe_workload
import steady_allocator

WORKER = r"""
import json, statistics, sys, time, torch
sys.path.insert(0, sys.argv[7])  # this bench's folder (PYTHONPATH may be another build's, --baseline)
import msprobe_workload
mode, steps, path, threads, model, device = (sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5],
                                             sys.argv[6])
if threads:
    torch.set_num_threads(threads)
m, opt, step = msprobe_workload.build(model, device)
base, _, how = mode.partition("-")
base, _, host_work = base.partition("@")  # stats@background: opdump.host_work forced
alternate = how == "alt"      # even iterations dumped, odd ones not: both in this process
in_blocks = how == "blocks"   # undumped and dumped blocks of steps alternate in this process
start_dump = end_dump = lambda: {}
if base == "records":  # PyTorch's records alone (bench/record_floor.cc), switched like a dump
    import ctypes
    floor = ctypes.CDLL(sys.argv[8])
    def end_dump():
        floor.opdump_record_floor_off()
        return {}
    start_dump = floor.opdump_record_floor_on
elif mode != "plain":
    import opdump
    iterations = "|".join(str(i) for i in range(0, 2 * steps + 24, 2)) if alternate else "all"  # warm-up <= 24
    cfg = msprobe_workload.dump_config(path, "1000000000" if base == "off" else iterations,
                                       "tensor" if base == "tensor" else "statistic", 3 if base == "overflow" else 0,
                                       host_work)
    if base == "listed":  # a kernels list no op matches (opdump warns about it at the end, on stderr)
        cfg["common_dump_settings"].update(dump_mode=1, kernels=["NoOpIsCalledThis"])
    json.dump(cfg, open(path + ".json", "w"))
    opdump.register_model(m, "resnet"); opdump.hook_optimizer(opt)
    start_dump, end_dump = lambda: opdump.set_dump(path + ".json"), opdump.finalize_dump
if not in_blocks:
    start_dump()
dump_start = time.perf_counter()  # the warm-up steps are dumped too: their bytes count, so does their time
import os, resource
# Under a steady allocator the heap still grows to its high-water mark over the first steps (resnet50 in
# overflow mode: about 10 steps, 1,900 faults a step meanwhile); the timed steps start once a step faults no
# more. glibc's dynamic thresholds re-fault every step, and a tensor dump's warm-up writes its bytes: 4 steps.
steady = "MALLOC_TRIM_THRESHOLD_" in os.environ and base != "tensor"
warmup = quiet = 0
while True:
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    warmup += 1
    quiet = quiet + 1 if resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0 <= 64 else 0
    if warmup >= 4 and (not steady or quiet >= 2 or warmup >= 24):
        break
cpu = []  # CPU time of the whole process (every thread: statistics, writers) per timed step
faults, system = [], []  # minor page faults and system CPU time per timed step (the allocator's cost shows here)
def timed(n):
    out = []
    for _ in range(n):
        u0 = resource.getrusage(resource.RUSAGE_SELF)
        t, c = time.perf_counter(), time.process_time(); step()
        out.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
        u1 = resource.getrusage(resource.RUSAGE_SELF)
        faults.append(u1.ru_minflt - u0.ru_minflt); system.append(u1.ru_stime - u0.ru_stime)
    return out
times, off_times, report = [], [], {}
if in_blocks:
    for _ in range(steps):
        off_times.append(statistics.median(timed(4)[1:]))  # (the same steps of both: the first is timed, not used)
        start_dump()
        times.append(statistics.median(timed(4)[1:]))
        end_dump()
else:
    for i in range(2 * steps if alternate else steps):
        (off_times if alternate and (warmup + i) % 2 else times).extend(timed(1))  # even iterations dumped
    report = end_dump() or {}
print(json.dumps({"times": times, "dump_wall": time.perf_counter() - dump_start, "off_times": off_times,
                  "report": report, "cpu": cpu, "faults": faults, "system": system,
                  "threads": torch.get_num_threads(), "warmup": warmup,
                  # this process's own peak (ru_maxrss would also count the bench's RSS when it forked)
                  "maxrss_mb": int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) / 1024}))
"""


THREADS = 0  # torch.set_num_threads in the workers (0: torch's default)
MODEL = "resnet18"  # the model the workers train
DEVICE = "cpu"  # where they train
# Every figure under the steady allocator by default (steady_allocator.py says why); --allocator glibc|both.
ALLOCATOR = "steady"
LAST_REMOVAL = 0.0  # when remove_tree last deleted files


def remove_tree(path):
    global LAST_REMOVAL
    shutil.rmtree(path, ignore_errors=True)
    LAST_REMOVAL = time.monotonic()


def settle():
    """Before a timed writer: no dirty pages left by the one before, and no inodes deleted in the last 30 s
    (ext4 without a journal, as here, skips those when it creates a file: the first seconds after deleting
    a dump's 20,000 files, every file created costs a scan of them)."""
    os.sync()
    time.sleep(max(0.0, LAST_REMOVAL + 61 - time.monotonic()))


def median_interval(values):
    """The median of `values` and a 95% interval for it, from order statistics (no assumption about their
    distribution; the values taken as independent): ranks n/2 -+ 0.98 sqrt(n), as the binomial(n, 1/2) count of
    values below the true median puts them. None for fewer than 6 values (the interval would be the whole range)."""
    xs = sorted(values)
    n = len(xs)
    if n < 6:
        return None
    half = 0.98 * math.sqrt(n)
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return statistics.median(xs), xs[lo], xs[hi]


WITHOUT_OPDUMP = ("plain", "records")  # modes with no opdump in them: nothing of a --baseline build to measure


def record_floor_library(env):
    """bench/record_floor.cc as built beside the opdump package the workers import."""
    return bench_libraries.record_floor(env.get("PYTHONPATH", ""))


def run_mode(mode, steps, workdir, pythonpath=None):
    path = os.path.join(workdir, mode.replace("@", "_"))  # dump paths take no "@"
    shutil.rmtree(path, ignore_errors=True)
    env = steady_allocator.environment(ALLOCATOR)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", WORKER, mode, str(steps), path, str(THREADS), MODEL, DEVICE,
                          os.path.dirname(os.path.abspath(__file__)), record_floor_library(env)],
                         capture_output=True,
                         text=True, env=env, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    # The sizes of the files a tensor dump wrote, for writing the same files without opdump.
    data["file_sizes"] = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs]
    remove_tree(path)
    return data


def raw_write_mbps(nbytes, workdir, chunk=64 << 20):
    """One sequential file of `nbytes`: the disk's streaming rate (page cache included), written from one
    reused buffer of `chunk` bytes (a buffer of the whole dump, 9.6 GB for resnet18's tensors, took that much
    memory from the page cache the write goes through, and more than a smaller machine has)."""
    buf = memoryview(b"\x01" * min(chunk, max(nbytes, 1)))
    path = os.path.join(workdir, "raw.bin")
    t = time.perf_counter()
    with open(path, "wb", buffering=0) as f:
        left = nbytes
        while left > 0:
            left -= f.write(buf[:min(left, len(buf))])
    dt = time.perf_counter() - t
    os.remove(path)
    return nbytes / dt / 1e6


DIRECT_FROM = 256 << 10  # files from this size on bypass the page cache in opdump (atomic_file.h)


def raw_files_mbps(sizes, workdir, threads=2, direct=False):
    """The files a dump wrote (same count and sizes, 500 to a folder) written by plain write() calls on
    `threads` threads: what the file system gives for that many files, file creation included. With
    `direct`, as opdump writes them by default: files of DIRECT_FROM bytes and more past the page cache
    (O_DIRECT, whole 4 KiB blocks; the last partial block through the cache)."""
    import fcntl
    import mmap
    from concurrent.futures import ThreadPoolExecutor
    root = os.path.join(workdir, "raw-files")
    buf = mmap.mmap(-1, max(sizes, default=0) or 1)  # page-aligned, as O_DIRECT needs
    buf.write(b"\x01" * len(buf))  # touched pages (untouched ones would fault in the copy)
    data = memoryview(buf)
    folders = [os.path.join(root, str(i)) for i in range(0, len(sizes), 500)]
    for f in folders:
        os.makedirs(f)
    def write(i):
        n = sizes[i]
        whole = n & ~4095 if direct and n >= DIRECT_FROM else 0
        fd = os.open(os.path.join(folders[i // 500], str(i)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        try:
            if whole:
                flags = fcntl.fcntl(fd, fcntl.F_GETFL)
                fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_DIRECT)
                os.write(fd, data[:whole])
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
            if n > whole:
                os.write(fd, data[whole:n])
        finally:
            os.close(fd)
    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, range(len(sizes)), chunksize=64))
    dt = time.perf_counter() - t
    remove_tree(root)
    return sum(sizes) / dt / 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--modes", default="plain,records,off,listed,stats,overflow,tensor",
                   help="comma-separated; plain is always run")
    p.add_argument("--baseline", help="the python folder of another opdump build, measured in the same rounds")
    p.add_argument("--allocator", choices=["steady", "glibc", "both"], default="steady",
                   help="steady (default): glibc's mmap and trim thresholds fixed, as a preloaded jemalloc keeps them; "
                        "glibc: its dynamic defaults; both: the light modes under each, labelled")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads of the training (default: torch's, all cores: the statistics thread "
                        "then competes with the training for them)")
    p.add_argument("--model", choices=msprobe_workload.MODELS, default="resnet18",
                   help="resnet18 at batch 4 (default: msprobe's workload); resnet50 at batch 16 (about 10x the step); "
                        "tiny: 100 Linear(16, 16)+ReLU layers at batch 4 (the fixed cost per op, in microseconds)")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) or cuda: the model trains there, each step synchronized; statistics and overflow "
                        "checks then run on the GPU and tensors are copied to pinned host memory")
    args = p.parse_args()
    global THREADS, MODEL, DEVICE
    THREADS, MODEL, DEVICE = args.threads, args.model, args.device
    baseline = {}  # mode -> [(this build / baseline) per round]
    baseline_rss = []  # the baseline's peak RSS in tensor mode, per round
    workdir = tempfile.mkdtemp(dir=args.dir, prefix="opdump-bench-")
    modes = ["plain"] + [m for m in args.modes.split(",") if m and m != "plain"]
    if "records" in modes and not record_floor_library(os.environ):
        sys.exit("bench_torch: --modes records needs bench/record_floor.cc built (libopdump_record_floor.so in the "
                 "bench folder of the build whose python folder is on PYTHONPATH): ninja -C build opdump_record_floor")
    medians = {m: [] for m in modes}
    cpu_ratios = {m: [] for m in modes}
    tensor_info = []
    runs = {m: [] for m in modes}  # every run's data, for the per-step figures
    # Tensor mode runs after the others: the gigabytes it writes are flushed to disk for a
    # while afterwards and would slow whatever ran next.
    # Each round runs every mode once, in an order rotated from round to round so that no mode
    # always runs first (the first process of a round was measurably slower here).
    light = [m for m in modes if m != "tensor"]
    ratios = {m: [] for m in modes}
    global ALLOCATOR
    tables = {}  # allocator -> (medians, ratios, cpu ratios, runs) of the light modes
    for ALLOCATOR in (["steady", "glibc"] if args.allocator == "both" else [args.allocator]):
        medians, ratios = {m: [] for m in modes}, {m: [] for m in modes}
        cpu_ratios, runs = {m: [] for m in modes}, {m: [] for m in modes}
        for r in range(args.rounds):
            order = light[r % len(light):] + light[:r % len(light)]
            this_round, this_cpu = {}, {}
            for mode in order:
                d = run_mode(mode, args.steps, workdir)
                runs[mode].append(d)
                this_round[mode] = statistics.median(d["times"])
                this_cpu[mode] = statistics.median(d["cpu"])
                medians[mode].append(this_round[mode])
                # As it goes, so that a run cut short (a lent GPU machine's time limit) still says something.
                print(f"  [{ALLOCATOR} round {r + 1}] {mode:8s} {this_round[mode] * 1e3:8.1f} ms/step wall, "
                      f"{this_cpu[mode] * 1e3:8.1f} ms CPU", file=sys.stderr, flush=True)
                if args.baseline and mode not in WITHOUT_OPDUMP:
                    b = run_mode(mode, args.steps, workdir, args.baseline)
                    baseline.setdefault((ALLOCATOR, mode), []).append(this_round[mode] / statistics.median(b["times"]))
                    print(f"  [{ALLOCATOR} round {r + 1}] {mode:8s} {statistics.median(b['times']) * 1e3:8.1f} ms/step "
                          f"wall, {statistics.median(b['cpu']) * 1e3:8.1f} ms CPU (baseline)", file=sys.stderr, flush=True)
            for mode in light:
                ratios[mode].append(this_round[mode] / this_round["plain"])
                cpu_ratios[mode].append(this_cpu[mode] / this_cpu["plain"])
        tables[ALLOCATOR] = (medians, ratios, cpu_ratios, runs)
    ALLOCATOR = "steady" if "steady" in tables else args.allocator  # tensor mode and the one-process figures
    medians, ratios, cpu_ratios, runs = tables[ALLOCATOR]
    # Each writer starts settled; opdump and the plain writers of the same files (their sizes from opdump's
    # first run) take turns in an order rotated from round to round: what ran just before a writer changed
    # its rate here.
    file_sizes = []
    writers = ["opdump", "files", "direct"]
    for r in range(args.rounds if "tensor" in modes else 0):
        p = run_mode("plain", args.steps, workdir)
        raw = {}
        for writer in writers[r % 3:] + writers[:r % 3]:
            settle()
            if writer != "opdump":
                # Sizes from opdump's first run: a plain writer placed before it in round 0 waits for them.
                if not file_sizes:
                    raw[writer] = None
                    continue
                raw[writer] = (raw_files_mbps(file_sizes, workdir, threads=2) if writer == "files"
                               else raw_files_mbps(file_sizes, workdir, threads=4, direct=True))
                continue
            d = run_mode("tensor", args.steps, workdir)
            file_sizes = file_sizes or d["file_sizes"]
            if args.baseline:
                settle()
                b = run_mode("tensor", args.steps, workdir, args.baseline)
                baseline.setdefault("tensor", []).append(statistics.median(d["times"]) / statistics.median(b["times"]))
                baseline_rss.append(b["maxrss_mb"])
        medians["tensor"].append(statistics.median(d["times"]))
        ratios["tensor"].append(statistics.median(d["times"]) / statistics.median(p["times"]))
        for writer in [w for w in raw if raw[w] is None]:
            settle()
            raw[writer] = (raw_files_mbps(file_sizes, workdir, threads=2) if writer == "files"
                           else raw_files_mbps(file_sizes, workdir, threads=4, direct=True))
        settle()
        d.update(mbps=d["report"]["bytes_written"] / d["dump_wall"] / 1e6, raw_files=raw["files"],
                 raw_direct=raw["direct"], raw_best=max(raw.values()),
                 raw_stream=raw_write_mbps(d["report"]["bytes_written"], workdir))
        tensor_info.append(d)
    # Process-to-process noise on this VM reaches +-20%: the same modes inside one process.
    # A dump can also slow the undumped steps after it (an OpenMP team that a writer thread once started
    # stayed, docs/architecture.md "A second OpenMP team"): then the blocks' ratio reads low. The
    # undumped blocks after the first dump against the one before any tell.
    inside, drift, inside_baseline = {}, {}, {}
    extra_inside = {}  # mode -> per round, dumped minus undumped step in neighbouring blocks (seconds)
    pairs = {}  # (mode, "blocks") -> every pair of neighbouring blocks' ratio, all rounds together
    for mode in [m for m in modes if m.partition("@")[0] in ("records", "off", "listed", "stats", "overflow")]:
        # (a dump that captures nothing has no every-other-iteration figure worth its time, forced placement or not)
        baselines = [args.baseline] if args.baseline and mode not in WITHOUT_OPDUMP else []
        for how in (("blocks",) if mode.partition("@")[0] in ("records", "off", "listed") else ("blocks", "alt")):
            inside[(mode, how)] = []
            if baselines:
                inside_baseline[(mode, how)] = []
            for _ in range(args.rounds):
                # (the baseline's process right after this build's, each round: one-process ratios of both builds)
                for pythonpath in [None] + baselines:
                    d = run_mode(f"{mode}-{how}", args.steps, workdir, pythonpath)
                    into = inside_baseline if pythonpath else inside
                    if how == "blocks":  # pairs of neighbouring blocks
                        into[(mode, how)].append(statistics.median(a / b for a, b in zip(d["times"], d["off_times"])))
                        if not pythonpath:
                            pairs.setdefault((mode, how), []).extend(a / b for a, b in zip(d["times"], d["off_times"]))
                            extra_inside.setdefault(mode, []).append(
                                statistics.median(a - b for a, b in zip(d["times"], d["off_times"])))
                            if len(d["off_times"]) > 1:
                                drift.setdefault(mode, []).append(statistics.median(d["off_times"][1:]) / d["off_times"][0])
                    else:
                        into[(mode, how)].append(statistics.median(d["times"]) / statistics.median(d["off_times"]))
    shutil.rmtree(workdir, ignore_errors=True)
    threads = runs["plain"][0]["threads"] if runs["plain"] else "?"
    described = {"resnet18": "resnet18, batch 4x3x64x64", "resnet50": "resnet50, batch 16x3x64x64",
                 "tiny": "100 Linear(16, 16)+ReLU layers, batch 4x16"}[MODEL]
    print(f"{described}, 1000 classes, SGD momentum 0.9, "
          f"{'CPU' if DEVICE == 'cpu' else DEVICE + ' (each step synchronized)'}, {threads} training threads on "
          f"{os.cpu_count()} cores; median step over {args.steps} steps x {args.rounds} rounds; ratio = median over "
          f"rounds of (mode / plain of the same round)")
    for allocator, (t_medians, t_ratios, t_cpu, t_runs) in tables.items():
        print(f" {steady_allocator.LABELS[allocator]}:")
        for mode in [m for m in modes if t_medians[m]]:
            med = statistics.median(t_medians[mode])
            ratio = statistics.median(t_ratios[mode]) if mode != "plain" else 1.0
            spread = f"  (rounds: {', '.join(f'{x:.2f}' for x in t_ratios[mode])})" if mode != "plain" else ""
            cpu = f"   CPU {statistics.median(t_cpu[mode]):5.2f}x" if t_cpu[mode] else ""
            paging = ""
            if t_runs[mode]:
                faults = statistics.median(f for d in t_runs[mode] for f in d["faults"])
                system = statistics.median(x for d in t_runs[mode] for x in d["system"])
                paging = f"   {faults:7.0f} minor faults/step, system {system * 1e3:5.1f} ms/step"
            print(f"  {mode:8s} {med * 1e3:8.1f} ms/step   wall {ratio:5.2f}x{cpu}{paging}{spread}")
    # What a dumped step summarizes, and what that costs per CPU second beyond the plain step.
    plain_cpu = statistics.median(c for d in runs["plain"] for c in d["cpu"]) if runs["plain"] else 0
    for mode in ("stats",):
        if not runs.get(mode):
            continue
        d = runs[mode][-1]
        per_step = d["report"].get("statistic_bytes", 0) / (args.steps + d["warmup"])
        extra_cpu = statistics.median(c for x in runs[mode] for c in x["cpu"]) - plain_cpu
        rate = f"{per_step / extra_cpu / 1e9:.2f} GB per extra CPU second" if extra_cpu > 0 else "no measurable extra CPU time"
        rows = d["report"].get("statistic_rows", 0) // (args.steps + d["warmup"])
        read = d["report"].get("statistic_bytes_read", 0) / (args.steps + d["warmup"])  # (the rest known already)
        print(f"  {mode:8s} summarizes {per_step / 1e6:.0f} MB in {rows} statistic rows per step, reading "
              f"{read / 1e6:.0f} MB of it; {rate}; "
              f"peak RSS {d['maxrss_mb']:.0f} MB (plain {runs['plain'][-1]['maxrss_mb']:.0f} MB)")
    if runs.get("overflow"):
        d = runs["overflow"][-1]
        steps = args.steps + d["warmup"]
        checks = d["report"].get("overflow_checks", 0)
        print(f"  overflow checks {checks / steps:.0f} ops' outputs per step, reading "
              f"{d['report'].get('overflow_bytes_read', 0) / steps / 1e6:.0f} MB; "
              f"{d['report'].get('overflow_bounded', 0) / steps:.0f} of them clean by their operands' bounds, unread")
    # The fixed cost per op: the step's extra time over the ops of a step (as statistics mode dumped them),
    # from separate processes and, far less noisy, from the neighbouring blocks inside one process.
    stats_run = runs["stats"][-1] if runs.get("stats") else None
    ops = stats_run["report"].get("ops", 0) / (args.steps + stats_run["warmup"]) if stats_run else 0
    for mode in [m for m in ("stats", "overflow", "listed", "records", "off") if runs.get(m) and ops]:
        extra = statistics.median(medians[mode]) - statistics.median(medians["plain"])
        line = (f"  {mode:8s} {extra * 1e3:6.2f} ms/step more than plain over {ops:.0f} ops/step: "
                f"{extra / ops * 1e6:6.1f} us per op (separate processes")
        line += (", below their noise this run)" if extra <= 0 else ")")
        if extra_inside.get(mode):
            inside_extra = statistics.median(extra_inside[mode])
            line += (f";  inside one process (blocks) {inside_extra * 1e3:6.2f} ms/step, "
                     f"{inside_extra / ops * 1e6:6.1f} us per op")
        print(line)
    what = {"blocks": "blocks dumped from set_dump to finalize_dump / undumped blocks",
            "alt": "every other iteration dumped / the iterations between"}
    for (mode, how), values in inside.items():
        print(f"  {mode:8s} one process, {what[how]}: {statistics.median(values):5.2f}x"
              f"  (rounds: {', '.join(f'{x:.2f}' for x in values)})")
        if (interval := median_interval(pairs.get((mode, how), []))):
            # (is a figure near a target above it or below? the interval says whether this run can tell)
            print(f"  {mode:8s}   every block pair of every round: median {interval[0]:5.2f}x, 95% interval "
                  f"{interval[1]:.2f}-{interval[2]:.2f} over {len(pairs[(mode, how)])} pairs")
        if (mode, how) in inside_baseline:
            values = inside_baseline[(mode, how)]
            print(f"  {mode:8s}   the baseline, the same: {statistics.median(values):5.2f}x"
                  f"  (rounds: {', '.join(f'{x:.2f}' for x in values)})")
        if how == "blocks" and drift.get(mode):
            late = statistics.median(drift[mode])
            # (one block of 3 timed steps before: within about 10% by noise alone)
            print(f"  {mode:8s}   its undumped blocks after the first dump / the one before: {late:5.2f}x"
                  + ("  (above 1.15x: the dump slows the steps after it, and the blocks' ratio reads low)"
                     if late > 1.15 else ""))
    for key, values in baseline.items():
        mode = key if isinstance(key, str) else f"{key[1]} ({key[0]})"
        print(f"  {mode:8s} this build / baseline {args.baseline}: {statistics.median(values):5.2f}x"
              f"  (rounds: {', '.join(f'{x:.2f}' for x in values)})")
    if not tensor_info:
        return
    d = tensor_info[-1]
    written = d["report"]["bytes_written"]
    per_step = written / (args.steps + d["warmup"])
    rates = lambda key: ", ".join(f"{x[key]:.0f}" for x in tensor_info)
    vs = lambda key: statistics.median(x["mbps"] / x[key] for x in tensor_info)
    print(f"  tensor mode wrote {written / 1e6:.0f} MB in {len(d['file_sizes'])} files ({per_step / 1e6:.0f} MB/step); "
          f"MB/s from set_dump to the end of finalize_dump: {rates('mbps')} (rounds)")
    per_round = ", ".join(f"{x['mbps'] / x['raw_best']:.2f}" for x in tensor_info)
    print(f"  tensor mode / the disk, the faster plain writer of the same files in each round: "
          f"{vs('raw_best'):.2f}x  (rounds: {per_round})")
    print(f"    the same files by 4 plain threads past the page cache as opdump writes them ({rates('raw_direct')} MB/s): "
          f"{vs('raw_direct'):.2f}x;  by 2 plain threads through it ({rates('raw_files')} MB/s): {vs('raw_files'):.2f}x;  "
          f"one sequential file of the same bytes ({rates('raw_stream')} MB/s): {vs('raw_stream'):.2f}x")
    print(f"  tensor mode peak RSS {d['maxrss_mb']:.0f} MB with max_inflight_mb 512, at most "
          f"{d['report'].get('peak_inflight_bytes', 0) / 2**20:.0f} MB in flight (plain {runs['plain'][-1]['maxrss_mb']:.0f} MB"
          + (f"; baseline {', '.join(f'{x:.0f}' for x in baseline_rss)} MB" if baseline_rss else "") + ")")


if __name__ == "__main__":
    main()
