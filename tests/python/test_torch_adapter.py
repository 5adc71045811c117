"""The PyTorch adapter on real models: what is dumped, how it is named, and that dumping never
changes the training."""
import csv
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import BUILD, PYTHON, ms_config
import dump_reader as dr

DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
          6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16}


# Where the workload trains: the CUDA runs take the device paths (statistics reduced on the GPU, tensors
# copied to pinned host memory behind an event) and skip on a machine without a GPU.
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def iteration_folder(root, it, graph=0):
    return os.path.join(root, "net", str(graph), str(it))


def config_file(tmp_path, config, name="c.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


def run_script(code, *args):
    """Runs `code` in a fresh Debian Python with the built opdump package; fails the test on a non-zero exit."""
    proc = subprocess.run([PYTHON, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert proc.returncode == 0, proc.stderr
    return proc


def execution_order_of(tmp_path, code, iteration, **opdump):
    """Runs `code` (its argv[1]: a statistics dump config of these iterations, with these opdump options) and returns
    the rows of the execution order it wrote."""
    config = ms_config(tmp_path / "d", iteration=iteration, saved_data="statistic", **opdump)
    run_script(code, config_file(tmp_path, config))
    [order] = glob.glob(str(tmp_path / "d" / "**" / "ms_execution_order_graph_0.csv"), recursive=True)
    return list(csv.DictReader(open(order)))


# ---- names and selection --------------------------------------------------------------------

def test_forward_and_backward_names(workload, tmp_path):
    r = workload("small", steps=2, config=ms_config(tmp_path / "d", iteration="1"))
    folder = iteration_folder(r["report"]["root"], 1)
    names = {k[1] for k in dr.tensors(folder)}
    # forward: module path with classes, op type, call index of that type in that module
    assert {"Default_net-Small_conv1-Conv2d_conv2d-op0", "Default_net-Small_bn1-BatchNorm2d_batch_norm-op0",
            "Default_net-Small_relu-ReLU_relu_-op0", "Default_net-Small_fc-Linear_linear-op0"} <= names, names
    # backward: "Gradients/" + the forward op with its containers by attribute alone + node + op
    assert {"Gradients_Default_net_conv1-Conv2d_conv2d-op0_ConvolutionBackward0_convolution_backward-op0",
            "Gradients_Default_net_bn1-BatchNorm2d_batch_norm-op0_NativeBatchNormBackward0_native_batch_norm_backward-op0",
            "Gradients_Default_net_fc-Linear_linear-op0_AddmmBackward0_mm-op0",
            "Gradients_Default_net_fc-Linear_linear-op0_AddmmBackward0_mm-op1"} <= names, names
    # every backward op of a node is named after a forward op that was dumped
    prefixes = {"Gradients_" + n.replace("Default_net-Small_", "Default_net_") + "_"
                for n in names if n.startswith("Default_")}
    backward = [n for n in names if n.startswith("Gradients_") and "Backward0" in n]
    assert backward and all(any(n.startswith(p) for p in prefixes) for n in backward), backward
    # only iteration 1 was dumped
    assert sorted(os.listdir(os.path.join(r["report"]["root"], "net", "0"))) == ["1"]


def test_names_identical_across_runs(workload, tmp_path):
    a = workload("small", steps=2, config=ms_config(tmp_path / "a", iteration="0|1"))
    b = workload("small", steps=2, config=ms_config(tmp_path / "b", iteration="0|1"))
    for it in (0, 1):
        ka = {(k[0], k[1], k[2], k[3]) for k in dr.tensors(iteration_folder(a["report"]["root"], it))}
        kb = {(k[0], k[1], k[2], k[3]) for k in dr.tensors(iteration_folder(b["report"]["root"], it))}
        assert ka == kb and len(ka) > 50


def model_names(folder):
    return {k[1] for k in dr.tensors(folder) if k[1].startswith(("Default_net", "Gradients_Default_net"))}


def test_model_op_names_do_not_shift_with_iterations_or_unrelated_ops(workload, tmp_path):
    a = workload("small", steps=2, config=ms_config(tmp_path / "a", iteration="0|1"))
    b = workload("small", steps=2, config=ms_config(tmp_path / "b", iteration="0|1"),
                 env={"OPDUMP_TEST_EXTRA_OPS": "1"})
    names = {(run, it): model_names(iteration_folder(r["report"]["root"], it))
             for run, r in (("a", a), ("b", b)) for it in (0, 1)}
    # SGD's momentum buffers make iteration 0's optimizer ops differ from iteration 1's: the model's
    # ops keep their names; ops outside the model in one run only rename nothing of the model
    assert len(names["a", 0]) == 12  # 6 forward, 6 backward
    assert names["a", 0] == names["a", 1] == names["b", 0] == names["b", 1]
    every_a = {k[1] for k in dr.tensors(iteration_folder(a["report"]["root"], 0))}
    every_b = {k[1] for k in dr.tensors(iteration_folder(b["report"]["root"], 0))}
    assert every_b - every_a == {"Default_mul-op0", "Default_add-op0", "Default_sum-op0"}  # the extra ops alone
    assert every_a <= every_b  # no op of run a changed its name


def test_backward_keeps_forward_names_under_bf16_autocast(workload, tmp_path):
    r = workload("small", steps=1, config=ms_config(tmp_path / "d"), extra=["--bf16"])
    backward = {k[1] for k in dr.tensors(iteration_folder(r["report"]["root"], 0)) if k[1].startswith("Gradients_")}
    # autocast dispatches the forward ops (fn.seqNr() is -1 there): their nodes still find them
    assert "Gradients_Default_net_conv1-Conv2d_conv2d-op0_ConvolutionBackward0_convolution_backward-op0" in backward
    assert all(n.startswith(("Gradients_Default_", "Gradients_AccumulateGrad-", "Gradients_ToCopyBackward0-"))
               for n in backward), backward


def test_a_gradient_summed_in_place_or_not_keeps_its_name(tmp_path):
    """PyTorch 2.x's autograd engine sums the two gradients of x in place (add_) while nothing else holds them and
    out of place (add) while something does: statistics still pending on the background thread, or here a hook
    that keeps them, in the second iteration only. The sum is named alike both times (by its counted type), so that
    iterations and runs pair it; its type says which it was. PyTorch 1.13 always sums out of place."""
    code = ("import sys, torch, opdump\n"
            "torch.manual_seed(0)\n"
            "opdump.set_dump(sys.argv[1])\n"
            "x = torch.randn(4, 8, requires_grad=True)\n"
            "for it in range(2):\n"
            "    x.grad = None\n"
            "    kept = []\n"
            "    a, b = x.clone(), x.clone()\n"  # CloneBackward0 hands each gradient to x as it is
            "    if it == 1:\n"
            "        a.register_hook(kept.append); b.register_hook(kept.append)\n"
            "    (a * b).sum().backward()\n"
            "    opdump.step()\n"
            "opdump.finalize_dump()\n")
    # (summarized as each op ends: nothing of the dump's own is pending when the engine sums)
    rows = execution_order_of(tmp_path, code, "0|1", host_work="inline")
    sums = {it: [(r["Op Name"], r["Op Type"]) for r in rows if r["Iteration"] == it and r["Op Name"].startswith(
        "Gradients/") and r["Op Type"] in ("add", "add_")] for it in ("0", "1")}
    assert [n for n, _ in sums["0"]] == [n for n, _ in sums["1"]] == ["Gradients/Default/add-op0"], sums
    names = {it: [r["Op Name"] for r in rows if r["Iteration"] == it] for it in ("0", "1")}
    assert names["0"] == names["1"]
    if torch.__version__ >= "2":
        assert [t for _, t in sums["0"]] == ["add_"] and [t for _, t in sums["1"]] == ["add"], sums
    else:
        assert [t for _, t in sums["0"]] == [t for _, t in sums["1"]] == ["add"], sums


def test_nodes_of_one_type_from_one_forward_op_get_names_of_their_own(tmp_path):
    """cosine_similarity makes two DivBackward0, two SqrtBackward0 and two PowBackward0 nodes: each
    node's ops are named apart ({node}-1 for the second), in every iteration alike, so that no two
    ops of an iteration share a name (a compare pairs ops by name)."""
    code = ("import sys, torch, opdump\n"
            "torch.manual_seed(0)\n"
            "lin = torch.nn.Linear(8, 8)\n"
            "opdump.register_model(lin, 'net')\n"
            "opdump.set_dump(sys.argv[1])\n"
            "x = torch.randn(4, 8, requires_grad=True)\n"  # both branches of the similarity have gradients
            "for _ in range(2):\n"
            "    lin.zero_grad(set_to_none=True); x.grad = None\n"
            "    torch.nn.functional.cosine_similarity(lin(x), x, dim=-1).sum().backward()\n"
            "    opdump.step()\n"
            "opdump.finalize_dump()\n")
    rows = execution_order_of(tmp_path, code, "0|1")
    names = {it: [row["Op Name"] for row in rows if row["Iteration"] == it] for it in ("0", "1")}
    assert len(names["0"]) > 12 and names["0"] == names["1"]
    assert len(set(names["0"])) == len(names["0"]), [n for n in names["0"] if names["0"].count(n) > 1]
    node = "Gradients/Default/cosine_similarity-op0/DivBackward0"
    first = [n for n in names["0"] if n.startswith(node + "/")]
    second = [n for n in names["0"] if n.startswith(node + "-1/")]
    assert first and [n.replace(node + "-1/", node + "/") for n in second] == first  # the same ops, named apart
    assert not any(n.startswith(node + "-2/") for n in names["0"])


def test_deep_models_need_no_generated_names(tmp_path):
    code = ("import torch, torchvision, opdump, json, sys\n"
            "opdump.set_dump(sys.argv[1])\n"
            "m = opdump.register_model(torchvision.models.mobilenet_v2(num_classes=10), 'mobilenet').module\n"
            "m(torch.randn(2, 3, 32, 32)).sum().backward()\n"
            "print(json.dumps(opdump.finalize_dump()))\n")
    proc = run_script(code, config_file(tmp_path, ms_config(tmp_path / "d", iteration="0")))
    assert json.loads(proc.stdout.splitlines()[-1])["files_written"] > 1000
    folder = tmp_path / "d" / "rank_0" / "net" / "0" / "0"
    assert not (folder / "mapping.csv").exists()
    names = os.listdir(folder)
    assert max(map(len, names)) <= 255 and all(dr.NPY.match(n) for n in names if n.endswith(".npy"))


def test_generated_names_are_stable_and_every_reader_resolves_them(run, tmp_path):
    model = "m" * 120  # forces names over 255 bytes at kernel level
    code = ("import torch, opdump, sys\n"
            "torch.manual_seed(0)\n"
            "opdump.set_dump(sys.argv[1])\n"
            f"m = opdump.register_model(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), {model!r}).module\n"
            "m(torch.randn(2, 4)).sum().backward()\n"
            "opdump.finalize_dump()\n")
    generated = []
    for side in ("a", "b"):
        run_script(code, config_file(tmp_path, ms_config(tmp_path / side, iteration="0", level="kernel"), f"{side}.json"))
        with open(tmp_path / side / "rank_0" / "net" / "0" / "0" / "mapping.csv") as f:
            rows = list(csv.reader(f))
        # the op-name field is the same in every run (only the timestamp field differs)
        generated.append(sorted(row[0].split(".")[1] for row in rows))
        assert all(len(row[0]) <= 255 and len(row[1]) > 255 for row in rows)
    assert generated[0] == generated[1] and generated[0]
    proc = run("compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "out", "-q", check=0)
    assert "no divergence found" in proc.stdout
    assert all(row["Match"] == "name" for row in csv.DictReader(open(tmp_path / "out" / "compare_result.csv")))
    run("stats", tmp_path / "a", "--csv", tmp_path / "stats.csv", check=0)
    rows = list(csv.DictReader(open(tmp_path / "stats.csv")))
    long_rows = [r for r in rows if model in r["Op Name"]]
    assert long_rows and {r["IO"] for r in long_rows} == {"input", "output"}


@pytest.mark.parametrize("device", DEVICES)
def test_dumping_never_changes_training(workload, tmp_path, device):
    plain = workload("small", steps=4, extra=["--device", device])
    dumped = workload("small", steps=4, config=ms_config(tmp_path / "d", saved_data="full"), extra=["--device", device])
    assert plain["losses"] == dumped["losses"]  # bit-identical floats
    assert plain["params"] == dumped["params"]
    assert dumped["report"]["ok"] and dumped["report"]["files_written"] > 100


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_op_dumps_the_value_before_mutation(workload, tmp_path, device):
    r = workload("inplace", steps=1, config=ms_config(tmp_path / "d"), extra=["--device", device])
    keys = dr.tensors(iteration_folder(r["report"]["root"], 0))
    mul = [k for k in keys if k[0] == "mul_" and k[1].startswith("Default_net-InPlace")]
    assert mul, sorted(keys)
    k_in = [k for k in mul if k[2] == "input" and k[3] == 0][0]
    k_out = [k for k in mul if k[2] == "output" and k[3] == 0][0]
    x = dr.load(keys[k_in])
    y = dr.load(keys[k_out])
    np.testing.assert_array_equal(y, x * 2.0)  # the input is the pre-mutation value
    lin_out = [k for k in keys if k[0] == "linear" and k[2] == "output"][0]
    np.testing.assert_array_equal(dr.load(keys[lin_out]), x)


@pytest.mark.parametrize("device", DEVICES)
def test_statistic_csv_equals_numpy_of_the_dumped_tensors(workload, tmp_path, device):
    cfg = ms_config(tmp_path / "d", iteration="0", saved_data="full",
                    common={"statistic_category": ["max", "min", "avg", "count", "nan count", "l2norm"]})
    r = workload("small", steps=1, config=cfg, extra=["--device", device])
    folder = iteration_folder(r["report"]["root"], 0)
    files = dr.tensors(folder)
    rows = dr.statistics(folder)
    assert len(rows) == len(files) > 50
    for row in rows:
        key = (row["Op Type"], dr.sanitize(row["Op Name"]), row["IO"], int(row["Slot"]))
        a = dr.load(files[key]).astype(np.float64)
        assert int(row["Count"]) == a.size
        if a.size == 0:
            continue
        assert float(row["Max Value"]) == pytest.approx(a.max(), rel=1e-6)
        assert float(row["Min Value"]) == pytest.approx(a.min(), rel=1e-6)
        assert float(row["Avg Value"]) == pytest.approx(a.mean(), rel=1e-5, abs=1e-7)
        assert float(row["L2Norm Value"]) == pytest.approx(np.sqrt((a * a).sum()), rel=1e-5)


# Host statistics are computed lazily on writer threads from the live tensors; the device path
# computes them with ATen ops when the op runs. Several steps, with and without undumped
# iterations between dumped ones (the writer threads finish while training goes on): parameters
# updated through views (linear's weight.t()), gradients zeroed through the .grad alias, in-place
# relu_ after batch_norm. Each of these once gave stale lazy statistics.
@pytest.mark.parametrize("iteration", ["all", "0|2|3"])
def test_statistics_mode_writes_no_tensors_and_matches_device_path(workload, tmp_path, iteration):
    host = workload("small", steps=4, config=ms_config(tmp_path / "h", iteration=iteration, saved_data="statistic",
                                                       common={"statistic_category": ["max", "min", "avg", "l2norm", "count"]}))
    dev = workload("small", steps=4, config=ms_config(tmp_path / "g", iteration=iteration, saved_data="statistic",
                                                      common={"statistic_category": ["max", "min", "avg", "l2norm"]},
                                                      device_path_on_cpu=True))
    # MindSpore's stat_calc_mode "device" on CPU tensors: the device is the host, and so are the kernels
    # (the ATen path is tens of times slower there: a resnet18 step took seconds instead of 0.1 s)
    same = workload("small", steps=4, config=ms_config(tmp_path / "s", iteration=iteration, saved_data="statistic",
                                                       common={"statistic_category": ["max", "min", "avg", "l2norm"]},
                                                       e2e={"stat_calc_mode": "device"}))
    dumped = [0, 1, 2, 3] if iteration == "all" else [0, 2, 3]
    assert sorted(int(i) for i in os.listdir(os.path.join(host["report"]["root"], "net", "0"))) == dumped
    for it in dumped:
        fh = iteration_folder(host["report"]["root"], it)
        fg = iteration_folder(dev["report"]["root"], it)
        assert glob.glob(os.path.join(fh, "*.npy")) == []
        rh = {(r["Op Name"], r["IO"], r["Slot"]): r for r in dr.statistics(fh)}
        rg = {(r["Op Name"], r["IO"], r["Slot"]): r for r in dr.statistics(fg)}
        rs = {(r["Op Name"], r["IO"], r["Slot"]): r for r in dr.statistics(iteration_folder(same["report"]["root"], it))}
        assert rh.keys() == rg.keys() == rs.keys() and len(rh) > 50
        for k, a in rh.items():
            b = rg[k]
            for col in ("Max Value", "Min Value", "Avg Value", "L2Norm Value"):
                assert rs[k][col] == a[col], (it, k, col)  # the host kernels, value for value
                if a[col] == "null":
                    assert b[col] == "null"
                else:
                    assert float(b[col]) == pytest.approx(float(a[col]), rel=1e-5, abs=1e-6), (it, k, col)


MOMENTUM_CATEGORIES = ["max", "min", "avg", "l2norm", "count", "zero count", "negative zero count",
                       "positive zero count", "nan count"]


def test_scaled_momentum_buffers_get_the_statistics_of_their_values(workload, tmp_path):
    """SGD's buf.mul_(0.9) scales a buffer whose statistics are remembered: statistics mode derives the
    product's from them instead of a pass over it (StatsCache::remember_scaled). They equal those
    computed from the tensors a full dump copies: min, max and counts exactly, sums within float32's
    rounding; and the add_ that then writes the buffer reads it as the product left it."""
    runs = {}
    for saved in ("statistic", "full"):
        cfg = ms_config(tmp_path / saved, iteration="all", saved_data=saved, common={"statistic_category": MOMENTUM_CATEGORIES})
        runs[saved] = workload("small", steps=3, config=cfg)
    assert runs["statistic"]["losses"] == runs["full"]["losses"]
    scaled = 0
    for it in (1, 2):  # the buffers exist from the first step's end
        rows = {}
        for saved in runs:
            folder = iteration_folder(runs[saved]["report"]["root"], it)
            rows[saved] = {(r["Op Name"], r["IO"], r["Slot"]): r for r in dr.statistics(folder)}
        assert rows["statistic"].keys() == rows["full"].keys()
        for key, full in rows["full"].items():
            if not re.fullmatch(r"Default/(mul|add)_-op\d+", key[0]):  # the optimizer's
                continue
            mine = rows["statistic"][key]
            scaled += key[0].startswith("Default/mul_") and key[1] == "output"
            for col in ("Max Value", "Min Value", "Count", "Zero Count", "Negative Zero Count", "Positive Zero Count",
                        "NaN Count"):
                assert mine[col] == full[col], (it, key, col)
            # Sums are within float32's rounding of the magnitudes summed (a mean near zero is mostly rounding).
            rms = float(full["L2Norm Value"]) / np.sqrt(float(full["Count"]))
            assert float(mine["Avg Value"]) == pytest.approx(float(full["Avg Value"]), abs=1e-6 * rms), (it, key)
            assert float(mine["L2Norm Value"]) == pytest.approx(float(full["L2Norm Value"]), rel=1e-6), (it, key)
    assert scaled == 2 * 6  # a buffer per parameter: conv1's, bn1's and fc's weights and biases
    # Derived, not summarized again: the product's sums are its input's times 0.9 (as float32) to the
    # last digits; the full dump's summaries of the copies, each rounded its own way, are not all so.
    def derived(rows):
        ins = {k[0]: r for k, r in rows.items() if k[0].startswith("Default/mul_") and k[1:] == ("input", "0")}
        return [float(r["Avg Value"]) == pytest.approx(float(ins[k[0]]["Avg Value"]) * float(np.float32(0.9)), rel=1e-12)
                for k, r in rows.items() if k[0].startswith("Default/mul_") and k[1] == "output"]
    assert all(derived(rows["statistic"])) and len(derived(rows["statistic"])) == 6
    assert not all(derived(rows["full"]))


SCALED_DENORMALS = r"""
tiny = torch.tensor([1e-45, -1e-45, 3e-45, 1.0, -2.0])  # the smallest denormal, its negative, twice it
opdump.set_dump(sys.argv[1] + ".json")
a = torch.neg(tiny)              # summarized and remembered
a.mul_(0.5)                      # half the smallest denormal rounds to zero
torch.abs(a)
b = torch.neg(tiny)
b.mul_(1.0)                      # (b's statistics done here, with denormals kept: what a product could derive from)
torch.set_flush_denormal(True)   # denormals read as zero
b.mul_(0.9)
torch.set_flush_denormal(False)
torch.abs(b)
c = torch.neg(tiny)
c.mul_(0.9)                      # nothing rounds to zero: derived
torch.abs(c)
opdump.finalize_dump()
"""


def test_scaled_statistics_are_not_derived_where_elements_could_round_to_zero(tmp_path):
    """A product whose elements may become zero (a factor of 0.5 or less, denormals flushed) is summarized
    again, not derived from the statistics of what it scaled: its zero count is the memory's."""
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush denormals")
    rows = [r for r in statistics_of(tmp_path, SCALED_DENORMALS, input_output=0,
                                     categories=("max", "min", "avg", "count", "zero count"))
            if r["Op Type"] == "abs" and r["IO"] == "input"]
    assert [int(r["Zero Count"]) for r in rows] == [2, 3, 0]  # as the memory holds them
    assert [r["Min Value"] for r in rows] == ["-0.5", "-0.9", "-0.9"]


# host_work "inline" summarizes as each op ends on its own thread, splitting tensors of 1 MB and up
# over torch's intra-op threads (resnet18's layer4 weights are 9.4 MB); "auto" does that when
# torch's threads take every core, so that no background thread competes with them.
def accumulation(op_name):
    """PyTorch 2.x's autograd sums two gradients of one tensor in place (add_) only when nothing else
    holds the first: while the background statistics thread holds it (until summarized) the sum runs
    as add. Same values, another op name: the two are one op here."""
    return re.sub(r"^(Gradients/Default/)add_(-op\d+)$", r"\1add\2", op_name)


def test_background_statistics_start_no_threads_beside_torchs(workload, tmp_path):
    """A writer thread that finds statistics still pending computes them itself; split over torch's
    intra-op threads from there, it started an OpenMP team (and torch's thread pool) of its own, whose
    threads took the writer's name: more spinning threads than cores, and every later step was slower
    (resnet18 on two cores: undumped steps 1.6x after the dump). Only opdump's named threads are added."""
    plain = workload("resnet18", steps=2, extra=("--threads", "2"))
    cfg = ms_config(tmp_path / "d", iteration="all", saved_data="statistic", host_work="background", writer_threads=1)
    dumped = workload("resnet18", steps=2, config=cfg, extra=("--threads", "2"))
    assert dumped["losses"] == plain["losses"]
    assert dumped["thread_counts"].get("opdump-writer") == 1, dumped["thread_counts"]
    assert dumped["thread_counts"].get("opdump-stats") == 1, dumped["thread_counts"]
    assert dumped["thread_counts"]["python3"] <= plain["thread_counts"]["python3"], (dumped, plain)


GRADIENTS_KEPT = r"""
import json, sys, torch, opdump
torch.manual_seed(0)
torch.set_num_threads(1)
class MatMul(torch.nn.Module):  # x @ w: w's gradient is the output of its own mm (Linear's is a transposed view)
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, n) / n ** 0.5)
    def forward(self, x):
        return x.mm(self.weight)
# Weights of 16 MB (and a convolution's): their gradients' statistics are still being computed on
# the background thread when autograd hands each gradient to its parameter.
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(64, 256, 3, padding=1)
        self.a, self.b = MatMul(2048), MatMul(2048)
    def forward(self, x):
        h = torch.relu(self.conv(x)).reshape(64, 2048)
        return self.b(torch.relu(self.a(h)))
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
arrived = {}
for name, p in net.named_parameters():
    p.register_hook(lambda g, name=name: arrived.__setitem__(name, g.data_ptr()))
x = torch.randn(64, 64, 2, 4)
def step():
    opt.zero_grad(set_to_none=True)  # (PyTorch 2.x's default)
    net(x).square().mean().backward()
    kept = sorted(n for n, p in net.named_parameters() if p.grad.data_ptr() == arrived[n])
    opt.step()
    return kept
plain = [step() for _ in range(2)]
opdump.register_model(net, "net")
opdump.hook_optimizer(opt)
opdump.set_dump(sys.argv[1])
dumped = [step() for _ in range(3)]
opdump.finalize_dump()
print(json.dumps({"plain": plain, "dumped": dumped, "names": sorted(n for n, _ in net.named_parameters())}))
"""


def test_gradients_handed_to_parameters_as_without_a_dump(tmp_path):
    """Autograd's AccumulateGrad makes a gradient the parameter's .grad only while nothing else holds it,
    and copies it otherwise. Statistics left for the background thread held each gradient until
    summarized, so a dump copied every gradient of every step where .grad is set to None between steps
    (PyTorch 2.x's zero_grad default): resnet18 on PyTorch 2.6 with one training thread, 1.22x of the
    undumped step against 1.12x without the copies. They now hold the gradient's memory, not the tensor."""
    cfg = ms_config(tmp_path / "d", iteration="all", saved_data="statistic", host_work="background")
    out = json.loads(run_script(GRADIENTS_KEPT, config_file(tmp_path, cfg)).stdout.strip().splitlines()[-1])
    assert out["plain"] == [out["names"]] * 2  # without a dump every gradient is kept as it arrived
    assert out["dumped"] == [out["names"]] * 3
    [folder] = glob.glob(str(tmp_path / "d" / "**" / "net" / "0" / "2"), recursive=True)
    summarized = {r["Op Type"] for r in dr.statistics(folder) if r["IO"] == "output"}
    assert {"mm", "convolution_backward"} <= summarized, summarized


GRADIENTS_READ = r"""
import json, sys, torch, opdump
torch.manual_seed(0)
torch.set_num_threads(2)
set_to_none = sys.argv[2] == "none"
# Convolutions: autograd hands each its weight's and bias's gradients as convolution_backward returned them
# (detached) when .grad is None; with .grad zeroed it adds them into it.
net = torch.nn.Sequential(torch.nn.Conv2d(16, 64, 3), torch.nn.ReLU(), torch.nn.Conv2d(64, 128, 3),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
opdump.register_model(net, "net")
opdump.hook_optimizer(opt)
opdump.set_dump(sys.argv[1])
x = torch.randn(4, 16, 12, 12)
grad_max = {}
for it in range(4):
    opt.zero_grad(set_to_none=set_to_none)
    net(x).square().mean().backward()
    if it == 3:
        net[2].weight.grad.mul_(0.5)  # written in place after autograd handed it over: read anew
        grad_max = {n: [int(p.numel()), float(p.grad.numpy().max())] for n, p in net.named_parameters()}
    opt.step()
r = opdump.finalize_dump()
print(json.dumps({"read": r["statistic_bytes_read"], "summarized": r["statistic_bytes"], "grad_max": grad_max,
                  "grad_bytes": sum(p.numel() * 4 for p in net.parameters())}))
"""


@pytest.mark.parametrize("host_work", ["inline", "background"])
def test_gradients_handed_to_parameters_are_not_summarized_again(tmp_path, host_work):
    """PyTorch 2.x's zero_grad sets .grad to None, and autograd then gives each parameter its gradient
    detached from the one its backward op returned: another tensor object over the same memory, whose
    statistics were made as that op's output. The optimizer reads it next; it is known from those, not
    read again (resnet18 on PyTorch 2.6: 46.8 MB a step, a third more than the optimizer's own passes).
    A gradient written in place after it was handed over is read anew."""
    out = {}
    for mode in ("none", "zeroed"):
        cfg = ms_config(tmp_path / mode, iteration="all", saved_data="statistic", host_work=host_work)
        out[mode] = json.loads(run_script(GRADIENTS_READ, config_file(tmp_path, cfg, mode + ".json"), mode)
                               .stdout.strip().splitlines()[-1])
    # Zeroed .grad: the sum into zeros takes the gradient's statistics (StatsCache::share). Set to None: the
    # detached gradient takes them. Three steps hand gradients over; a pass over them would read 3 x grad_bytes.
    assert 0 < out["none"]["read"] <= out["zeroed"]["read"] < out["zeroed"]["summarized"]
    assert out["none"]["grad_bytes"] > 300_000
    for mode in ("none", "zeroed"):
        [folder] = glob.glob(str(tmp_path / mode / "**" / "net" / "0" / "3"), recursive=True)
        read = {(int(r["Data Size"]) // 4, np.float32(r["Max Value"])) for r in dr.statistics(folder)  # (float32)
                if r["Op Type"] == "add_" and r["IO"] == "input" and r["Slot"] == "1"}
        for name, (count, biggest) in out[mode]["grad_max"].items():
            assert (count, np.float32(biggest)) in read, (mode, name, count, biggest, sorted(read))


def test_host_work_inline_gives_the_background_threads_statistics(workload, tmp_path):
    cores = os.cpu_count()
    cats = {"statistic_category": ["max", "min", "avg", "l2norm", "count", "zero count", "nan count"]}
    runs = {}
    for name, host_work, threads in [("background", "background", 2), ("inline", "inline", 2),
                                     ("auto_all_cores", "auto", cores), ("auto_one_thread", "auto", 1)]:
        cfg = ms_config(tmp_path / name, iteration="all", saved_data="statistic", common=cats, host_work=host_work)
        runs[name] = workload("resnet18", steps=2, config=cfg, extra=("--threads", str(threads)))
    assert runs["inline"]["losses"] == runs["background"]["losses"]  # dumping never changes the numbers
    assert "opdump-stats" in runs["background"]["thread_names"]
    assert "opdump-stats" not in runs["inline"]["thread_names"]
    assert "opdump-stats" not in runs["auto_all_cores"]["thread_names"]
    if cores > 1:
        assert "opdump-stats" in runs["auto_one_thread"]["thread_names"]
    for it in (0, 1):
        rows = {}
        for name in ("background", "inline"):
            folder = iteration_folder(runs[name]["report"]["root"], it)
            rows[name] = {(accumulation(r["Op Name"]), r["IO"], r["Slot"]): r for r in dr.statistics(folder)}
        assert rows["inline"].keys() == rows["background"].keys() and len(rows["inline"]) > 500
        big = 0
        for key, a in rows["background"].items():
            b = rows["inline"][key]
            big += int(a["Count"]) >= 2**18  # 1 MB of float32: split over the intra-op threads
            for col in ("Max Value", "Min Value", "Count", "Zero Count", "NaN Count"):
                assert b[col] == a[col], (it, key, col)
            for col in ("Avg Value", "L2Norm Value"):  # sums split differently round differently
                if a[col] == "null":
                    assert b[col] == "null"
                else:
                    assert float(b[col]) == pytest.approx(float(a[col]), rel=1e-6, abs=1e-12), (it, key, col)
        assert big > 20


def test_overflow_checks_run_as_each_op_ends_by_default(workload, tmp_path):
    """With a core free `auto` keeps statistics on the background thread, but runs overflow checks as each
    op ends: the operands' checks are then done, so most outputs are known clean from their bounds at
    once (resnet18: 1.11-1.12x of the undumped step against 1.17-1.19x on the background thread). Both
    placements check the same ops and lose no step's numbers."""
    runs = {}
    for host_work in ("auto", "background"):
        cfg = ms_config(tmp_path / host_work, iteration="all", saved_data="statistic", host_work=host_work,
                        common={"op_debug_mode": 3})
        runs[host_work] = workload("resnet18", steps=2, config=cfg, extra=("--threads", "1"))
    assert runs["auto"]["losses"] == runs["background"]["losses"]
    assert "opdump-stats" not in runs["auto"]["thread_names"]
    if os.cpu_count() > 1:
        assert "opdump-stats" in runs["background"]["thread_names"]
    counted = {k: runs[k]["report"]["overflow_checks"] for k in runs}
    assert counted["auto"] == counted["background"] > 300, counted


STATISTICS_DUMP = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
json.dump({"common_dump_settings": {"dump_mode": 0, "path": sys.argv[1], "net_name": "net", "iteration": "all",
           "saved_data": "statistic", "input_output": int(sys.argv[3]), "kernels": [], "support_device": [0],
           "statistic_category": json.loads(sys.argv[5])},
           "e2e_dump_settings": {"enable": True, **json.loads(sys.argv[4])}, "opdump": json.loads(sys.argv[6])},
          open(sys.argv[1] + ".json", "w"))
"""


def statistics_of(tmp_path, body, input_output, e2e=None, categories=("max", "min", "avg"), options=None):
    """The statistic rows of a dump `body` makes (Python after STATISTICS_DUMP, which writes the config
    file for opdump.set_dump(sys.argv[1] + ".json")); `e2e`: more e2e_dump_settings, `options`: the
    "opdump" object."""
    subprocess.run([PYTHON, "-c", STATISTICS_DUMP + body, str(tmp_path / "d"), str(BUILD / "python"), str(input_output),
                    json.dumps(e2e or {}), json.dumps(list(categories)), json.dumps(options or {})],
                   check=True, timeout=300)
    return dr.statistics(glob.glob(str(tmp_path / "d" / "**" / "statistic.csv"), recursive=True)[0].rsplit("/", 1)[0])


KERNEL_WITH_CHILDREN = r"""
import sys, torch
import opdump
lib = torch.library.Library("opdump_test", "DEF")
lib.define("scaled(Tensor x) -> Tensor")
# adds with an ATen op, then makes its result itself (from NumPy: no op)
lib.impl("scaled", lambda x: torch.from_numpy((x + 1).numpy() * 2), "CPU")
lib.define("twice(Tensor x) -> Tensor")
lib.impl("twice", lambda x: torch.mul(x, 2), "CPU")  # its result is its child's
opdump.set_dump(sys.argv[1])
x = torch.arange(6.0)
torch.ops.opdump_test.scaled(x)
torch.ops.opdump_test.twice(x)
opdump.step()
opdump.finalize_dump()
"""


def test_a_kernel_making_its_result_itself_is_dumped_beside_its_children(tmp_path):
    """At kernel level the innermost ops are dumped, and also an op with computing children that returns a
    tensor none of them returned nor it was given (PyTorch 2.x's oneDNN LSTM layer calls cat and add for its
    weights, then runs the recurrence itself: before, its results were in no dump at kernel level). A kernel
    that adds with ATen and makes its result from NumPy is dumped beside its add, with the values it returned; one
    returning its mul's result is not: the mul is."""
    run_script(KERNEL_WITH_CHILDREN, config_file(tmp_path, ms_config(tmp_path / "d", iteration="0", level="kernel")))
    files = [os.path.basename(f) for f in glob.glob(str(tmp_path / "d" / "**" / "*.npy"), recursive=True)]
    [scaled] = [f for f in files if f.startswith("scaled.") and ".output.0." in f]
    [out] = glob.glob(str(tmp_path / "d" / "**" / scaled), recursive=True)
    np.testing.assert_array_equal(np.load(out), (np.arange(6.0) + 1) * 2)
    types = {f.split(".")[0] for f in files}
    assert {"scaled", "add", "mul"} <= types and "twice" not in types, sorted(types)
    [order] = glob.glob(str(tmp_path / "d" / "**" / "ms_execution_order_graph_0.csv"), recursive=True)
    listed = [r["Op Type"] for r in csv.DictReader(open(order))]
    assert listed.index("add") < listed.index("scaled") < listed.index("mul") and "twice" not in listed, listed


NAMED_AT_EACH_LEVEL = r"""
import sys, torch
import opdump
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
opdump.register_model(m, "net")
opdump.set_dump(sys.argv[1])
m(torch.randn(2, 3, 8, 8)).sum().backward()
opdump.step()
opdump.finalize_dump()
"""


@pytest.mark.parametrize("level", ["api", "kernel"])
def test_tensor_names_list_every_parameter_and_buffer_at_each_level(tmp_path, level):
    """tensor_names.csv names every parameter and buffer of a registered model, and each named id is read by a
    listed op. At kernel level each is first seen as an input of an op whose children are the kernels (conv2d
    above mkldnn_convolution): before, those names went with the op's row, which a kernel-level dump does not
    write, and only num_batches_tracked (first seen by the innermost add_) was named."""
    cfg = ms_config(tmp_path / "d", iteration="0", saved_data="statistic", level=level)
    run_script(NAMED_AT_EACH_LEVEL, config_file(tmp_path, cfg))
    [names] = glob.glob(str(tmp_path / "d" / "**" / "tensor_names.csv"), recursive=True)
    named = {r["Name"]: r["Tensor"] for r in csv.DictReader(open(names))}
    assert set(named) == {"parameter net.0.weight", "parameter net.0.bias", "parameter net.1.weight",
                          "parameter net.1.bias", "buffer net.1.running_mean", "buffer net.1.running_var",
                          "buffer net.1.num_batches_tracked", "parameter net.3.weight", "parameter net.3.bias"}, named
    [order] = glob.glob(str(tmp_path / "d" / "**" / "ms_execution_order_graph_0.csv"), recursive=True)
    read = {i for r in csv.DictReader(open(order)) for i in r["Input Tensors"].split()}
    assert set(named.values()) <= read, (named, sorted(read))


ALIAS_WRITES = r"""
opdump.set_dump(sys.argv[1] + ".json")
x = torch.arange(1.0, 4.0 * 2**20 + 1)          # 16 MB: its statistics take a while on a writer thread
a = torch.neg(x)                                 # summarized lazily
a.data.mul_(0)                                   # written through a .data alias (another TensorImpl)
b = torch.neg(x)
b.view(1024, -1)[0].zero_()                      # written through a view
c = torch.neg(x)
c.detach().fill_(5)                              # through detach()
opdump.finalize_dump()
"""


@pytest.mark.parametrize("device_path", [False, True])
def test_writes_through_aliases_do_not_change_lazy_statistics(tmp_path, device_path):
    """An op that writes a tensor through another TensorImpl sharing its storage first finishes
    the tensor's pending statistics (host); the device path (the ATen reductions CUDA tensors take,
    here on the CPU) holds a staging copy made as the op ended, which such writes do not reach."""
    rows = [r for r in statistics_of(tmp_path, ALIAS_WRITES, input_output=2,
                                     options={"device_path_on_cpu": device_path})
            if r["Op Type"] == "neg" and r["IO"] == "output"]
    n = 4 * 2**20
    assert len(rows) == 3
    for r in rows:
        assert float(r["Max Value"]) == -1.0 and float(r["Min Value"]) == -float(n)
        assert float(r["Avg Value"]) == pytest.approx(-(n + 1) / 2, rel=1e-6)


MANY_DIMS = r"""
opdump.set_dump(sys.argv[1] + ".json")
x = torch.arange(-6.0, 6.0).reshape(2, 1, 3, 1, 1, 2, 1, 1, 1)   # more dimensions than a batched row holds inline
y = torch.arange(-3.0, 3.0).reshape(1, 2, 3)
for _ in range(3):
    torch.neg(x)
    torch.neg(y)
opdump.finalize_dump()
"""


def test_batched_rows_carry_every_dimension_and_size(tmp_path):
    """Rows batched for the writer (shapes of up to 8 dimensions held inline, longer ones apart) are
    written with their whole shape, data size and statistics, in execution order."""
    rows = [r for r in statistics_of(tmp_path, MANY_DIMS, input_output=2) if r["Op Type"] == "neg"]
    assert [(r["Shape"], r["Data Size"]) for r in rows] == [("(2,1,3,1,1,2,1,1,1)", "48"), ("(1,2,3)", "24")] * 3
    for r in rows:  # the negated aranges: 6 .. -5 and 3 .. -2
        n = 12 if r["Data Size"] == "48" else 6
        assert (float(r["Max Value"]), float(r["Min Value"]), float(r["Avg Value"])) == (n / 2, 1 - n / 2, 0.5)


UNSEEN_WRITES = r"""
import time
x = torch.arange(1.0, 2.0**20 + 1)                # 4 MB
opdump.set_dump(sys.argv[1] + ".json")
a = torch.neg(x)                                 # summarized lazily, on the background thread
time.sleep(1)                                    # (done by now)
a.numpy()[:] = 7.0                               # written unseen: no op, no version
torch.abs(a)
b = torch.neg(x)
b.numpy()[:] = 3.0                               # at once: its statistics may still be pending
torch.abs(b)
opdump.finalize_dump()
"""


def test_writes_no_op_shows_are_seen_by_the_next_op_reading_the_tensor(tmp_path):
    """A tensor written where no op and no version shows it (through NumPy) is summarized again as
    the next op's input: its remembered statistics are checked against sampled words of its memory
    once they are done (while they are pending, they will be computed from what the tensor holds)."""
    rows = [r for r in statistics_of(tmp_path, UNSEEN_WRITES, input_output=0) if r["Op Type"] == "abs" and r["IO"] == "input"]
    assert [(float(r["Min Value"]), float(r["Max Value"])) for r in rows] == [(7.0, 7.0), (3.0, 3.0)]


PLACEHOLDER_ROWS = r"""
a, out = torch.ones(3), torch.empty(3)
opdump.set_dump(sys.argv[1] + ".json")
for _ in range(50):
    torch.add(a, a, out=out)                     # input slot 2: a placeholder (out= buffer, not read)
    torch.neg(a)
opdump.finalize_dump()
"""


def test_a_placeholders_statistics_row_comes_in_its_ops_order(tmp_path):
    """A slot without data gets its empty row among its op's rows, in execution order."""
    rows = statistics_of(tmp_path, PLACEHOLDER_ROWS, input_output=0)
    assert [(r["Op Type"], r["IO"], r["Slot"]) for r in rows] == 50 * [
        ("add", "input", "0"), ("add", "input", "1"), ("add", "input", "2"), ("add", "output", "0"),
        ("neg", "input", "0"), ("neg", "output", "0")]
    empty = [r for r in rows if r["Slot"] == "2"]
    assert all(r["Data Size"] == "0" and r["Max Value"] == "null" and r["Shape"] == "(0)" for r in empty)


FIRST_IN_PLACE = r"""
g, x = torch.ones(2**20), torch.arange(2.0**20)   # 4 MB: summarized lazily unless known to be written
opdump.set_dump(sys.argv[1] + ".json")
g.add_(x)  # the dump's first op, with nothing cached or pending yet, writes its own input
opdump.finalize_dump()
"""


def test_the_first_in_place_op_of_a_dump_summarizes_its_input_before_writing(tmp_path):
    rows = {(r["IO"], r["Slot"]): r for r in statistics_of(tmp_path, FIRST_IN_PLACE, input_output=0) if r["Op Type"] == "add_"}
    before, after = rows[("input", "0")], rows[("output", "0")]
    assert float(before["Max Value"]) == float(before["Min Value"]) == 1.0  # ones, as add_ read them
    assert float(after["Max Value"]) == 2.0**20 and float(after["Min Value"]) == 1.0


PERMUTED_VIEWS = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
json.dump({"common_dump_settings": {"dump_mode": 0, "path": sys.argv[1], "net_name": "net", "iteration": "all",
           "saved_data": "statistic", "input_output": 1, "kernels": [], "support_device": [0],
           "statistic_category": ["max", "min", "avg", "l2norm", "count", "md5"]},
           "e2e_dump_settings": {"enable": True}}, open(sys.argv[1] + ".json", "w"))
torch.manual_seed(0)
w = torch.randn(300, 200)
x = torch.randn(2, 8, 30, 40).contiguous(memory_format=torch.channels_last)
opdump.set_dump(sys.argv[1] + ".json")
torch.neg(w.t())   # a transposed view: dense, not contiguous
torch.neg(x)       # channels last: dense, not contiguous
opdump.finalize_dump()
torch.save({"w": w, "x": x}, sys.argv[1] + ".pt")
"""


def test_statistics_of_dense_permuted_views(tmp_path):
    """Transposed and channels-last inputs are summarized in their memory's order without a copy:
    the same statistics as their values in element order, and md5 over the bytes in element order."""
    subprocess.run([PYTHON, "-c", PERMUTED_VIEWS, str(tmp_path / "d"), str(BUILD / "python")], check=True, timeout=300)
    import hashlib
    import torch
    saved = torch.load(str(tmp_path / "d") + ".pt")
    folder = glob.glob(str(tmp_path / "d" / "**" / "statistic.csv"), recursive=True)[0].rsplit("/", 1)[0]
    rows = [r for r in dr.statistics(folder) if r["Op Type"] == "neg" and r["IO"] == "input"]
    assert len(rows) == 2
    for row, t in zip(sorted(rows, key=lambda r: r["Op Name"]), (saved["w"].t(), saved["x"])):
        a = t.contiguous().numpy().astype(np.float64)
        assert int(row["Count"]) == a.size
        assert float(row["Max Value"]) == pytest.approx(a.max(), rel=1e-6)
        assert float(row["Min Value"]) == pytest.approx(a.min(), rel=1e-6)
        assert float(row["Avg Value"]) == pytest.approx(a.mean(), rel=1e-5, abs=1e-7)
        assert float(row["L2Norm Value"]) == pytest.approx(np.sqrt((a * a).sum()), rel=1e-5)
        assert row["MD5"] == hashlib.md5(t.contiguous().numpy().tobytes()).hexdigest()


FILLED_THEN_WRITTEN = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
json.dump({"common_dump_settings": {"dump_mode": 0, "path": sys.argv[1], "net_name": "net", "iteration": "all",
           "saved_data": "statistic", "input_output": 1, "kernels": [], "support_device": [0],
           "statistic_category": json.loads(sys.argv[3])},
           "e2e_dump_settings": {"enable": True}}, open(sys.argv[1] + ".json", "w"))
opdump.set_dump(sys.argv[1] + ".json")
n = 2**20
a = torch.neg(torch.arange(1.0, n + 1))
g = torch.empty(n)
g.zero_()                  # the way optimizer.zero_grad() leaves gradients for backward's add_
g.add_(a)
h = torch.empty(n, dtype=torch.float64)
h.fill_(2.5)
h.mul_(a)
opdump.finalize_dump()
"""


@pytest.mark.parametrize("categories", [["max", "min", "avg", "l2norm", "zero count"],
                                        ["max", "min", "avg", "l2norm", "zero count", "md5"]])
def test_inputs_just_filled_with_a_constant(tmp_path, categories):
    """The statistics of a tensor zero_/fill_ just wrote come from one element (no pass over
    it on the training thread); with md5 asked for, from the data. Either way they are exact."""
    subprocess.run([PYTHON, "-c", FILLED_THEN_WRITTEN, str(tmp_path / "d"), str(BUILD / "python"),
                    json.dumps(categories)], check=True, timeout=300)
    folder = glob.glob(str(tmp_path / "d" / "**" / "statistic.csv"), recursive=True)[0].rsplit("/", 1)[0]
    rows = {(r["Op Type"], r["Slot"]): r for r in dr.statistics(folder) if r["IO"] == "input"}
    n = 2**20
    zeros, filled = rows[("add_", "0")], rows[("mul_", "0")]
    assert [float(zeros[c]) for c in ("Max Value", "Min Value", "Avg Value", "L2Norm Value")] == [0, 0, 0, 0]
    assert int(zeros["Zero Count"]) == n
    assert [float(filled[c]) for c in ("Max Value", "Min Value", "Avg Value")] == [2.5, 2.5, 2.5]
    assert float(filled["L2Norm Value"]) == pytest.approx(2.5 * n ** 0.5, rel=1e-12)
    assert int(filled["Zero Count"]) == 0
    if "md5" in categories:
        import hashlib
        assert zeros["MD5"] == hashlib.md5(np.zeros(n, np.float32).tobytes()).hexdigest()
        assert filled["MD5"] == hashlib.md5(np.full(n, 2.5).tobytes()).hexdigest()


SECOND_DUMP_ASKS_MORE = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import opdump
root, first_dumps, categories = sys.argv[1], sys.argv[3] == "1", json.loads(sys.argv[4])
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))
def step():
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
opdump.register_model(m, "net"); opdump.hook_optimizer(opt)
def dump_settings(path, cats):
    s = {"dump_mode": 0, "path": path, "net_name": "net", "iteration": "all", "saved_data": "statistic",
         "input_output": 0, "kernels": [], "support_device": [0]}
    if cats: s["statistic_category"] = cats
    json.dump({"common_dump_settings": s, "e2e_dump_settings": {"enable": True}}, open(path + ".json", "w"))
    return path + ".json"
if first_dumps:
    opdump.set_dump(dump_settings(root + "/first", None))  # the default categories: no hash, no sign counts
step(); step()
if first_dumps:
    opdump.finalize_dump()
opdump.set_dump(dump_settings(root + "/second", categories))
step(); step()
opdump.finalize_dump()
"""


@pytest.mark.parametrize("asked", [["max", "min", "md5"], ["max", "negative zero count", "positive zero count", "zero count"]])
def test_statistics_remembered_by_an_earlier_dump_answer_only_what_it_asked(tmp_path, asked):
    """A tensor's statistics are remembered across dumps (the parameters' from one update to the next
    forward); a later dump in the same process that asks for more (a hash, the sign counts, which the
    default categories skip) gets them computed, not the earlier dump's without them: its rows equal
    those of the same training dumped only with those categories."""
    def rows(first_dumps):
        out = tmp_path / str(first_dumps)
        out.mkdir()
        run_script(SECOND_DUMP_ASKS_MORE, out, BUILD / "python", int(first_dumps), json.dumps(asked))
        found = {}  # by the iteration's place among the second dump's, op, side, slot
        files = sorted(glob.glob(str(out / "second" / "**" / "statistic.csv"), recursive=True))
        for i, f in enumerate(files):
            for r in dr.statistics(f.rsplit("/", 1)[0]):
                found[(i, r["Op Name"], r["IO"], r["Slot"])] = {k: v for k, v in r.items() if k != "Timestamp"}
        return found
    after_a_dump, alone = rows(True), rows(False)
    assert len(alone) > 100 and after_a_dump.keys() == alone.keys()
    assert all(r.get("MD5", "-") != "" for r in alone.values())
    assert after_a_dump == alone


# ---- the records below an api op ------------------------------------------------------------
# At api level nothing below an api op is named, listed or captured. After an operator's first call on a thread
# showed four or more records below it, none writing its inputs, PyTorch makes no records below it while it runs,
# unless another observer listens (OpTraits::records_below).

WRITES_BELOW = r"""
import sys, torch, opdump
torch.set_num_threads(1)
lib = torch.library.Library("opdump_test_below", "DEF")
lib.define("double_in_place(Tensor x) -> Tensor")  # writes x, and its schema does not say so
def double_in_place(x):  # and calls more than a few ops, below which records would be worth switching off
    x.mul_(2)
    return x.sum() + x.mean() + x.amax() + x.amin()
lib.impl("double_in_place", double_in_place, "CPU")
opdump.set_dump(sys.argv[1])
x = torch.ones(1 << 24)  # 64 MB: its add's statistics take the background thread milliseconds
for it in range(3):
    y = x + 1  # summarized on the background thread, after add returns
    torch.ops.opdump_test_below.double_in_place(y)
    opdump.step()
opdump.finalize_dump()
"""


def test_an_op_writing_its_input_below_it_finishes_pending_statistics_first_every_call(tmp_path):
    """An op whose schema does not say it writes its input, and whose implementation writes it through an op it
    calls (mul_), learns that on its first call: the records below it stay on, so that the mul_ finishes the add's
    statistics, pending on the background thread, before it doubles the add's result. Had they been switched off
    from the second call on, the add's output would be summarized after the mul_ (max 4, not 2)."""
    cfg = ms_config(tmp_path / "d", iteration="all", saved_data="statistic", host_work="background")
    run_script(WRITES_BELOW, config_file(tmp_path, cfg))
    for it in range(3):
        [folder] = glob.glob(str(tmp_path / "d" / "**" / "net" / "0" / str(it)), recursive=True)
        added = [r for r in dr.statistics(folder) if r["Op Type"] == "add" and r["IO"] == "output"]
        assert [(r["Max Value"], r["Min Value"]) for r in added] == [("2", "2")], (it, added)


PROFILED = r"""
import json, sys, torch, opdump
torch.set_num_threads(1)
m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opdump.register_model(m, "net")
opdump.set_dump(sys.argv[1])
with torch.autograd.profiler.profile() as prof:
    for _ in range(3):
        m(torch.randn(2, 8)).sum().backward()
        opdump.step()
opdump.finalize_dump()
print(json.dumps({e.key: e.count for e in prof.key_averages()}))
"""


def test_a_profiler_beside_an_api_level_dump_sees_every_op(tmp_path):
    """Records below api ops are switched off only while opdump's callback is the only one: a profiler running
    beside the dump still sees linear's addmm in every iteration, not only in the first (before opdump learned
    that linear writes none of its inputs)."""
    cfg = ms_config(tmp_path / "d", iteration="all", saved_data="statistic")
    counts = json.loads(run_script(PROFILED, config_file(tmp_path, cfg)).stdout.strip().splitlines()[-1])
    assert counts.get("aten::linear") == 6 and counts.get("aten::addmm") == 6, counts


# ---- replay: the dumped inputs reproduce the dumped outputs ----------------------------------

def rebuild(value, inputs, name):
    if isinstance(value, dict):
        if "tensor" in value:
            return inputs[value["tensor"]]
        if "tensors" in value:
            return [inputs[i] for i in value["tensors"]]
        if "device" in value:
            return torch.device(value["device"])
        raise ValueError(f"cannot rebuild {value}")
    if isinstance(value, list):
        return [rebuild(v, inputs, name) for v in value]
    if name in ("dtype", "input_dtype") and isinstance(value, int):
        return DTYPES[value]
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def replay_folder(folder):
    files = dr.tensors(folder)
    replayed = 0
    for spec in dr.kernel_args(folder):
        if spec["op_name"].startswith("Gradients/"):
            continue
        op_type = spec["operator"].split("::", 1)[1]
        name = dr.sanitize(spec["op_name"])
        n_in = sum(1 for k in files if k[:3] == (op_type, name, "input"))
        inputs = [torch.from_numpy(dr.load(files[(op_type, name, "input", i)]).copy()) for i in range(n_in)]
        args, kwargs = [], {}
        for a in spec["arguments"]:
            v = rebuild(a["value"], inputs, a["name"])
            if a["kwarg_only"]:
                kwargs[a["name"]] = v
            else:
                args.append(v)
        packet = getattr(torch.ops.aten, op_type)
        fn = getattr(packet, spec["overload"] or "default")
        with torch.no_grad():
            out = fn(*args, **kwargs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        n_out = sum(1 for k in files if k[:3] == (op_type, name, "output"))
        assert n_out == len([o for o in outs if isinstance(o, torch.Tensor)]), spec["op_name"]
        for i in range(n_out):
            expected = dr.load(files[(op_type, name, "output", i)])
            got = outs[i].detach().contiguous().numpy()
            assert got.dtype == expected.dtype and got.shape == expected.shape, spec["op_name"]
            assert got.tobytes() == expected.tobytes(), f"{spec['op_name']} output {i} differs on replay"
        replayed += 1
    return replayed


@pytest.mark.parametrize("model,steps", [("small", 2), ("resnet18", 2)])
def test_replay_reproduces_every_forward_api_op_bit_for_bit(workload, tmp_path, model, steps):
    torch.set_num_threads(1)
    r = workload(model, steps=steps, config=ms_config(tmp_path / "d", iteration="1", e2e={"save_kernel_args": True}))
    assert r["report"]["ok"]
    n = replay_folder(iteration_folder(r["report"]["root"], 1))
    assert n >= (8 if model == "small" else 60)


# ---- lifecycle, selection, environment ------------------------------------------------------

def test_acl_dump_list_selects_registered_models_and_layers(workload, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "acl"), "dump_list": [{"model_name": "net", "layer": ["conv2d", "linear"]}],
                    "dump_mode": "output"}}
    r = workload("small", steps=1, config=cfg)
    root = r["report"]["root"]  # {dump_path}/{time}/{device}
    assert os.path.dirname(os.path.dirname(root)) == str(tmp_path / "acl")
    folder = os.path.join(root, "net", "0", "0")
    keys = dr.tensors(folder)
    assert {k[0] for k in keys} == {"conv2d", "linear"}
    assert {k[2] for k in keys} == {"output"}
    # ops outside the model (loss, optimizer) are not dumped: dump_op_switch is off
    assert sorted(p for p in os.listdir(root) if p.endswith(".npy")) == []


def test_models_registered_before_set_dump_are_not_dumped(workload, tmp_path):
    cfg = {"dump": {"dump_path": str(tmp_path / "acl"), "dump_list": [{"model_name": "net"}]}}
    r = workload("small", steps=1, config=cfg, extra=["--register-before"])
    assert r["report"]["ops"] == 0


def test_set_dump_module_marks_what_is_dumped(workload, tmp_path):
    cfg = ms_config(tmp_path / "d", common={"dump_mode": 2})
    r = workload("small", steps=1, config=cfg, extra=["--mark"])
    keys = dr.tensors(iteration_folder(r["report"]["root"], 0))
    assert keys and all("fc-Linear" in k[1] for k in keys)


def test_kernels_filter(workload, tmp_path):
    cfg = ms_config(tmp_path / "d", common={"dump_mode": 1, "kernels": ["batch_norm", "name-regex(.*fc-Linear.*)"]})
    r = workload("small", steps=1, config=cfg)
    keys = dr.tensors(iteration_folder(r["report"]["root"], 0))
    # "batch_norm" is an op-type substring (it also matches native_batch_norm_backward); the
    # regex selects everything under fc-Linear, forward and backward.
    assert {k[0] for k in keys if "fc-Linear" not in k[1]} == {"batch_norm", "native_batch_norm_backward"}
    fc = {k[0] for k in keys if "fc-Linear" in k[1]}
    assert "linear" in fc and "mm" in fc  # AddmmBackward0's gradient is named after fc's linear


def test_environment_variable_turns_dumping_on(tmp_path):
    cfg = tmp_path / "env.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "envdump")))
    code = ("import torch, opdump\n"
            "m = torch.nn.Linear(4, 2)\n"
            "opdump.register_model(m, 'net')\n"
            "m(torch.ones(3, 4)).sum().backward()\n"
            "print(opdump.finalize_dump()['files_written'])\n")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), MINDSPORE_DUMP_CONFIG=str(cfg))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout.strip()) > 3
    assert glob.glob(str(tmp_path / "envdump" / "rank_0" / "net" / "0" / "0" / "linear.*.npy"))


