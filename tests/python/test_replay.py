"""opdump replay on real training steps: every dumped op re-run from its dumped inputs and recorded
arguments, judged against float64 by its dtype's standard. Faulty kernels planted in the run are
found from that one run and nothing else is flagged; fp32, bf16-autocast and dropout runs are clean."""
import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, PYTHON, ms_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPLAY = BUILD / "opdump_replay"
pytestmark = pytest.mark.skipif(not REPLAY.exists(), reason="built without the PyTorch adapter")

# The replay benchmark's training step (an MLP block: linear, layer_norm, gelu, tanh, sigmoid,
# log_softmax), with its planted faults: sigmoid 0.2% too large, a float32 tanh computed in bfloat16.
sys.path.insert(0, str(ROOT / "bench"))
from replay_bench import TRAIN  # noqa: E402


def replay_dump(dump, tmp_path, env=None):
    """`opdump replay` of the dump folder `dump` into tmp_path/replay: its process and that folder."""
    out = tmp_path / "replay"
    replay = subprocess.run([str(BUILD / "opdump"), "replay", str(dump), "-o", str(out)],
                            capture_output=True, text=True, timeout=600, env=env)
    return replay, out


def dump(tmp_path, *flags, save_args=True, saved_data="tensor", model="mlp", faults=None, iteration="1", **opdump):
    """The replay bench's training step dumped into tmp_path/d (its config tmp_path/c.json)."""
    tmp_path.mkdir(exist_ok=True)
    cfg = ms_config(tmp_path / "d", iteration=iteration, saved_data=saved_data, e2e={"save_kernel_args": save_args},
                    **opdump)
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    faults = faults or ("sigmoid,tanh_bf16" if "--faulty" in flags else "none")
    flags = [f for f in flags if f != "--faulty"]
    proc = subprocess.run([PYTHON, "-c", TRAIN, str(tmp_path / "c.json"), str(BUILD / "python"), model, faults, *flags],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "d"


def dump_and_replay(tmp_path, *flags, **options):
    return replay_dump(dump(tmp_path, *flags, **options), tmp_path)


def results(out):
    rows = list(csv.DictReader(open(out / "replay_result.csv")))
    return rows, json.load(open(out / "replay_summary.json"))


def test_fp32_step_replays_clean(tmp_path):
    replay, out = dump_and_replay(tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["ops"]["replayed"] == summary["ops"]["total"] > 40, summary
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    assert summary["first_error"] is None and "no op fails on its own inputs" in replay.stdout
    assert {r["OpType"] for r in rows} >= {"linear", "layer_norm", "gelu", "tanh", "sigmoid", "log_softmax", "addmm",
                                           "native_layer_norm_backward", "gelu_backward"} - {"addmm"}
    judged = [r for r in rows if r["Result"] == "pass"]
    assert all(r["Standard"].startswith(r["DataType"] + ":") for r in judged), judged[:3]
    assert all(float(r["RelL2Error"]) <= 1.2207e-4 for r in judged if r["DataType"] == "Float")


def test_planted_faulty_kernels_found_and_nothing_else(tmp_path):
    replay, out = dump_and_replay(tmp_path, "--faulty")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    flagged = {(r["OpType"], r["OpName"]) for r in rows if r["Result"] in ("error", "warning")}
    assert flagged == {("tanh", "Default/net-Mlp/tanh-op0"), ("sigmoid", "Default/net-Mlp/sigmoid-op0")}, flagged
    assert all(r["Result"] == "error" for r in rows if (r["OpType"], r["OpName"]) in flagged)
    first = summary["first_error"]
    assert first["op_type"] == "tanh" and "rel_l2" in first["reason"], first  # tanh runs first in forward
    assert "first op that fails on its own inputs: tanh Default/net-Mlp/tanh-op0" in replay.stdout
    # the HTML report: the first error named, the failing rows listed before every row
    html = (out / "replay_report.html").read_text()
    assert "First op that fails on its own inputs</b>: tanh Default/net-Mlp/tanh-op0 output.0" in html, html[:2000]
    failing = html[html.index('<table id="failing">'):html.index('<table id="rows">')]
    assert failing.count('<tr class="error">') == sum(r["Result"] == "error" for r in rows) > 0
    assert html.count("<tr class=") == len(rows) + failing.count("<tr class=")
    assert subprocess.run([str(BUILD / "opdump"), "replay", str(tmp_path / "d"), "-o", str(out), "-q",
                           "--fail-on", "error"], timeout=600).returncode == 3


def test_a_faulty_kernel_only_backward_calls_is_found_in_backward_alone(tmp_path):
    """A matrix product 0.3% too large: the MLP's linear layers call addmm in forward and mm only for their
    gradients. The replay flags those gradient products and nothing in forward."""
    replay, out = dump_and_replay(tmp_path, faults="mm")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    flagged = {(r["OpType"], r["OpName"]) for r in rows if r["Result"] in ("error", "warning")}
    assert flagged and {op for op, _ in flagged} == {"mm"}, flagged
    assert all(name.startswith("Gradients/") for _, name in flagged), flagged
    assert summary["first_error"]["op_type"] == "mm", summary["first_error"]


def test_a_kernel_that_reads_memory_it_never_wrote_is_named_for_it(tmp_path):
    """The replay runs each op on new memory filled with zeros and again with NaN junk: outputs finite on one and
    not on the other were computed from memory the kernel never wrote. The run uses PyTorch's own sigmoid; the
    replay a faulty one, preloaded (tests/tools/unwritten_sigmoid.cc), that adds zero times memory it never wrote.
    It is the one error, named for that, though its values on zeros (and the dumped ones) are right. (Debian's
    PyTorch 2.6 convolution backward is such a kernel in some processes: docs/replay.md.)"""
    faulty = BUILD / "tests" / "libopdump_unwritten_sigmoid.so"
    assert faulty.exists(), faulty
    dump_and_replay(tmp_path)
    replay, out = replay_dump(tmp_path / "d", tmp_path, env={**os.environ, "LD_PRELOAD": str(faulty)})
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    flagged = [r for r in rows if r["Result"] in ("error", "warning")]
    assert [(r["OpType"], r["OpName"], r["TensorIndex"], r["Result"]) for r in flagged] == [
        ("sigmoid", "Default/net-Mlp/sigmoid-op0", "output.0", "error")], flagged
    reason = flagged[0]["Reason"]
    elements = 32 * 128
    assert reason.startswith(f"reads memory it never wrote: {elements} of {elements} elements are finite"), reason
    assert "as dumped" not in reason, reason  # the dumped values pass the standard
    assert summary["first_error"]["op_type"] == "sigmoid", summary["first_error"]


def test_a_cpu_kernel_reading_unwritten_memory_is_not_blamed_on_an_op_that_ran_elsewhere(tmp_path):
    """The replay runs CPU kernels. Where the args file says the op ran on another device (here sigmoid's, its
    tensors' device_type rewritten to CUDA's), the CPU kernel is not the one that made the dump: the faulty sigmoid,
    preloaded, reading unwritten memory is a warning about this machine, and the dumped values pass."""
    d = dump(tmp_path)
    args = [f for f in d.rglob("sigmoid.*.json")]
    assert len(args) == 1, args
    spec = json.loads(args[0].read_text())
    moved = 0
    for a in spec["arguments"]:
        if isinstance(a.get("value"), dict) and "device_type" in a["value"]:
            a["value"]["device_type"] = 1  # c10::DeviceType::CUDA
            moved += 1
    assert moved == 1, spec
    args[0].write_text(json.dumps(spec))
    env = {**os.environ, "LD_PRELOAD": str(BUILD / "tests" / "libopdump_unwritten_sigmoid.so")}
    replay, out = replay_dump(d, tmp_path, env=env)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    sigmoid = [r for r in rows if r["OpType"] == "sigmoid"]
    assert [r["Result"] for r in sigmoid] == ["pass"], sigmoid
    warning = ("this PyTorch's CPU kernel of sigmoid reads memory it never wrote; the op did not run on the CPU (or its "
               "args file does not say where it ran), so its dumped outputs were judged against float64 alone")
    assert summary["warnings"] == [warning], summary["warnings"]
    assert "opdump: warning: " + warning in replay.stderr


def test_a_kernel_of_the_comparing_pytorch_that_reads_memory_it_never_wrote_blames_no_op(tmp_path):
    """Compare's cross-replay runs the reference's op on this machine beside another stack's dump. Where this
    PyTorch's kernel reads memory it never wrote (the faulty sigmoid, preloaded), that says nothing of the dumps:
    an fp32 run against a bf16-autocast one (no fault) stays clean, and a sigmoid planted 0.2% off in the fp32
    run is still named, for its values, each judged against float64 alone and said so in the notes."""
    env = {**os.environ, "LD_PRELOAD": str(BUILD / "tests" / "libopdump_unwritten_sigmoid.so")}
    fp32 = dump(tmp_path / "fp32", iteration="0")
    bf16 = dump(tmp_path / "bf16", "--bf16", iteration="0")
    faulty = dump(tmp_path / "faulty", faults="sigmoid", iteration="0")

    def compare(target, reference, out):
        proc = subprocess.run([str(BUILD / "opdump"), "compare", str(target), str(reference), "-o", str(out), "-q"],
                              capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        return json.loads((out / "compare_summary.json").read_text())

    aside = ("this PyTorch's kernel of sigmoid reads memory it never wrote, so the target's outputs of those ops "
             "were judged against float64 alone")
    clean = compare(bf16, fp32, tmp_path / "clean")
    assert clean["first_divergence"] is None, clean["first_divergence"]
    assert any(n.startswith("cross-replay: re-ran ") and n.endswith(aside) for n in clean["notes"]), clean["notes"]
    named = compare(faulty, bf16, tmp_path / "named")["first_divergence"]
    assert named and (named["op_type"], named["op_name"]) == ("sigmoid", "Default/net-Mlp/sigmoid-op0"), named
    assert "its output strays: output.0 rel_l2 0.002" in named["cause"], named
    assert "never wrote" not in named["cause"], named


def test_bf16_autocast_and_dropout_replay_clean(tmp_path):
    replay, out = dump_and_replay(tmp_path, "--bf16", "--dropout")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] in ("error", "warning")]
    skipped = [r for r in rows if r["Result"] == "skipped"]
    assert skipped and all("random number generator" in r["Reason"] for r in skipped), skipped
    assert {r["OpType"] for r in skipped} <= {"dropout", "native_dropout", "bernoulli_"}
    assert summary["ops"]["skipped"] <= 0.2 * summary["ops"]["total"], summary["ops"]
    # the ops autocast ran in bfloat16 are judged by the bfloat16 standard
    linear = [r for r in rows if r["OpType"] == "linear" and r["Result"] == "pass"]
    assert linear and all(r["DataType"] == "BFloat16" for r in linear), linear


def test_a_bf16_kernel_that_leans_one_way_within_the_norm_bounds_is_found(tmp_path):
    """The CNN's first conv channel 0.5% too large under bfloat16 autocast: the convolution's rel_l2 is
    about 0.2%, well within bfloat16's 1.6%, but its errors beyond rounding all lean one way. The same step
    without the fault is clean (its bfloat16 convolutions, batch norms and their gradients included)."""
    faulty, out = dump_and_replay(tmp_path / "faulty", "--bf16", model="cnn", faults="conv_channel")
    assert faulty.returncode == 0, faulty.stderr
    rows, summary = results(out)
    flagged = {(r["OpType"], r["OpName"]) for r in rows if r["Result"] in ("error", "warning")}
    assert {op for op, _ in flagged} == {"conv2d"}, flagged
    conv = [r for r in rows if r["OpType"] == "conv2d" and r["Result"] == "error"]
    assert all(r["DataType"] == "BFloat16" and "systematic" in r["Reason"] for r in conv), conv
    assert all(float(r["RelL2Error"]) < 0.015625 for r in conv), conv  # within the norm bound: found by its lean
    clean, out = dump_and_replay(tmp_path / "clean", "--bf16", model="cnn")
    assert clean.returncode == 0, clean.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"
                                                                         and r["Result"] != "skipped"]
    bf16 = [r for r in rows if r["DataType"] == "BFloat16" and r["Result"] == "pass"]
    assert {r["OpType"] for r in bf16} >= {"conv2d", "linear"}, {r["OpType"] for r in bf16}


