"""Every tensor an op reads reaches the dump with its real dtype, shape and bytes, whatever made it:
Python data, numpy, buffers, DLPack, torch.load, worker processes, raw writes into data_ptr (as a C++
extension does). Only out= buffers, undefined tensors and layouts without a dump format are
placeholders, each listed with its reason in placeholders.csv, named by `opdump stats` and, against
data, reported by `opdump compare` as not dumped on one side."""
import csv
import glob
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import BUILD, PYTHON, ms_config
import dump_reader as dr

# Each route makes a tensor while dumping is on and feeds it straight to torch.flip (one flip per
# route, in this order): flip-op{i} input.0 must be the route's tensor, byte for byte. The expected
# values go to expected.npz.
ROUTES_SCRIPT = r"""
import ctypes, io, json, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[2])
import opdump
routes = json.loads(sys.argv[3])
src = np.array([3.5, -1.25, 7.0, 0.5], dtype=np.float32)

def raw_write():  # what a C++ extension does: allocate, then write through data_ptr
    t = torch.empty(4, dtype=torch.float32)
    ctypes.memmove(t.data_ptr(), src.ctypes.data, src.nbytes)
    return t

def numpy_write():
    t = torch.empty(4, dtype=torch.float64)
    t.numpy()[:] = [1.0, 2.0, -3.0, 4.5]
    return t

def loaded():
    buf = io.BytesIO()
    torch.save(torch.tensor([9, 8, 7], dtype=torch.int16), buf)
    buf.seek(0)
    return torch.load(buf)

def worker_batch():
    class Data(torch.utils.data.Dataset):
        def __len__(self): return 2
        def __getitem__(self, i): return torch.tensor([i * 10 + 1, i * 10 + 2], dtype=torch.int32)
    loader = torch.utils.data.DataLoader(Data(), batch_size=2, num_workers=1)
    return next(iter(loader))

def shared():
    t = torch.tensor([4.0, 5.0, 6.0]).share_memory_()
    t.add_(1)
    return t

def dlpack():
    from torch.utils.dlpack import from_dlpack, to_dlpack
    return from_dlpack(to_dlpack(torch.tensor([[1, 2], [3, 4]], dtype=torch.int8)))

base = None
def base_tensor():
    global base
    base = torch.tensor([10, 20, 30, 40, 50])
    return base

make = {
    "tensor_int64": lambda: torch.tensor([0, 1, 2, 0]),
    "tensor_float32": lambda: torch.tensor([[0.5, -2.0], [3.25, 1e-3]]),
    "tensor_bool": lambda: torch.tensor([True, False, True]),
    "tensor_float16": lambda: torch.tensor([1.5, -0.25], dtype=torch.float16),
    "tensor_bfloat16": lambda: torch.tensor([1.5, -0.25, 3.0], dtype=torch.bfloat16),
    "tensor_nested_list": lambda: torch.tensor([[[1, 2]], [[3, 4]]], dtype=torch.uint8),
    "new_tensor": lambda: torch.ones(2).new_tensor([7.0, 8.0, 9.0]),
    "slice_of_tensor": lambda: base_tensor()[1:4],
    "clone_of_tensor": lambda: torch.tensor([1.0, 2.0, 3.0]).clone(),
    "as_tensor_dtype_change": lambda: torch.as_tensor([1, 2, 3], dtype=torch.float64),
    "as_tensor_numpy": lambda: torch.as_tensor(np.array([5, 6], dtype=np.int32)),
    "from_numpy": lambda: torch.from_numpy(np.array([1.0, -1.0], dtype=np.float64)),
    "frombuffer": lambda: torch.frombuffer(bytearray(np.array([2, 3, 4], dtype=np.int32).tobytes()), dtype=torch.int32),
    "numpy_round_trip": lambda: torch.from_numpy(torch.tensor([0.25, 0.75]).numpy().copy()),
    "dlpack": dlpack,
    "torch_load": loaded,
    "arange": lambda: torch.arange(5),
    "linspace": lambda: torch.linspace(0, 1, 5),
    "full": lambda: torch.full((2, 2), 3.0),
    "eye": lambda: torch.eye(3),
    "worker_batch": worker_batch,
    "shared_memory": shared,
    "raw_write_into_empty": raw_write,
    "numpy_write_into_empty": numpy_write,
}
opdump.set_dump(sys.argv[1] + ".json")
expected = {}
for name in routes:
    t = make[name]()
    expected[name] = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy().copy()
    torch.flip(t, [0])
# the issue's own cases: labels and indices from Python data
logits = torch.randn(4, 3)
labels = torch.tensor([0, 1, 2, 0])
torch.nn.functional.cross_entropy(logits, labels)
expected["labels"] = labels.numpy().copy()
weight = torch.randn(5, 2)
index = torch.tensor([1, 2])
torch.nn.functional.embedding(index, weight)
expected["index"] = index.numpy().copy()
report = opdump.finalize_dump()
np.savez(sys.argv[1] + ".expected.npz", **expected)
json.dump(report, open(sys.argv[1] + ".report.json", "w"))
"""