def test_bad_config_is_a_clear_error_not_a_crash(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"dump": {"dump_mode": "sideways"}}')
    code = "import opdump\ntry:\n  opdump.set_dump(%r)\nexcept opdump.ConfigError as e:\n  print('ERR', e)\n" % str(cfg)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith("ERR") and "dump.dump_mode" in out.stdout and "sideways" in out.stdout


def test_dump_folder_removed_mid_run_training_goes_on(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "gone")))
    code = ("import os, torch, opdump\n"
            f"opdump.set_dump({str(cfg)!r})\n"
            "m = opdump.register_model(torch.nn.Linear(64, 64), 'net').module\n"
            "x = torch.randn(8, 64)\n"
            "m(x).sum().backward(); opdump.step()\n"
            f"os.rename({str(tmp_path / 'gone')!r}, {str(tmp_path / 'moved')!r})\n"  # gone, atomically
            "for _ in range(3):\n  m(x).sum().backward(); opdump.step()\n"
            "r = opdump.finalize_dump()\n"
            "print('OK', r['ok'], r['files_written'] + r['files_lost'] > 0)\n")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OK False True"
    # the failure was reported, naming the folder
    assert f"the dump folder {tmp_path / 'gone'}/rank_0 was deleted while dumping" in out.stderr, out.stderr