def test_composites_autocast_reaches_inside_and_dropout_zero_replay_clean(tmp_path):
    """The sequence model under bfloat16 autocast: the gru returns float32 but runs its linear layers in
    bfloat16, so it is judged at bfloat16's bounds (at float32's its error is 30x them); the transformer layer's
    dropouts, built with dropout=0.0, draw nothing and are replayed; its float32 residual plus bfloat16 attention
    output is judged at float32 (the bfloat16 input's rounding is upstream's), not skipped as rounding noise."""
    replay, out = dump_and_replay(tmp_path / "bf16", "--bf16", model="seq")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == summary["ops"]["skipped"] == 0, \
        [r for r in rows if r["Result"] != "pass"]
    gru = [r for r in rows if r["OpType"] == "gru"]
    assert gru and all(r["DataType"] == "Float" and r["Standard"].startswith("Float computed in BFloat16 under autocast")
                       and float(r["RelL2Error"]) > 8 * 1.2207e-4 for r in gru), gru
    dropout = [r for r in rows if r["OpType"] == "dropout"]
    assert len(dropout) == 3 and all(r["Result"] == "pass" for r in dropout), dropout
    residual = [r for r in rows if r["OpType"] == "add" and "TransformerEncoderLayer/add-op" in r["OpName"]]
    assert len(residual) == 2 and all(r["Standard"].startswith("Float: rel_l2 <= 0.00012207") for r in residual), residual
    # a faulty in-place sigmoid, which the gru's gates call, is found in the gru alone (float32)
    faulty, out = dump_and_replay(tmp_path / "faulty", model="seq", faults="sigmoid_inplace")
    assert faulty.returncode == 0, faulty.stderr
    rows, _ = results(out)
    flagged = {r["OpType"] for r in rows if r["Result"] in ("error", "warning")}
    assert flagged == {"gru"}, flagged
    assert all(r["Standard"].startswith("Float:") for r in rows if r["OpType"] == "gru"), rows[:2]


