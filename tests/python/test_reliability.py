"""Faults and hostile input around a real training run: a full disk, kill -9 in the middle of
a dump, unwritable paths, hostile model names, and configs at the extremes."""
import csv
import glob
import json
import os
import pathlib
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import BUILD, PYTHON, ms_config

ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))


def python(code, timeout=300, env=None, **kw):
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env or ENV, timeout=timeout, **kw)


def final_files(root):
    """Every file under a final (not temporary) name."""
    return [p for p in glob.glob(os.path.join(root, "**", "*"), recursive=True)
            if os.path.isfile(p) and ".opdump-tmp." not in os.path.basename(p)]


def check_complete(root):
    """Every npy loads whole; every statistic.csv has whole rows (a torn last line aside)."""
    npys = [p for p in final_files(root) if p.endswith(".npy")]
    for p in npys:
        a = np.load(p)  # raises on a truncated file
        with open(p, "rb") as f:
            head = f.read(12)
        major = head[6]
        header_end = 10 + int.from_bytes(head[8:10], "little") if major == 1 else 12 + int.from_bytes(head[8:12], "little")
        assert os.path.getsize(p) == header_end + a.nbytes, p  # exactly the header and the data: nothing torn or extra
    for p in [p for p in final_files(root) if p.endswith("statistic.csv")]:
        text = open(p, newline="").read()
        lines = text.split("\n")
        complete = lines[:-1]  # the part after the last newline is a torn row or empty
        rows = list(csv.reader(complete))
        assert all(len(r) == len(rows[0]) for r in rows), p
    return npys


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_training_goes_on_with_the_same_loss(workload, small_tmpfs, tmp_path):
    plain = workload("small", steps=4)
    dumped = workload("small", steps=4, config=ms_config(small_tmpfs / "d", saved_data="full"))
    assert dumped["losses"] == plain["losses"] and dumped["params"] == plain["params"]
    report = dumped["report"]
    assert not report["ok"] and report["files_lost"] > 0 and report["files_written"] > 0
    assert "lost" in dumped["stderr"]
    npys = check_complete(small_tmpfs)
    assert npys  # what fitted is there, whole
    assert not [p for p in glob.glob(str(small_tmpfs / "**" / "*"), recursive=True) if ".opdump-tmp." in p]


def test_kill_9_leaves_only_complete_files(tmp_path, run):
    for run_index, delay in enumerate((0.3, 0.9, 1.7)):
        dump = tmp_path / f"d{run_index}"  # one dump path per run: several runs in one path are refused
        cfg = tmp_path / "c.json"
        cfg.write_text(json.dumps(ms_config(dump, saved_data="full")))
        code = ("import torch, opdump, sys\n"
                f"opdump.set_dump({str(cfg)!r})\n"
                "m = opdump.register_model(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),"
                " torch.nn.Linear(256, 256)), 'net').module\n"
                "x = torch.randn(64, 256)\n"
                "print('ready', flush=True)\n"
                "while True:\n  m(x).sum().backward(); opdump.step()\n")
        proc = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ENV)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert check_complete(dump)
        # Files are written unnamed (O_TMPFILE, which ext4 and tmpfs have) and named once whole:
        # a killed process leaves no temporary behind either.
        assert not [p for p in glob.glob(str(dump / "**" / "*"), recursive=True) if ".opdump-tmp." in p]
        # opdump's own readers take the killed dump as it is
        proc = run("overflow", dump / "rank_0", check=0)
        assert "0 overflowing ops" in proc.stdout