def test_two_ranks_over_gloo(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "dist", common={"support_device": [0, 1]})))
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), OPDUMP_PYTHONPATH=str(BUILD / "python"),
                   RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533",
                   USE_LIBUV="0")  # Debian 13's torch 2.6 has no libuv; 1.13 ignores it
        procs.append(subprocess.Popen([PYTHON, os.path.join(os.path.dirname(__file__), "torch_workload.py"),
                                       "--model", "small", "--steps", "2", "--distributed", "--config", str(cfg),
                                       "--result", str(tmp_path / f"r{rank}.json")],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    r0 = json.load(open(tmp_path / "r0.json"))
    r1 = json.load(open(tmp_path / "r1.json"))
    assert r0["report"]["root"].endswith("rank_0") and r1["report"]["root"].endswith("rank_1")
    for rank in (0, 1):
        assert glob.glob(str(tmp_path / "dist" / f"rank_{rank}" / "net" / "0" / "1" / "conv2d.*.npy"))
    # identical data on both ranks: same names
    k0 = set(dr.tensors(str(tmp_path / "dist" / "rank_0" / "net" / "0" / "0")))
    k1 = set(dr.tensors(str(tmp_path / "dist" / "rank_1" / "net" / "0" / "0")))
    assert {k[:2] for k in k0} == {k[:2] for k in k1}


def test_support_device_filters_ranks(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "sd", common={"support_device": [0]})))
    code = ("import torch, opdump\n"
            f"opdump.set_dump({str(cfg)!r})\n"
            "m = opdump.register_model(torch.nn.Linear(4, 4), 'net').module\n"
            "m(torch.ones(2, 4)).sum().backward()\n"
            "print(opdump.finalize_dump()['ops'])\n")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), RANK="1", LOCAL_RANK="1")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "0"