def test_a_python_number_given_as_a_tensor_takes_no_part_in_type_promotion(tmp_path):
    """clip_grad_norm_ adds 1e-6 to a float32 total norm: PyTorch wraps the number in a float64 0-dim tensor that
    does not promote. The args file marks it, and the replay gives float32, judged at float32 (passed as a plain
    float64 tensor it made the sum float64, and float32's rounding an error at float64's bounds)."""
    replay, out = dump_and_replay(tmp_path, "--clip")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    spec = json.loads(next((tmp_path / "d").rglob("add.Default_add-op0.json")).read_text())
    number = spec["arguments"][1]["value"]
    assert number["dtype"] == "Double" and number["wrapped_number"] is True, spec
    assert "wrapped_number" not in spec["arguments"][0]["value"], spec
    add = [r for r in rows if r["OpName"] == "Default/add-op0"]
    assert len(add) == 1 and add[0]["DataType"] == "Float" and add[0]["Result"] == "pass", add


def test_an_out_buffer_the_op_overwrites_is_given_a_fresh_tensor(tmp_path):
    """Adam's amsgrad keeps the largest second moment with `torch.maximum(buf, v, out=buf)`. The dump holds the
    out= buffer as a placeholder (the op does not read it); the replay gives it an empty tensor the kernel resizes,
    so the op is replayed, and a faulty out= kernel is found there alone (it was skipped: "holds no data")."""
    replay, out = dump_and_replay(tmp_path / "clean", "--amsgrad")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    maximum = [r for r in rows if r["OpType"] == "maximum"]
    assert len(maximum) == 8 and all(r["Result"] == "pass" for r in maximum), maximum
    replay, out = dump_and_replay(tmp_path / "faulty", "--amsgrad", faults="maximum_out")
    rows, _ = results(out)
    flagged = {r["OpType"] for r in rows if r["Result"] in ("error", "warning")}
    assert flagged == {"maximum"}, [r for r in rows if r["Result"] in ("error", "warning")]