ROUTES = ["tensor_int64", "tensor_float32", "tensor_bool", "tensor_float16", "tensor_bfloat16", "tensor_nested_list",
          "new_tensor", "slice_of_tensor", "clone_of_tensor", "as_tensor_dtype_change", "as_tensor_numpy",
          "from_numpy", "frombuffer", "numpy_round_trip", "dlpack", "torch_load", "arange", "linspace", "full",
          "eye", "worker_batch", "shared_memory", "raw_write_into_empty", "numpy_write_into_empty"]


@pytest.fixture(scope="module")
def routes_dump(tmp_path_factory):
    d = tmp_path_factory.mktemp("routes") / "d"
    cfg = ms_config(d, saved_data="tensor")
    with open(str(d) + ".json", "w") as f:
        json.dump(cfg, f)
    proc = subprocess.run([PYTHON, "-c", ROUTES_SCRIPT, str(d), str(BUILD / "python"), json.dumps(ROUTES)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    folder = os.path.dirname(glob.glob(str(d / "**" / "*.npy"), recursive=True)[0])
    expected = dict(np.load(str(d) + ".expected.npz"))
    return folder, expected, json.load(open(str(d) + ".report.json"))


def by_type(folder, op_type, io="input", slot=0):
    """The files of one op type's slot, in call order (the n of {op}-op{n})."""
    found = {}
    for (t, name, kind, s), path in dr.tensors(folder).items():
        if t == op_type and kind == io and s == slot:
            found[int(name.rsplit("-op", 1)[1])] = path
    return [found[i] for i in sorted(found)]


@pytest.mark.parametrize("route", ROUTES)
def test_route_dumped_with_its_bytes(routes_dump, route):
    folder, expected, _ = routes_dump
    flips = by_type(folder, "flip")
    assert len(flips) == len(ROUTES), flips
    got = np.load(flips[ROUTES.index(route)])
    want = expected[route]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


def test_labels_and_indices_from_python_data(routes_dump):
    """The issue's case: cross_entropy's int64 labels and embedding's indices are data, not empty."""
    folder, expected, report = routes_dump
    files = dr.tensors(folder)
    labels = [p for (t, n, io, s), p in files.items() if t == "cross_entropy_loss" and io == "input" and s == 1]
    assert len(labels) == 1, sorted(files)
    np.testing.assert_array_equal(np.load(labels[0]), expected["labels"])
    assert np.load(labels[0]).dtype == np.int64
    index = [p for (t, n, io, s), p in files.items() if t == "embedding" and io == "input" and s == 1]
    assert len(index) == 1, sorted(files)
    np.testing.assert_array_equal(np.load(index[0]), expected["index"])
    # nothing in this run is a placeholder, so nothing was listed or warned about
    assert not os.path.exists(os.path.join(folder, "placeholders.csv"))
    assert not any("placeholder" in w for w in report["warnings"]), report["warnings"]


PLACEHOLDERS_SCRIPT = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
s = torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
opdump.set_dump(sys.argv[1] + ".json")
a = torch.arange(6.0)
out = torch.empty(6)
torch.add(a, a, out=out)                        # out= buffer: input slot 2 is a placeholder
torch.add(s, s)                                 # sparse inputs and output: placeholders that lose data
report = opdump.finalize_dump()
json.dump(report, open(sys.argv[1] + ".report.json", "w"))
"""


@pytest.fixture(scope="module")
def placeholder_dump(tmp_path_factory):
    d = tmp_path_factory.mktemp("holes") / "d"
    with open(str(d) + ".json", "w") as f:
        json.dump(ms_config(d, saved_data="tensor"), f)
    proc = subprocess.run([PYTHON, "-c", PLACEHOLDERS_SCRIPT, str(d), str(BUILD / "python")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    listing = glob.glob(str(d / "**" / "placeholders.csv"), recursive=True)
    assert len(listing) == 1, listing
    return d, os.path.dirname(listing[0]), json.load(open(str(d) + ".report.json")), proc.stderr


def test_placeholders_listed_with_reasons(placeholder_dump):
    _, folder, report, stderr = placeholder_dump
    rows = list(csv.DictReader(open(os.path.join(folder, "placeholders.csv"))))
    reasons = {(r["Op Type"], r["IO"], r["Slot"]): r["Reason"] for r in rows}
    adds = sorted({r["Op Name"] for r in rows if r["Op Type"] == "add"})
    assert len(adds) == 2, rows
    assert "out= buffer" in reasons[("add", "input", "2")]
    sparse = [r for r in rows if "Sparse" in r["Reason"]]
    assert {(r["IO"], r["Slot"]) for r in sparse} == {("input", "0"), ("input", "1"), ("output", "0")}, rows
    # the placeholder files themselves are empty float32 (0,) arrays, slot numbers kept
    files = dr.tensors(folder)
    for r in rows:
        key = (r["Op Type"], dr.sanitize(r["Op Name"]), r["IO"], int(r["Slot"]))
        arr = np.load(files[key])
        assert arr.shape == (0,) and arr.dtype == np.float32
    # the real inputs of the out= add are data
    real = [p for (t, n, io, s), p in files.items() if t == "add" and io == "input" and s == 0 and
            np.load(p).size == 6]
    assert real and np.array_equal(np.load(real[0]), np.arange(6.0, dtype=np.float32))
    # sparse tensors lost data: the report warns, naming the reason; the out= buffer lost none
    lost = [w for w in report["warnings"] if "placeholders without their data" in w]
    assert len(lost) == 1 and "Sparse" in lost[0] and "3 tensors" in lost[0], report["warnings"]
    assert "placeholders without their data" in stderr


def test_stats_names_placeholders(placeholder_dump, run):
    _, folder, _, _ = placeholder_dump
    out = run("stats", folder, check=0).stdout
    head, _, tail = out.partition("placeholder(s): the dump holds no data for these tensors")
    assert tail, out
    assert tail.count("out= buffer") == 1 and tail.count("Sparse") == 3, tail


def test_compare_flags_placeholder_against_data(placeholder_dump, tmp_path, run):
    """A placeholder against data is 'not dumped on one side' with the reason: not a pass and not
    a shape mismatch."""
    _, folder, _, _ = placeholder_dump
    other = tmp_path / "other"
    os.makedirs(other)
    for path in glob.glob(os.path.join(folder, "*.npy")):
        arr = np.load(path)
        if arr.size == 0:  # the reference has data where the target has a placeholder
            arr = np.arange(6, dtype=np.float32) if ".input.2." in path else np.ones((2, 2), np.float32)
        np.save(str(other / os.path.basename(path)), arr)
    out = tmp_path / "cmp"
    proc = run("compare", folder, other, "-o", out)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(open(out / "compare_result.csv")))
    flagged = [r for r in rows if "not dumped on the target side" in " ".join(r.values())]
    assert len(flagged) == 4, rows
    assert not any("shape mismatch" in " ".join(r.values()) for r in rows), rows
    for r in flagged:
        text = " ".join(r.values())
        assert "out= buffer" in text or "Sparse" in text
        assert "pass" not in {v.lower() for v in r.values()}


FORK_SCRIPT = r"""
import json, os, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
opdump.set_dump(sys.argv[1] + ".json")
torch.flip(torch.tensor([1.0, 2.0]), [0])
before = opdump.counters()["ops"]
pid = os.fork()
if pid == 0:  # a DataLoader worker's situation: the parent's writer threads did not come along
    for _ in range(200):
        torch.flip(torch.tensor([3.0, 4.0]), [0])
    os._exit(0 if opdump.counters()["ops"] == 0 else 3)  # the child sees no dump at all
_, status = os.waitpid(pid, 0)
after = opdump.counters()["ops"]
opdump.finalize_dump()
print(json.dumps({"child": os.waitstatus_to_exitcode(status), "before": before, "after": after}))
"""


def test_forked_child_dumps_nothing(tmp_path):
    """A process forked while dumping (DataLoader workers) reports no op to the parent's dump:
    its writer threads stayed in the parent, and queueing work for them could hang the child."""
    d = tmp_path / "d"
    with open(str(d) + ".json", "w") as f:
        json.dump(ms_config(d, saved_data="tensor"), f)
    proc = subprocess.run([PYTHON, "-c", FORK_SCRIPT, str(d), str(BUILD / "python")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["child"] == 0 and result["before"] == result["after"] == 1, result
    flips = [p for p in glob.glob(str(d / "**" / "*.npy"), recursive=True) if "/flip." in p or os.path.basename(p).startswith("flip.")]
    assert len(flips) == 2, flips  # the parent's one flip: input and output