@needs_cuda
def test_cuda_tensors_of_a_side_stream_are_dumped_after_their_kernels(tmp_path):
    """A host copy waits for the stream the op ran on, not the default one: a large product on a side
    stream is still running when its copy is queued."""
    cfg = config_file(tmp_path, ms_config(tmp_path / "d", iteration="0"))
    code = """
import sys, torch, opdump, numpy as np
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4096, 4096)
    def forward(self, x):
        return torch.relu(self.fc(x) @ x)  # about 2 ms of GPU work before relu's output is ready
opdump.set_dump(sys.argv[1])
m = opdump.register_model(Net().cuda(), 'net').module
x = torch.randn(4096, 4096, device='cuda')
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = m(x)
torch.cuda.current_stream().wait_stream(s)
np.save(sys.argv[2], y.detach().cpu().numpy())
assert opdump.finalize_dump()['ok']
"""
    run_script(code, cfg, tmp_path / "y.npy")
    keys = dr.tensors(iteration_folder(str(tmp_path / "d" / "rank_0"), 0))
    relu = [k for k in keys if k[0] == "relu" and k[2] == "output"]
    assert len(relu) == 1, sorted(keys)
    np.testing.assert_array_equal(dr.load(keys[relu[0]]), np.load(tmp_path / "y.npy"))