def test_unwritable_or_missing_dump_path_is_an_error_at_set_dump(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for path in (blocker / "sub", "/proc/opdump-cannot-write-here"):
        cfg = tmp_path / "c.json"
        cfg.write_text(json.dumps({"dump": {"dump_path": str(path), "dump_list": [], "dump_op_switch": "on"}}))
        out = python("import opdump, torch\n"
                     "try:\n"
                     f"  opdump.set_dump({str(cfg)!r})\n"
                     "except opdump.OpdumpError as e:\n"
                     "  print('ERROR', e)\n"
                     "print('trained', float(torch.ones(2).sum()))\n")
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("ERROR") and str(path).split("/")[-2] in out.stdout, out.stdout
        assert "trained 2.0" in out.stdout
    # a config file that does not exist names the file
    out = python("import opdump\ntry:\n  opdump.set_dump('/nonexistent/acl.json')\n"
                 "except opdump.OpdumpError as e:\n  print('ERROR', e)\n")
    assert "ERROR" in out.stdout and "/nonexistent/acl.json" in out.stdout


def test_hostile_model_and_module_names_stay_inside_the_dump_root(tmp_path):
    root = tmp_path / "d"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"dump": {"dump_path": str(root), "dump_list": [], "dump_op_switch": "on",
                                        "dump_mode": "all"}}))
    code = ("import torch, opdump\n"
            f"opdump.set_dump({str(cfg)!r})\n"
            "class M(torch.nn.Module):\n"
            "  def __init__(self):\n"
            "    super().__init__()\n"
            "    self.add_module('/escape/' + 'x' * 1000, torch.nn.Linear(4, 4))\n"
            "    self.add_module('nul\\x00/\\udcff', torch.nn.ReLU())\n"
            "  def forward(self, x):\n"
            "    for m in self.children(): x = m(x)\n"
            "    return x\n"
            "m = opdump.register_model(M(), '../../../../tmp/evil\\x00' + '\\u00e9' * 300).module\n"
            "with torch.no_grad(): m(torch.randn(2, 4))\n"
            "r = opdump.finalize_dump()\n"
            "print('OK', r['ok'], r['files_written'])\n")
    out = python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK True")
    everything = glob.glob(str(tmp_path / "**" / "*"), recursive=True)
    assert all(os.path.realpath(p).startswith(str(tmp_path) + "/") for p in everything)
    assert not os.path.exists("/tmp/evil") and not (tmp_path / "escape").exists()
    inside = [p for p in everything if os.path.isfile(p) and p.endswith(".npy")]
    assert len(inside) >= 4
    for p in inside:
        assert all(len(part.encode()) <= 255 for part in os.path.relpath(p, root).split(os.sep))
        np.load(p)
    # long names were mapped: mapping.csv says which file holds which op
    assert glob.glob(str(root / "**" / "mapping.csv"), recursive=True)


@pytest.mark.parametrize("case", ["deep", "huge_iteration", "many_kernels", "big_file"])
def test_config_extremes_give_a_clear_error_or_bounded_work(tmp_path, run, case):
    path = tmp_path / "c.json"
    if case == "deep":
        path.write_text('{"dump": ' + "[" * 10000 + "]" * 10000 + "}")
        expect = "nested deeper"
    elif case == "huge_iteration":
        path.write_text(json.dumps(ms_config(tmp_path / "d", iteration="0-18446744073709551615")))
        expect = None
    elif case == "many_kernels":
        cfg = ms_config(tmp_path / "d", common={"dump_mode": 1, "kernels": [f"Conv2D-op{i}" for i in range(1_000_000)]})
        path.write_text(json.dumps(cfg))
        expect = "kernels"
    else:
        with open(path, "wb") as f:  # 1 GB, sparse: the size alone is refused before reading
            f.truncate(1 << 30)
        expect = "bytes"
    t = time.monotonic()
    proc = run("config", "check", path)
    assert time.monotonic() - t < 20
    if expect is None:
        assert proc.returncode == 0, proc.stderr
        assert "0-18446744073709551615" in proc.stdout
    else:
        assert proc.returncode == 1 and expect in proc.stderr and str(path) in proc.stderr, proc.stderr


def test_dump_files_declaring_huge_sizes_are_refused_before_allocation(tmp_path, run):
    npy = tmp_path / "huge.npy"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"
    header += " " * (118 - len(header)) + "\n"
    npy.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 16)
    proc = run("stats", npy, check=1)
    assert "huge.npy" in proc.stderr and "elements" in proc.stderr
    binf = tmp_path / "Op.op.0.0.1"
    binf.write_bytes((1 << 62).to_bytes(8, "little") + b"\0" * 32)
    proc = run("convert", binf, "-o", tmp_path / "out", check=1)
    assert "header length" in proc.stderr