def test_an_in_place_op_that_returns_nothing_is_dumped_with_what_it_wrote_and_replayed(tmp_path):
    """Adam with foreach=True updates every parameter with `_foreach_addcdiv_(params, exp_avgs, denoms, step_sizes)`,
    whose schema returns nothing: its outputs are the parameters it wrote (the dump had none, and the replay skipped
    every _foreach_ op: "no output dumped"; its step sizes, a Scalar[], could not be rebuilt either)."""
    import numpy as np
    replay, out = dump_and_replay(tmp_path / "clean", "--foreach")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    foreach = [r for r in rows if r["OpType"].startswith("_foreach_")]
    # (_foreach_zero_ is zero_grad under PyTorch 1.13 only: 2.x sets the gradients to None.)
    assert {r["OpType"] for r in foreach} >= {"_foreach_add_", "_foreach_mul_", "_foreach_addcmul_", "_foreach_div_",
                                             "_foreach_addcdiv_"}, foreach
    assert all(r["Result"] == "pass" for r in foreach), [r for r in foreach if r["Result"] != "pass"]
    # The update's dumped outputs are the parameters after it: p + step_size * exp_avg / denom, from its own inputs.
    folder = tmp_path / "clean" / "d" / "rank_0" / "net" / "0" / "1"
    spec = json.loads(next(folder.glob("_foreach_addcdiv_.*.json")).read_text())
    steps = spec["arguments"][3]["value"]
    n = len(steps)
    def tensors(kind):
        files = sorted(folder.glob(f"_foreach_addcdiv_.*.{kind}.*.npy"), key=lambda f: int(f.name.split(f".{kind}.")[1].split(".")[0]))
        return [np.load(f) for f in files]
    ins, outs = tensors("input"), tensors("output")
    assert len(ins) == 3 * n and len(outs) == n == 8, (len(ins), len(outs))
    for i in range(n):
        expected = ins[i] + np.float32(steps[i]) * ins[n + i] / ins[2 * n + i]
        assert outs[i].shape == ins[i].shape and not np.array_equal(outs[i], ins[i]), i
        np.testing.assert_allclose(outs[i], expected, rtol=1e-5, atol=1e-7)
    replay, out = dump_and_replay(tmp_path / "faulty", "--foreach", faults="addcmul_inplace")
    rows, _ = results(out)
    flagged = {r["OpType"] for r in rows if r["Result"] in ("error", "warning")}
    assert flagged == {"_foreach_addcmul_"}, [r for r in rows if r["Result"] in ("error", "warning")]


