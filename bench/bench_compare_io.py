"""`opdump compare` against the disk and against `cat`, side by side in one run (issue: compare at
disk speed).

    /usr/bin/python3 bench/bench_compare_io.py [--small-pairs 50000] [--large-pairs 64] [--large-mb 32]
                                               [--opdump build/opdump] [--dir /var/tmp]

- many small files (api-level dumps of big models): N pairs of 256 float32, page cache warm:
  `opdump compare` against `cat` of the same files (xargs, as many per process as fit);
- large files, cold (page cache dropped before each run; needs root, else skipped): `opdump compare`
  against the disk's parallel sequential read rate (two `cat` processes over the two halves of the files).

Ratios above 1 mean opdump is faster; the targets are >= 0.8."""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np

FOLDER = os.path.join("rank_0", "net", "0", "0")


def make_dumps(root, pairs, elements, seed=0):
    rng = np.random.default_rng(seed)
    for side in ("target", "reference"):
        os.makedirs(os.path.join(root, side, FOLDER))
    for i in range(pairs):
        y = rng.standard_normal(elements).astype(np.float32)
        x = y + np.float32(1e-4) * rng.standard_normal(elements).astype(np.float32)
        name = f"linear.Default_net-Net_layer{i}-Linear_linear-op0.{i}.0.{1000 + i}.output.0.DefaultFormat.npy"
        np.save(os.path.join(root, "target", FOLDER, name), x)
        np.save(os.path.join(root, "reference", FOLDER, name), y)


def files_of(root):
    return sorted(os.path.join(d, f) for side in ("target", "reference")
                  for d, _, fs in os.walk(os.path.join(root, side)) for f in fs)


def timed(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def cat_files(files, processes=1):
    """Seconds for `processes` cat pipelines over interleaved shares of `files` (xargs batches)."""
    t0 = time.perf_counter()
    procs = []
    for k in range(processes):
        share = "\0".join(files[k::processes]).encode() + b"\0"
        p = subprocess.Popen(["xargs", "-0", "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        p.stdin.write(share)
        p.stdin.close()
        procs.append(p)
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError("cat failed")
    return time.perf_counter() - t0


def compare(opdump, root, out, extra=()):
    shutil.rmtree(out, ignore_errors=True)
    return timed([opdump, "compare", os.path.join(root, "target"), os.path.join(root, "reference"), "-o", out, "-q",
                  *extra])


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--small-pairs", type=int, default=50_000)
    p.add_argument("--small-elements", type=int, default=256)
    p.add_argument("--large-pairs", type=int, default=64)
    p.add_argument("--large-mb", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--opdump", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "opdump"))
    p.add_argument("--dir", default="/var/tmp")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="opdump-bench-io-", dir=args.dir)
    try:
        if args.small_pairs:
            root = os.path.join(work, "small")
            make_dumps(root, args.small_pairs, args.small_elements)
            files = files_of(root)
            cat_files(files)  # warm
            t_cat, t_cmp = [], []
            for _ in range(args.rounds):  # side by side, round by round
                t_cat.append(cat_files(files))
                t_cmp.append(compare(args.opdump, root, os.path.join(work, "out")))
            ratios = [c / o for c, o in zip(t_cat, t_cmp)]
            print(f"many small files ({len(files)} files of {args.small_elements} float32), warm, {args.rounds} rounds:")
            print(f"  cat {statistics.median(t_cat):.2f} s   opdump compare {statistics.median(t_cmp):.2f} s (reading, "
                  f"comparing, writing the reports)   ratio (cat time / compare time): {statistics.median(ratios):.2f}x "
                  f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
            shutil.rmtree(root)
        if args.large_pairs:
            root = os.path.join(work, "large")
            make_dumps(root, args.large_pairs, args.large_mb << 18)
            files = files_of(root)
            total = sum(os.path.getsize(f) for f in files)
            if not drop_caches():
                print("large files, cold: skipped (dropping the page cache needs root)")
                return
            # This VM's disk varies by tens of percent from minute to minute: each round measures the
            # disk (the faster of one and two cat processes) and compare back to back, and the ratio
            # is taken per round.
            rates = {"cat x1": [], "cat x2": [], "compare": []}
            ratios = []
            for _ in range(args.rounds):
                for name, run in (("cat x1", lambda: cat_files(files, 1)), ("cat x2", lambda: cat_files(files, 2)),
                                  ("compare", lambda: compare(args.opdump, root, os.path.join(work, "out")))):
                    drop_caches()
                    rates[name].append(total / run() / 1e9)
                ratios.append(rates["compare"][-1] / max(rates["cat x1"][-1], rates["cat x2"][-1]))
            med = statistics.median
            print(f"large files, cold ({len(files)} files, {total / 1e9:.1f} GB; {args.rounds} rounds, caches dropped "
                  f"before each run; medians):")
            print(f"  disk (cat, 1 and 2 processes) {med(rates['cat x1']):.2f} / {med(rates['cat x2']):.2f} GB/s   "
                  f"opdump compare {med(rates['compare']):.2f} GB/s   ratio to the faster cat of the same round: "
                  f"{med(ratios):.2f}x (rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