@pytest.mark.parametrize("mode", ["full", "statistic", "overflow"])
def test_threads_training_one_model_at_once(tmp_path, mode):
    """The workload scripts/sanitize.sh runs under TSan, here without it: three threads train one
    model, in tensor mode and in lazy-statistics mode with undumped iterations between."""
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.run([PYTHON, str(pathlib.Path(__file__).with_name("threaded_workload.py")), str(tmp_path), mode],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "threaded workload OK" in proc.stdout


def test_tensor_mode_memory_stays_within_max_inflight_mb(tmp_path):
    """Peak memory of a tensor dump grows by at most max_inflight_mb and some slack, however many steps
    are written: copies count against the cap from when they are made, and go back to the system once
    written instead of staying in the allocator's heaps."""
    cap_mb = 64
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "dump", max_inflight_mb=cap_mb, writer_threads=1)))
    code = f"""
import json, torch, torchvision, opdump
def peak_rss_kb():  # this process's own high-water mark (ru_maxrss also counts the parent's RSS at fork)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
torch.manual_seed(0)
# Tensors of many sizes, freed while the training allocates: what fragments a heap.
m = torchvision.models.resnet18(num_classes=1000)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(4, 3, 64, 64); y = torch.randint(0, 1000, (4,))
def step():
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
for _ in range(3): step()
base = peak_rss_kb()
opdump.register_model(m, "net"); opdump.hook_optimizer(opt)
opdump.set_dump({str(cfg)!r})
for _ in range(4): step()
report = opdump.finalize_dump()
print(json.dumps({{"grown_mb": (peak_rss_kb() - base) / 1024,
                  "peak_inflight_mb": report["peak_inflight_bytes"] / 2**20}}))
"""
    # Both PyTorch 1.13 and 2.x allocate their tensors from glibc's heap once glibc's dynamic mmap
    # threshold has risen, and that heap keeps freed blocks of the training's own tensors in a pattern
    # that depends on when the dump makes the training wait: unpinned, 1.13 grew 68-85 MB here with no
    # trend from 1 to 32 dumped steps (CI once saw 84), 2.6 17-47 MB above the cap. Pinned, 1.13 grows
    # 70.0-70.5 MB (also with a busy CPU and disk beside it) and 2.6 65-66 MB: what is left is what the
    # dump holds. The dump's copies do not depend on the threshold (the copy pool maps them itself;
    # test_copy_pool.cc checks that they are reused, stay within the limit and go back).
    env = dict(ENV, MALLOC_MMAP_THRESHOLD_="131072")
    proc = python(code, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    grown_mb = result["grown_mb"]
    per_op = {}
    for p in check_complete(tmp_path / "dump"):
        name = os.path.basename(p)
        op = name.split(".input.")[0].split(".output.")[0]
        per_op[(os.path.dirname(p), op)] = per_op.get((os.path.dirname(p), op), 0) + os.path.getsize(p)
    written_mb = sum(per_op.values()) / 2**20
    largest_op_mb = max(per_op.values()) / 2**20
    assert written_mb > 20 * cap_mb  # the dump is many times the cap: a heap that kept its copies would show
    # Copies count against the cap from when they are made (an op's input copies wait for its outputs,
    # and nested ops each hold theirs): the dump never held more than the cap at once. Before they were
    # counted only once queued: cap + 26 MB held here.
    assert cap_mb / 2 < result["peak_inflight_mb"] <= cap_mb, (result, largest_op_mb)
    print(f"grown {grown_mb:.1f} MB, largest op {largest_op_mb:.1f} MB, peak in flight {result['peak_inflight_mb']:.1f} MB")
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        # Under scripts/sanitize.sh's preloaded ASan, its allocator (quarantine, redzones) takes glibc's place and
        # decides how the process's peak moves (66-81 MB seen), whatever the threshold: the cap is checked above.
        return
    # 16 MB of slack: the dumper's own records and the allocator's small-block heaps. Before the copies
    # were unmapped once written: 136 MB here, 95 MB after; 66 MB once they counted from when they were
    # made (until then an op's copies came on top of the cap: largest op 27 MB here).
    assert grown_mb <= cap_mb + 16, (grown_mb, largest_op_mb, written_mb)