def plain_bf16_lstm_error():
    """What this PyTorch raises running an nn.LSTM under CPU bfloat16 autocast with nothing dumped ("" when it
    runs): PyTorch 2.x runs it as oneDNN's RNN layer, whose bfloat16 LSTM needs a CPU with AVX-512 ("could not
    create a primitive descriptor for the LSTM forward propagation primitive" on one without)."""
    probe = ("import torch\n"
             "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
             "    try:\n"
             "        torch.nn.LSTM(32, 32, batch_first=True)(torch.randn(4, 12, 32))\n"
             "    except RuntimeError as e:\n"
             "        print(str(e).splitlines()[0])\n")
    proc = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_each_node_of_one_type_is_replayed_with_its_own_arguments(tmp_path):
    """An LSTM cell's backward makes three autograd nodes of one type (an LSTM's, on PyTorch 1.13, dozens):
    their ops are named apart (MulBackward0, MulBackward0-1, ...), each with an args file of its own; under
    bfloat16 autocast some multiply a float32 gradient by a bfloat16 gate, others two bfloat16 tensors, and
    each is replayed at its own dtypes: nothing is flagged."""
    if error := plain_bf16_lstm_error():
        pytest.skip(f"this PyTorch cannot run an LSTM under bfloat16 autocast on this CPU, dumped or not: {error}")
    replay, out = dump_and_replay(tmp_path, "--bf16", model="lstm")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] in ("error", "warning")]
    skipped = [r for r in rows if r["Result"] == "skipped"]
    assert not skipped, skipped
    # PyTorch 2.x runs the LSTM as oneDNN's RNN layer: on bfloat16 inputs it keeps its gates and states in
    # bfloat16 and returns float32 gradients, judged by the bfloat16 standard
    layer = [r for r in rows if r["OpType"] == "mkldnn_rnn_layer_backward"]
    assert all(r["DataType"] == "Float" and r["Standard"].startswith("Float computed in BFloat16 by oneDNN") for r in layer), layer
    node = "mul.Gradients_Default_net_cell-LSTMCell_lstm_cell-op0_MulBackward0"
    folder = next((tmp_path / "d").rglob(node + "_mul-op0.*.npy")).parent
    files = [folder / (node + "_mul-op0.json")] + sorted(folder.glob(node + "-[0-9]*_mul-op0.json"))
    assert len(files) >= 3 and all(f.exists() for f in files), sorted(p.name for p in folder.glob("mul.*.json"))
    assert not list(folder.glob(node + "*_mul-op0.[0-9]*.json"))  # no name is repeated: no file by task id
    dtypes = {tuple(a["value"]["dtype"] for a in json.loads(f.read_text())["arguments"]) for f in files}
    assert ("BFloat16", "BFloat16") in dtypes and len(dtypes) > 1, dtypes
    mul = [r for r in rows if "MulBackward0" in r["OpName"] and "/mul-op" in r["OpName"]]
    assert {r["DataType"] for r in mul} == {"Float", "BFloat16"}, {r["DataType"] for r in mul}