def test_dataloader_workers_and_autograd_threads_are_safe(tmp_path):
    """Forked DataLoader workers run ops too: they must not dump (nor hang on the parent's writer)."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(ms_config(tmp_path / "dl", saved_data="full")))
    code = ("import torch, opdump\n"
            "from torch.utils.data import DataLoader, Dataset\n"
            "class D(Dataset):\n"
            "    def __len__(self): return 16\n"
            "    def __getitem__(self, i): return torch.randn(8) * 2 + 1, torch.tensor(i % 3)\n"
            f"opdump.set_dump({str(cfg)!r})\n"
            "m = opdump.register_model(torch.nn.Linear(8, 3), 'net').module\n"
            "opt = opdump.hook_optimizer(torch.optim.SGD(m.parameters(), lr=0.1))\n"
            "for x, y in DataLoader(D(), batch_size=4, num_workers=2):\n"
            "    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()\n"
            "r = opdump.finalize_dump()\n"
            "print(r['ok'], r['files_written'] > 0)\n")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True True"
    names = {k[1] for k in dr.tensors(str(tmp_path / "dl" / "rank_0" / "net" / "0" / "0"))}
    assert all(n.startswith(("Default", "Gradients")) for n in names)
    assert not any("randn" in n for n in names)  # the workers' ops were not dumped


def test_execution_order_and_graph_files(workload, tmp_path):
    r = workload("small", steps=3, config=ms_config(tmp_path / "d", iteration="0|2"))
    root = r["report"]["root"]
    rows = list(csv.DictReader(open(os.path.join(root, "execution_order", "ms_execution_order_graph_0.csv"))))
    assert {row["Iteration"] for row in rows} == {"0", "2"}
    first = [row for row in rows if row["Iteration"] == "0"]
    assert [int(row["Task ID"]) for row in first] == list(range(len(first)))  # execution index
    dumped = {k[1] for k in dr.tensors(iteration_folder(root, 0))}
    assert {dr.sanitize(row["Op Name"]) for row in first} >= dumped  # every dumped op is listed
    conv = [row for row in first if row["Op Type"] == "conv2d"][0]
    bn = [row for row in first if row["Op Type"] == "batch_norm"][0]
    assert conv["Output Tensors"].split()[0] in bn["Input Tensors"].split()  # the data flow is visible
    history = open(os.path.join(root, "execution_order", "ms_global_execution_order_graph_0.csv")).read().split()
    assert history == ["0", "2"]
    ir = open(os.path.join(root, "graphs", "ms_output_trace_code_graph_0.ir")).read()
    assert "conv2d(" in ir and "Default/net-Small/conv1-Conv2d/conv2d-op" in ir
    # the Python line each op was called from (torch's own frames skipped)
    lines = ir.splitlines()
    at = next(i for i, line in enumerate(lines) if "conv1-Conv2d/conv2d-op" in line)
    assert lines[at + 1].strip().startswith("# In file ") and "torch_workload.py:" in lines[at + 1]
    source_line = int(lines[at + 1].rsplit(":", 1)[1])
    workload_text = open(os.path.join(os.path.dirname(__file__), "torch_workload.py")).read().splitlines()
    assert "conv(x)" in workload_text[source_line - 1]


def test_execution_order_lists_every_tensor_of_an_op_with_many(tmp_path):
    """An op with more tensors than its context holds inline (a cat of twelve) lists every id, in
    slot order, as the ops that made them list theirs; and ops nested in one another each keep
    their own ids."""
    code = ("import sys, torch, opdump\n"
            "opdump.set_dump(sys.argv[1])\n"
            "parts = [torch.full((2,), float(i)).mul(2) for i in range(12)]\n"
            "both = torch.cat(parts)\n"
            "torch.nn.functional.linear(both.view(3, 8), torch.ones(4, 8), torch.ones(4)).sum()\n"
            "opdump.finalize_dump()\n")
    rows = execution_order_of(tmp_path, code, "0")
    by_type = lambda t: [row for row in rows if row["Op Type"] == t]
    muls, [cat], [linear], [total] = by_type("mul"), by_type("cat"), by_type("linear"), by_type("sum")
    made = [m["Output Tensors"].split()[0] for m in muls]
    assert len(made) == 12 and len(set(made)) == 12 and "-" not in made
    assert cat["Input Tensors"].split() == made
    # the view of the cat's result (its storage: its id), the weight, the bias
    ins = linear["Input Tensors"].split()
    assert len(ins) == 3 and ins[0] == cat["Output Tensors"] and len(set(ins)) == 3
    assert total["Input Tensors"].split() == linear["Output Tensors"].split()


def test_compiled_models_run_eagerly_while_dumped(tmp_path):
    """PyTorch 2.x: torch.compile'd code is dumped op by op (it runs eagerly while a dump is
    configured, with a warning), also when it was compiled before; finalize_dump restores it."""
    if not hasattr(torch, "compile"):
        pytest.skip("PyTorch 1.x has no torch.compile")
    cfg = config_file(tmp_path, ms_config(tmp_path / "d", iteration="0"))
    code = ("import json, sys, warnings, torch, opdump\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "from torch_workload import Small\n"
            "torch.manual_seed(0)\n"
            "model = Small()\n"
            "compiled = torch.compile(model, backend='eager')\n"  # dynamo only: no C++ compiler needed
            "x = torch.randn(4, 3, 16, 16)\n"
            "compiled(x)\n"  # compiled (and cached) before the dump
            "opdump.register_model(model, 'net')\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    opdump.set_dump(sys.argv[1])\n"
            "compiled(x).sum().backward()\n"
            "report = opdump.finalize_dump()\n"
            "print(json.dumps({'warnings': [str(w.message) for w in caught], 'report': report,\n"
            "                  'disabled_after': bool(getattr(torch._dynamo.config, 'disable', False))}))\n")
    proc = run_script(code, cfg, os.path.dirname(__file__))
    out = json.loads(proc.stdout.splitlines()[-1])
    assert any("torch.compile'd code runs eagerly" in w for w in out["warnings"]), out["warnings"]
    assert not out["disabled_after"]
    names = {k[1] for k in dr.tensors(iteration_folder(str(tmp_path / "d" / "rank_0"), 0))}
    assert {"Default_net-Small_conv1-Conv2d_conv2d-op0", "Default_net-Small_fc-Linear_linear-op0",
            "Gradients_Default_net_conv1-Conv2d_conv2d-op0_ConvolutionBackward0_convolution_backward-op0"} <= names


def test_torch2_foreach_optimizer_and_fused_attention_are_dumped(tmp_path):
    """PyTorch 2.x kernels: a _foreach_ optimizer step (tensor lists: one slot per tensor) and
    scaled_dot_product_attention are dumped like any op."""
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        pytest.skip("PyTorch 1.x has neither")
    cfg = config_file(tmp_path, ms_config(tmp_path / "d", iteration="0"))
    code = ("import sys, torch, opdump\n"
            "torch.manual_seed(0)\n"
            "class Attention(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.qkv = torch.nn.Linear(16, 48)\n"
            "    def forward(self, x):\n"
            "        q, k, v = self.qkv(x).view(2, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)\n"
            "        return torch.nn.functional.scaled_dot_product_attention(q, k, v).sum()\n"
            "m = opdump.register_model(Attention(), 'net').module\n"
            "opt = opdump.hook_optimizer(torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True))\n"
            "opdump.set_dump(sys.argv[1])\n"
            "m(torch.randn(2, 5, 16)).backward(); opt.step()\n"
            "print(opdump.iteration(), opdump.finalize_dump()['ok'])\n")
    proc = run_script(code, cfg)
    assert proc.stdout.split() == ["1", "True"]  # the step post-hook ended iteration 0
    keys = dr.tensors(iteration_folder(str(tmp_path / "d" / "rank_0"), 0))
    sdpa = {k for k in keys if k[0] == "scaled_dot_product_attention"}
    assert {(k[2], k[3]) for k in sdpa} == {("input", 0), ("input", 1), ("input", 2), ("output", 0)}
    # SGD's foreach step: the parameter list (2 tensors: weight, bias) is one slot per tensor
    foreach = {(k[0], k[2], k[3]) for k in keys if k[0].startswith("_foreach_")}
    assert ("_foreach_add_", "input", 0) in foreach and ("_foreach_add_", "input", 1) in foreach, sorted(foreach)