def test_an_lstm_layers_backward_is_replayed_in_float64(tmp_path):
    """PyTorch 2.x runs nn.LSTM's backward on the CPU as oneDNN's mkldnn_rnn_layer_backward, which has no float64
    kernel: replay computes the layer again in float64 from ATen ops and takes it back with autograd. A float32
    step's seven gradients pass the float32 standard; the input weights' gradient made 1% larger in the dump is
    an error, and nothing else is flagged. (PyTorch 1.13 runs nn.LSTM as ATen ops: there is no such op.)"""
    import numpy as np
    replay, out = dump_and_replay(tmp_path, model="lstm")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    layer = [r for r in rows if r["OpType"] == "mkldnn_rnn_layer_backward"]
    if not layer:
        assert not list((tmp_path / "d").rglob("mkldnn_rnn_layer_backward.*.npy")), "dumped but not replayed"
        pytest.skip("this PyTorch runs nn.LSTM without oneDNN's RNN layer")
    assert [r["TensorIndex"] for r in layer] == [f"output.{i}" for i in range(7)], layer
    assert all(r["Result"] == "pass" and r["Standard"].startswith("Float: ") for r in layer), layer
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    assert not [r for r in rows if r["Result"] == "skipped"], [r for r in rows if r["Result"] == "skipped"]
    grad_w_ih = next((tmp_path / "d").rglob("mkldnn_rnn_layer_backward.*.output.1.*.npy"))
    np.save(grad_w_ih, np.load(grad_w_ih) * np.float32(1.01))
    (tmp_path / "faulty").mkdir()
    replay, out = replay_dump(tmp_path / "d", tmp_path / "faulty")
    assert replay.returncode == 0, replay.stderr
    rows, _ = results(out)
    flagged = [(r["OpType"], r["TensorIndex"], r["Result"]) for r in rows if r["Result"] != "pass"]
    assert flagged == [("mkldnn_rnn_layer_backward", "output.1", "error")], flagged


REPEATED_NAMES = """
import sys, threading, torch
sys.path.insert(0, sys.argv[2])
import opdump
opdump.set_dump(sys.argv[1])
def work(dtype):
    torch.manual_seed(0)
    torch.mul(torch.randn(64, dtype=dtype), torch.randn(64, dtype=dtype))
for dtype in (torch.float32, torch.bfloat16):  # one thread after the other: each counts its own ops from 0
    t = threading.Thread(target=work, args=(dtype,))
    t.start()
    t.join()
opdump.step()
opdump.finalize_dump()
"""


def test_ops_of_one_name_are_replayed_each_with_its_own_arguments(tmp_path):
    """Two threads run ops of one scope, and their ops share names (each thread counts its own): the name's
    first op gets the plain args file, the others one named with their task id, and each is replayed at its
    own dtypes. (With one file per name, the last op's dtypes replayed every other: the float32 mul run as
    bfloat16 would fail the float32 standard.)"""
    cfg = ms_config(tmp_path / "d", iteration="0", e2e={"save_kernel_args": True})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    proc = subprocess.run([PYTHON, "-c", REPEATED_NAMES, str(tmp_path / "c.json"), str(BUILD / "python")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    name = "mul.Default_mul-op0"
    folder = next((tmp_path / "d").rglob(name + ".*.npy")).parent
    first, own = folder / (name + ".json"), sorted(folder.glob(name + ".[0-9]*.json"))
    assert first.exists() and len(own) == 1, sorted(p.name for p in folder.glob("*.json"))
    specs = [json.loads(p.read_text()) for p in (first, *own)]
    tasks = [spec["task_id"] for spec in specs]
    assert len(set(tasks)) == 2
    assert set(tasks) == {int(p.name.split(".")[2]) for p in folder.glob(name + ".*.output.0.*.npy")}  # its ops' files
    assert [tuple(a["value"]["dtype"] for a in spec["arguments"]) for spec in specs] == \
        [("Float", "Float"), ("BFloat16", "BFloat16")]
    replay, out = replay_dump(tmp_path / "d", tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    mul = [r for r in rows if r["OpType"] == "mul"]
    assert len(mul) == 2 and {r["DataType"] for r in mul} == {"Float", "BFloat16"}, mul
    assert all(r["Result"] == "pass" for r in mul), mul


def test_a_kernel_level_dump_replays_an_out_op_given_a_float_dtype(tmp_path):
    """At kernel level `mean` is `sum(x, dim, dtype=torch.float32, out=buffer)`: in the float64 run the buffer
    is float64, and so is the dtype (before, the kernel refused the buffer and the op was skipped). On PyTorch 2.x
    oneDNN's LSTM layer calls cat and add for its weights and then runs the recurrence itself: it is a kernel
    too, dumped beside them, and replayed (its workspace, oneDNN's own buffer, is not judged)."""
    replay, out = dump_and_replay(tmp_path, model="lstm", level="kernel")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] in ("error", "warning")]
    sums = [r for r in rows if r["OpType"] == "sum" and "mean-op" in r["OpName"]]
    assert sums and all(r["Result"] == "pass" and r["DataType"] == "Float" for r in sums), sums
    workspace = ("mkldnn_rnn_layer", "output.3")
    assert all(r["Result"] != "skipped" or r["OpType"] == "cudnn_is_acceptable" or (r["OpType"], r["TensorIndex"]) == workspace
               for r in rows), [r for r in rows if r["Result"] == "skipped"]
    layer = {(r["OpType"], r["TensorIndex"]): r["Result"] for r in rows if r["OpType"].startswith("mkldnn_rnn_layer")}
    if layer:  # PyTorch 2.x
        assert layer == {**{("mkldnn_rnn_layer", f"output.{i}"): "pass" for i in range(3)}, workspace: "skipped",
                         **{("mkldnn_rnn_layer_backward", f"output.{i}"): "pass" for i in range(7)}}, layer


def test_replay_says_what_is_missing(tmp_path):
    replay, out = dump_and_replay(tmp_path, save_args=False)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["ops"]["replayed"] == 0 and summary["ops"]["skipped"] == summary["ops"]["total"] > 0
    assert "save_kernel_args" in replay.stderr
    stats = tmp_path / "stats"
    stats.mkdir()
    replay, _ = dump_and_replay(stats, saved_data="statistic")
    assert replay.returncode == 1 and "holds no tensors" in replay.stderr, replay.stderr


def test_standards_file_matches_the_docs():
    standards = json.loads((ROOT / "data" / "replay_standards.json").read_text())
    doc = (ROOT / "docs" / "replay.md").read_text()
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        row = [line for line in doc.splitlines() if line.startswith(f"| {dtype} |")]
        assert len(row) == 1, dtype
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        assert float(cells[1]) == standards[dtype]["rel_l2"] and float(cells[2]) == standards[dtype]["max_norm"], row
    assert f"{standards['error_factor']} times" in doc


# --- msprobe's tensor dumps: the Python API calls of dump.json replayed as aten calls -----------------

MSPROBE_WORKLOAD = ROOT / "tests" / "python" / "msprobe_workload.py"


def msprobe_replay(tmp_path, *flags, task="tensor"):
    dump = tmp_path / "ms"
    proc = subprocess.run([PYTHON, str(MSPROBE_WORKLOAD), "--tool", "msprobe", "--out", str(dump), "--task", task,
                           "--level", "mix", *flags], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return replay_dump(dump, tmp_path)


def test_msprobe_tensor_dump_replays_clean(tmp_path):
    replay, out = msprobe_replay(tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    # every API of resnet18's forward and its loss, none skipped; the module records are not ops
    assert summary["ops"]["replayed"] == summary["ops"]["total"] == 70, summary["ops"]
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    assert "msprobe module records (level mix) are not replayed" in replay.stderr
    names = {r["OpName"] for r in rows}
    assert {"Functional.conv2d.0.forward", "Functional.batch_norm.19.forward", "Tensor.add_.7.forward",
            "Functional.cross_entropy.0.forward", "Torch.flatten.0.forward"} <= names, sorted(names)[:10]
    assert not any(n.startswith("Module.") for n in names)


def test_msprobe_planted_kernel_found_alone(tmp_path):
    replay, out = msprobe_replay(tmp_path, "--plant", "linear_kernel")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    flagged = [(r["OpName"], r["Result"]) for r in rows if r["Result"] in ("error", "warning")]
    assert flagged == [("Functional.linear.0.forward", "error")], flagged
    assert "first op that fails on its own inputs: linear Functional.linear.0.forward" in replay.stdout


def test_msprobe_bf16_autocast_replays_at_bf16(tmp_path):
    replay, out = msprobe_replay(tmp_path, "--bf16")
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    assert summary["rows"]["error"] == summary["rows"]["warning"] == 0, [r for r in rows if r["Result"] != "pass"]
    conv = [r for r in rows if r["OpType"] == "conv2d"]
    assert len(conv) == 20 and all(r["DataType"] == "BFloat16" and r["Result"] == "pass" for r in conv), conv[:2]
    stats = tmp_path / "stats"
    stats.mkdir()
    replay, _ = msprobe_replay(stats, task="statistics")
    assert replay.returncode == 1 and "holds no tensors" in replay.stderr, replay.stderr


# Python calls whose signatures differ from their aten operators' (data/msprobe_apis.json), and two
# that are not one aten call.
MSPROBE_CALLS = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[2])
from msprobe_workload import MsprobeRecorder
torch.manual_seed(0)
x, idx, w, img = torch.randn(4, 6), torch.tensor([[0, 2], [3, 0]]), torch.randn(5, 3), torch.randn(1, 2, 6, 6)
target, mean, var, weight, bias = torch.tensor([1, 0, 3, 5]), torch.zeros(2), torch.ones(2), torch.rand(2) + 0.5, torch.rand(2)
recorder = MsprobeRecorder(sys.argv[1], "tensor", "L1", "pt")
with torch.no_grad(), recorder:
    F.cross_entropy(x, target, reduction="sum", label_smoothing=0.1)
    F.softmax(x, -1, _stacklevel=5)
    F.embedding(idx, w, padding_idx=0)
    x.view(2, 12)
    F.max_pool2d(img, 2)
    F.batch_norm(img, mean, var, weight, bias, False, 0.1, 1e-3)
    x[1:, :2]
    F.embedding(idx, w, max_norm=1.0)
    torch.cat([x, x], dim=1)
    x.sum(dim=1, keepdim=True)
    x + 2
    x.to(torch.float64)
recorder.save()
"""


def test_msprobe_python_signatures_become_aten_calls(tmp_path):
    dump = tmp_path / "ms"
    proc = subprocess.run([PYTHON, "-c", MSPROBE_CALLS, str(dump), str(MSPROBE_WORKLOAD.parent)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    replay, out = replay_dump(dump, tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    by_name = {r["OpName"]: r for r in rows}
    skipped = {n: r["Reason"] for n, r in by_name.items() if r["Result"] == "skipped"}
    assert skipped.keys() == {"Tensor.__getitem__.0.forward", "Functional.embedding.1.forward"}, skipped
    assert "indexing with Python keys" in skipped["Tensor.__getitem__.0.forward"]
    assert "max_norm=1.0 has no aten equivalent" in skipped["Functional.embedding.1.forward"]
    passed = {n for n, r in by_name.items() if r["Result"] == "pass"}
    assert passed == {"Functional.cross_entropy.0.forward", "Functional.softmax.0.forward",
                      "Functional.embedding.0.forward", "Tensor.view.0.forward", "Functional.max_pool2d.0.forward",
                      "Functional.batch_norm.0.forward", "Torch.cat.0.forward", "Tensor.sum.0.forward",
                      "Tensor.add.0.forward", "Tensor.to.0.forward"}, passed
    assert by_name["Tensor.to.0.forward"]["DataType"] == "Double"


def test_a_float16_result_beyond_its_range_is_inf_as_it_should_be(tmp_path):
    """x * 3 in float16 with x = 30000 is 90000 in float64, Inf in float16: the dumped Inf is that rounding,
    not a fault (and the Inf that add reads and writes is the same)."""
    script = (
        "import sys, torch; sys.path.insert(0, sys.argv[2]); import opdump\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return (x * 3) + 1\n"
        "net = Net(); opdump.register_model(net, 'net'); opdump.set_dump(sys.argv[1])\n"
        "net(torch.tensor([30000.0, 1.0, -25000.0], dtype=torch.half)); opdump.step()\n"
        "opdump.finalize_dump()\n")
    cfg = ms_config(tmp_path / "d", iteration="0", saved_data="tensor", e2e={"save_kernel_args": True})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    proc = subprocess.run([PYTHON, "-c", script, str(tmp_path / "c.json"), str(BUILD / "python")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    replay, out = replay_dump(tmp_path / "d", tmp_path)
    assert replay.returncode == 0, replay.stderr
    rows, summary = results(out)
    judged = {r["OpType"]: r for r in rows if r["TensorIndex"] == "output.0"}
    assert judged["mul"]["Result"] == "pass" and judged["add"]["Result"] == "pass", rows
    assert summary["rows"]["error"] == 0, rows
