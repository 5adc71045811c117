"""Localization benchmark: planted changes on real models with known answers, and no-change
controls. Each scenario trains a reference and a target (bench/localize_workload.py) under a dump
config, compares the dumps with `opdump compare`, and checks the first divergence it names against
the planted op (controls: no divergence at all).

    PYTHONPATH=build/python /usr/bin/python3 bench/localize.py [--opdump build/opdump] [--only NAME ...]
        [--keep DIR] [--json OUT]

Prints one line per scenario with the time the compare took, then "localized K/N, controls clean C/M".
Exit 0 when every scenario is localized and every control is clean."""
import argparse
import functools
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
WORKLOAD = HERE / "localize_workload.py"
PYTHON = "/usr/bin/python3"


def ms_config(path, saved_data="tensor", iteration="all", input_output=0, **opdump):
    cfg = {"common_dump_settings": {"dump_mode": 0, "path": str(path), "net_name": "net", "iteration": iteration,
                                    "saved_data": saved_data, "input_output": input_output, "kernels": [],
                                    "support_device": [0, 1, 2, 3], "op_debug_mode": 0},
           "e2e_dump_settings": {"enable": True}}
    if opdump:
        cfg["opdump"] = opdump
    return cfg


def acl_config(path, dump_mode="output", dump_step=None, op_switch=False):
    dump = {"dump_path": str(path), "dump_list": [{"model_name": "net"}], "dump_mode": dump_mode}
    if dump_step is not None:
        dump["dump_step"] = dump_step
    if op_switch:
        dump["dump_op_switch"] = "on"
    return {"dump": dump}


R18 = "Default/net-ResNet"
# name: (what is planted, config factory, workload options, expected first divergence or None for a control)
SCENARIOS = {
    "param": ("resnet18: one conv weight x1.001 (a changed parameter)",
              lambda p: ms_config(p, input_output=0), {},
              dict(kind="output", op=rf"{R18}/layer2-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0", iteration=0)),
    "inputs_only": ("resnet18: a BatchNorm weight in layer3[0] x1.01 (acl.json, inputs only)",
                    lambda p: acl_config(p, dump_mode="input"), {},
                    dict(kind="output", op=rf"{R18}/layer3-Sequential/0-BasicBlock/bn2-BatchNorm2d/batch_norm-op0",
                         iteration=0)),
    "constant": ("transformer: attention scale x1.001 in block 1 (a changed constant; acl.json, outputs only)",
                 lambda p: acl_config(p), {},
                 dict(kind="output", op=r"Default/net-Transformer/layers-ModuleList/1-Block/attn-Attention/mul-op0",
                      iteration=0)),
    "inserted": ("mobilenet_v2: an op inserted after features[5] (statistics only)",
                 lambda p: ms_config(p, saved_data="statistic"), {},
                 dict(kind="extra_op", op=r"Default/net-MobileNetV2/features-Sequential/5-InvertedResidual/mul-op0",
                      iteration=0)),
    "removed": ("resnet18: layer3[1].bn2 replaced by Identity (a removed op)",
                lambda p: ms_config(p), {},
                dict(kind="missing_op", op=rf"{R18}/layer3-Sequential/1-BasicBlock/bn2-BatchNorm2d/batch_norm-op0",
                     iteration=0)),
    "dtype": ("resnet18: layer4[0].conv2 computed in bfloat16 (a dtype change on one layer; bin files)",
              lambda p: dict(ms_config(p), e2e_dump_settings={"enable": False}), {},
              dict(kind="output", op=rf"{R18}/layer4-Sequential/0-BasicBlock/conv2-Conv2d/conv2d-op0", iteration=0)),
    "autocast": ("resnet18: layer3 under bf16 autocast",
                 lambda p: ms_config(p, input_output=0), {},
                 dict(kind="output", op=rf"{R18}/layer3-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0", iteration=0)),
    "stats_bn": ("resnet18: BatchNorm eps 1e-5 -> 1e-2 in layer1[1].bn1 (statistics only)",
                 lambda p: ms_config(p, saved_data="statistic"), {},
                 dict(kind="output", op=rf"{R18}/layer1-Sequential/1-BasicBlock/bn1-BatchNorm2d/batch_norm-op0",
                      iteration=0)),
    "lr": ("resnet18: learning rate 0.01 -> 0.0101 (the optimizer, outside the model; iterations 0-1)",
           lambda p: ms_config(p, saved_data="statistic"), {"steps": 2},
           dict(kind="output", op=r"Default/add_-op0", iteration=0)),
    "ranks": ("two-rank DDP over gloo, a constant changed on rank 1 only",
              lambda p: ms_config(p), {"ranks": 2},
              dict(kind="output", op=r"Default/net-SmallNet/scale-Scale/mul-op0", iteration=0, rank=1)),
    "iteration": ("transformer: GELU approximation changed from iteration 1 on (acl.json, dump_step 1|2, "
                  "ops outside the model too)",
                  lambda p: acl_config(p, dump_step="1|2", op_switch=True), {"steps": 3},
                  dict(kind="output", op=r"Default/net-Transformer/layers-ModuleList/2-Block/gelu-op0", iteration=1)),
    "encoder": ("nn.TransformerEncoder: a linear2 bias of layer 1 +1e-3 (inputs and outputs)",
                lambda p: ms_config(p), {},
                dict(kind="output", op=r"Default/net-Sequential/1-TransformerEncoder/layers-ModuleList/"
                                       r"1-TransformerEncoderLayer/linear2-Linear/linear-op0", iteration=0)),
    "grad_hook": ("small CNN: a gradient hook scales the gradient of conv2's output (backward only)",
                  lambda p: ms_config(p, input_output=2), {},
                  dict(kind="extra_op", op=r"Gradients/Default/mul-op0", iteration=0)),
    "data": ("resnet18: the data batch scaled by 1.0001 (the input pipeline changed)",
             lambda p: ms_config(p, input_output=2), {},
             dict(kind="output", op=rf"{R18}/conv1-Conv2d/conv2d-op0", iteration=0)),
    "threads": ("control: nn.TransformerEncoder, 1 vs 2 intra-op threads",
                lambda p: ms_config(p), {"threads": {"reference": 1, "target": 2}}, None),
    "workers": ("control: GRU, DataLoader with 0 vs 2 worker processes",
                lambda p: ms_config(p), {"steps": 3, "workers": {"reference": 0, "target": 2}}, None),
    "identical": ("control: mobilenet_v2, identical runs at kernel level (names over 255 bytes)",
                  lambda p: ms_config(p, level="kernel"), {}, None),
    "stats_vs_tensors": ("control: resnet18, identical runs, statistics against tensors",
                         {"target": lambda p: ms_config(p, saved_data="statistic"),
                          "reference": lambda p: ms_config(p, saved_data="tensor")}, {}, None),
}


# Cross-stack pairs: the target runs on another stack (dtypes, kernel library, PyTorch version) than
# the float32 reference, so every op differs a little; a planted fault must still be named, and a
# pair without one must come out with no divergence. (model, target stack, runtime of the target)
TRANSFORMER = "Default/net-Transformer/layers-ModuleList"
CROSS_FAULTS = {
    "transformer": [("ln_eps", "LayerNorm eps 0.1 instead of 1e-5 in block 2",
                     rf"{TRANSFORMER}/2-Block/norm2-LayerNorm/layer_norm-op0"),
                    ("gelu_tanh", "GELU approximation tanh in block 2 (arguments recorded)",
                     rf"{TRANSFORMER}/2-Block/gelu-op0")],
    "resnet18": [("conv_channel", "one output channel of layer2[0].conv1 x1.05",
                  rf"{R18}/layer2-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0"),
                 ("bn_eps", "BatchNorm eps 0.1 in layer1[1].bn1",
                  rf"{R18}/layer1-Sequential/1-BasicBlock/bn1-BatchNorm2d/batch_norm-op0")],
}
# Planted on every stack: a constant the model multiplies by (a Python number, exact on every stack),
# changed by 1%, which bfloat16's rounding alone would hide.
EVERY_STACK_FAULTS = {
    "transformer": [("attn_scale", "attention scale x1.01 in block 1 (a changed constant)",
                     rf"{TRANSFORMER}/1-Block/attn-Attention/mul-op0")],
}
CROSS_STACKS = {  # name: (what the target runs on, its stack, its runtime, the reference's runtime)
    "fp64": ("model and data in float64", "fp64", "host", "host"),
    "bf16": ("forward under bf16 autocast", "bf16", "host", "host"),
    "fp16": ("model and data in float16 (PyTorch 2.x: CPU float16 kernels)", "fp16", "torch2", "torch2"),
    "nomkldnn": ("convolutions without oneDNN (torch.backends.mkldnn off)", "nomkldnn", "host", "host"),
    "torch2": ("PyTorch 2.x against 1.13", "fp32", "torch2", "host"),
}


def cross_scenarios():
    out = {}
    for k, (stack, (what, target_stack, target_runtime, reference_runtime)) in enumerate(CROSS_STACKS.items()):
        for model, faults in CROSS_FAULTS.items():
            # Two iterations: from the second on, parameters and buffers carry what the first step's
            # rounding did to them.
            options = {"model": model, "stack": {"reference": "fp32", "target": target_stack}, "steps": 2,
                       "runtime": {"reference": reference_runtime, "target": target_runtime}}
            # Under bf16 every fault of the model; on the other stacks one, alternating. A fault that
            # only its arguments show under low precision (the GELU approximation) is dumped with them.
            chosen = (faults if stack == "bf16" else [faults[k % 2]]) + EVERY_STACK_FAULTS.get(model, [])
            for fault, fault_what, op in chosen:
                arguments = fault in ("gelu_tanh", "bn_eps")
                config = (lambda p, a=arguments: ms_config(p, save_kernel_args=True) if a else ms_config(p))
                out[f"x_{stack}_{model}_{fault}"] = (f"{model}, {what}: {fault_what}", config,
                                                     dict(options, fault=fault), dict(kind="output", op=op, iteration=0))
            out[f"x_{stack}_{model}_control"] = (f"control: {model}, {what}", ms_config, dict(options, fault="none"),
                                                 None)
            # Statistics only: no tensors to re-run, the error's growth decides. In float16 the whole model
            # is, its parameters too (rounded, within their precision), and the layer norm's eps is still
            # named (the transformer only: a channel of one convolution x1.05 moves resnet18's activations'
            # norm by about 0.04%, below float16's rounding, where statistics cannot show it).
            if stack == "bf16" or (stack == "fp16" and model == "transformer"):
                fault, fault_what, op = faults[0]
                stats = lambda p: ms_config(p, saved_data="statistic")
                out[f"x_{stack}_{model}_{fault}_stats"] = (f"{model}, {what}, statistics only: {fault_what}", stats,
                                                           dict(options, fault=fault),
                                                           dict(kind="output", op=op, iteration=0))
                out[f"x_{stack}_{model}_control_stats"] = (f"control: {model}, {what}, statistics only", stats,
                                                           dict(options, fault="none"), None)
    return out


SCENARIOS.update(cross_scenarios())
def more_models_controls():
    """Fault-free pairs of two more models (depthwise convolutions and batch norm over few values per
    channel; PyTorch's own encoder with dropout, which 2.x draws otherwise than 1.13): every op differs a little.
    The encoder's statistics-only pair too: a layer norm's output keeps its norm whatever dropout's other
    draws did to it, so the linear after it would seem to grow an error it carries."""
    out = {}
    for stack, model, saved in (("fp64", "mobilenet_v2", "tensor"), ("nomkldnn", "mobilenet_v2", "tensor"),
                                ("torch2", "mobilenet_v2", "tensor"), ("torch2", "encoder", "tensor"),
                                ("torch2", "encoder", "statistic")):
        what, target_stack, target_runtime, reference_runtime = CROSS_STACKS[stack]
        stats = saved == "statistic"
        out[f"x_{stack}_{model}_control" + ("_stats" if stats else "")] = (
            f"control: {model}, {what}" + (", statistics only" if stats else ""),
            lambda p, s=saved: ms_config(p, saved_data=s),
            {"model": model, "stack": {"reference": "fp32", "target": target_stack}, "steps": 2, "fault": "none",
             "runtime": {"reference": reference_runtime, "target": target_runtime}}, None)
    return out


SCENARIOS.update(more_models_controls())
MBV2 = "Default/net-MobileNetV2/features-Sequential"
ENCODER_LAYER = "Default/net-Sequential/1-TransformerEncoder/layers-ModuleList/1-TransformerEncoderLayer"


def bf16_torch2_scenarios():
    """bf16 autocast on PyTorch 2.x, whose CPU kernels take the two models 1.13's refuse under it (hardtanh's
    backward, LayerNorm on mixed dtypes). Both sides on 2.x. mobilenet_v2's activations grow beyond 256 by the
    second step, where bfloat16 holds only integers; an encoder's LayerNorm eps is seen from statistics alone."""
    out = {}
    for model, fault, what, op, saved in (
            ("mobilenet_v2", "bn_weight", "a BatchNorm weight of features[7] x1.03",
             rf"{MBV2}/7-InvertedResidual/conv-Sequential/0-Conv2dNormActivation/1-BatchNorm2d/batch_norm-op0", "tensor"),
            ("encoder", "norm1_eps", "LayerNorm eps 0.1 instead of 1e-5 in layer 1",
             rf"{ENCODER_LAYER}/norm1-LayerNorm/layer_norm-op0", "statistic")):
        options = {"model": model, "stack": {"reference": "fp32", "target": "bf16"}, "steps": 2,
                   "runtime": {"reference": "torch2", "target": "torch2"}}
        stats = saved == "statistic"
        config = lambda p, s=saved: ms_config(p, saved_data=s)
        suffix = "_stats" if stats else ""
        how = "forward under bf16 autocast on PyTorch 2.x" + (", statistics only" if stats else "")
        out[f"x_bf16t2_{model}_{fault}{suffix}"] = (f"{model}, {how}: {what}", config, dict(options, fault=fault),
                                                   dict(kind="output", op=op, iteration=0))
        out[f"x_bf16t2_{model}_control{suffix}"] = (f"control: {model}, {how}", config, dict(options, fault="none"),
                                                   None)
    return out


SCENARIOS.update(bf16_torch2_scenarios())


def one_side_scenarios():
    """Ops one side runs and the other does not, across stacks: removed from the model, inserted into it, or
    added to backward by a gradient hook. Stacks run ops of their own that pass values on (casts, gradients
    accumulated instead of stolen), so such an op is named only where it changes what it passes on."""
    out = {}
    for stack, fault, what, expected in (
            ("fp64", "bn_removed", "layer3[1].bn2 replaced by Identity (an op only the reference runs)",
             dict(kind="missing_op", op=rf"{R18}/layer3-Sequential/1-BasicBlock/bn2-BatchNorm2d/batch_norm-op0",
                  iteration=0)),
            ("bf16", "block_scaled", "an op inserted after layer2[0] (its output x1.01)",
             dict(kind="extra_op", op=rf"{R18}/layer2-Sequential/0-BasicBlock/mul-op0", iteration=0)),
            ("torch2", "grad_scaled", "a gradient hook scales layer2[0].conv1's output gradient x1.02 (backward only)",
             dict(kind="extra_op", op=r"Gradients/Default/mul-op0", iteration=0))):
        how, target_stack, target_runtime, reference_runtime = CROSS_STACKS[stack]
        options = {"model": "resnet18", "stack": {"reference": "fp32", "target": target_stack}, "steps": 2,
                   "runtime": {"reference": reference_runtime, "target": target_runtime}, "fault": fault}
        out[f"x_{stack}_resnet18_{fault}"] = (f"resnet18, {how}: {what}", ms_config, options, expected)
    return out


SCENARIOS.update(one_side_scenarios())
def model_scenarios(model, label, cases):
    """Cross-stack scenarios of one model of the workload: (stack, fault, what it changes, the op named, saved)."""
    out = {}
    for stack, fault, what, op, saved in cases:
        how, target_stack, target_runtime, reference_runtime = CROSS_STACKS[stack]
        options = {"model": model, "stack": {"reference": "fp32", "target": target_stack}, "steps": 2,
                   "runtime": {"reference": reference_runtime, "target": target_runtime}, "fault": fault}
        stats = saved == "statistic"
        suffix = "_stats" if stats else ""
        title = f"{label}, {how}" + (", statistics only" if stats else "")
        config = lambda p, s=saved: ms_config(p, saved_data=s)
        if op is None:
            out[f"x_{stack}_{model}_control{suffix}"] = (f"control: {title}", config, options, None)
        else:
            out[f"x_{stack}_{model}_{fault}{suffix}"] = (f"{title}: {what}", config, options,
                                                        dict(kind="output", op=op, iteration=0))
    return out


# A GRU under bf16 autocast returns float32 but runs its linear layers in bfloat16 (0.4% from float32 on the
# same inputs), and its backward sums the gradients of those bfloat16 weight copies over its steps in an order
# and under names of its own: the control is clean, and a fault after it is still named.
SCENARIOS.update(model_scenarios("recurrent", "recurrent (GRU)", (
    ("bf16", "none", "", None, "tensor"), ("bf16", "none", "", None, "statistic"),
    ("bf16", "head_bias", "the head's bias 2 + 0.01", "Default/net-Recurrent/head-Linear/linear-op0", "tensor"),
    ("fp64", "gru_weight", "row 3 of the GRU's hidden-to-hidden weights x1.05", "Default/net-Recurrent/gru-GRU/gru-op0",
     "statistic"))))
# Batch and instance norms, hardswish, leaky ReLU, ELU, reflection padding and max pooling.
SCENARIOS.update(model_scenarios("convmix", "convmix (instance norm, hardswish, ELU)", (
    ("bf16", "none", "", None, "tensor"), ("torch2", "none", "", None, "statistic"),
    ("fp16", "inorm_weight", "the instance norm's weight of channel 2 x1.03",
     "Default/net-ConvMix/inorm-InstanceNorm2d/instance_norm-op0", "tensor"),
    ("nomkldnn", "fc_row", "row 4 of the head's weights x1.02", "Default/net-ConvMix/fc-Linear/linear-op0",
     "statistic"),
    # From statistics the slope moves only the output's min: leaky ReLU keeps its input's extremes (mapped
    # by its slope) on each side, whatever bfloat16 did to its input.
    ("bf16", "slope", "leaky ReLU's negative slope 0.3 instead of 0.05", "Default/net-ConvMix/leaky_relu-op0",
     "statistic"))))
HOST_TORCH2 = None  # set by main()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch2_root():
    return pathlib.Path(os.environ.get("OPDUMP_TORCH2_ROOT", "/var/tmp/opdump-trixie"))


def host_torch2():
    """Whether this host's own torch is 2.x (then PyTorch 2.x sides run here, and no 1.13 is at hand)."""
    host = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return host.stdout.startswith("2.")


def torch2_ready():
    """Why a side cannot run on PyTorch 2.x here ("" when it can): the chroot scripts/torch2.sh makes."""
    if not (torch2_root() / "usr/bin/python3").exists() or not (HERE.parent / "build-torch2" / "python").is_dir():
        return "no PyTorch 2.x chroot with a build (scripts/torch2.sh --build makes them)"
    return ""


def train(name, side, root, config, options, env):
    """Runs one side (all its ranks); returns the dump path."""
    def option(key, default):
        value = options.get(key, default)
        return value[side] if isinstance(value, dict) else value
    in_chroot = option("runtime", "host") == "torch2" and not HOST_TORCH2
    # A side on PyTorch 2.x runs in the chroot: its files go below the chroot's /tmp, seen from here
    # through the chroot's root.
    inside = pathlib.Path("/tmp") / "opdump-localize" / name if in_chroot else root
    host_dir = torch2_root() / inside.relative_to("/") if in_chroot else root
    host_dir.mkdir(parents=True, exist_ok=True)
    path = inside / side
    cfg_file = host_dir / f"{side}.json"
    shutil.rmtree(host_dir / side, ignore_errors=True)
    cfg_file.write_text(json.dumps(config(path)))
    args = ["--scenario", name, "--side", side, "--config", str(inside / f"{side}.json"),
            "--steps", str(option("steps", 1)), "--workers", str(option("workers", 0)),
            "--threads", str(option("threads", 1))]
    if "model" in options:
        args += ["--model", options["model"], "--stack", option("stack", "fp32"),
                 "--fault", options["fault"] if side == "target" else "none"]
    if in_chroot:
        command = " ".join(["PYTHONPATH=/opdump/build-torch2/python", "python3", "bench/localize_workload.py"] + args)
        cmd = ["bash", str(HERE.parent / "scripts" / "torch2.sh"), "--exec", command]
    else:
        cmd = [PYTHON, str(WORKLOAD)] + args
    ranks = options.get("ranks", 1)
    port = free_port()
    procs = []
    for rank in range(ranks):
        e = dict(env)
        if ranks > 1:
            # USE_LIBUV=0: Debian 13's torch 2.6 is built without libuv (its TCPStore asks for it)
            e.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                     MASTER_PORT=str(port), USE_LIBUV="0")
        procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} {side} failed ({proc.returncode}):\n{err[-3000:]}")
    return host_dir / side


def matches(expected, first):
    if first is None:
        return False
    if first["kind"] != expected["kind"] or not re.fullmatch(expected["op"], first["op_name"]):
        return False
    if expected.get("cause") and expected["cause"] not in first["cause"]:
        return False
    return first["iteration"] == expected["iteration"] and first["rank"] == expected.get("rank", 0)


def needs_torch2(name):
    """Whether the scenario needs the chroot: a side on PyTorch 2.x where this host has 1.13."""
    return "torch2" in SCENARIOS[name][2].get("runtime", {}).values() and not HOST_TORCH2


def needs_two_versions(name):
    return set(SCENARIOS[name][2].get("runtime", {}).values()) == {"host", "torch2"}


@functools.lru_cache(maxsize=None)
def bf16_conv_strays(runtime):
    """Whether this CPU and PyTorch compute resnet18's first conv wrongly in bf16 (oneDNN 3.7 on
    AVX512-BF16 CPUs: cosine 0.88 against float64): a real kernel fault, which the bf16 resnet18
    pairs must then name first."""
    code = ("import torch; g = torch.Generator().manual_seed(0); x = torch.randn(2, 3, 32, 32, generator=g); "
            "w = torch.randn(64, 3, 7, 7, generator=g) * 0.1\n"
            "with torch.autocast('cpu', dtype=torch.bfloat16): y = torch.nn.functional.conv2d(x, w, stride=2, padding=3)\n"
            "e = torch.nn.functional.conv2d(x.double(), w.double(), stride=2, padding=3)\n"
            "print(float((y.double() - e).norm() / e.norm()))")
    if runtime == "torch2" and not HOST_TORCH2:
        cmd = ["bash", str(HERE.parent / "scripts" / "torch2.sh"), "--exec", f"python3 -c \"{code}\""]
    else:
        cmd = [PYTHON, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True)
    return out.returncode == 0 and float(out.stdout.strip().splitlines()[-1]) > 2 * 2 ** -7


def expected_for(name):
    """The scenario's expected first divergence on this machine."""
    what, config, options, expected = SCENARIOS[name]
    if options.get("model") == "resnet18" and options.get("stack", {}).get("target") == "bf16" and \
            bf16_conv_strays(options["runtime"]["target"]):
        return dict(kind="output", op=rf"{R18}/conv1-Conv2d/conv2d-op0", iteration=0, cause="strays")
    return expected


def run(name, opdump, root, env):
    what, config, options, _ = SCENARIOS[name]
    expected = expected_for(name)
    configs = config if isinstance(config, dict) else {"reference": config, "target": config}
    ref = train(name, "reference", root, configs["reference"], options, env)
    tgt = train(name, "target", root, configs["target"], options, env)
    out = root / "compare"
    t0 = time.perf_counter()
    proc = subprocess.run([opdump, "compare", str(tgt), str(ref), "-o", str(out), "-q"], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    result = {"name": name, "what": what, "expected": expected, "seconds": seconds, "control": SCENARIOS[name][3] is None}
    if expected != SCENARIOS[name][3]:
        result["what"] += " [this CPU's bf16 conv2d strays (oneDNN): the first conv is the fault to name]"
    if proc.returncode != 0:
        result.update(ok=False, got=f"compare failed: {proc.stderr.strip()[-500:]}")
        return result
    summary = json.loads((out / "compare_summary.json").read_text())
    first = summary["first_divergence"]
    result["summary"] = {k: summary[k] for k in ("rows", "pass", "warning", "error", "not_compared", "unmatched")}
    if expected is None and "stack" in options:
        # Across stacks every op differs a little: clean means no divergence, and the precision seen said.
        result["ok"] = first is None and (summary["error"] + summary["warning"] == 0 or bool(summary.get("precision")))
    elif expected is None:
        result["ok"] = first is None and summary["error"] == 0 and summary["warning"] == 0
    else:
        result["ok"] = matches(expected, first)
    result["got"] = first["headline"] if first else "no divergence found"
    if first:
        result["cause"] = first["cause"]
    if summary.get("precision"):
        result["precision"] = summary["precision"]
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opdump", default=str(HERE.parent / "build" / "opdump"))
    ap.add_argument("--only", nargs="*", help="scenario names (default: all)")
    ap.add_argument("--keep", help="keep the dumps in this folder")
    ap.add_argument("--json", help="write the results as JSON")
    args = ap.parse_args()
    names = args.only or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios {unknown}; known: {list(SCENARIOS)}")
    global HOST_TORCH2
    HOST_TORCH2 = host_torch2()
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(HERE.parent / "build" / "python"))
    base = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp(prefix="opdump-localize-"))
    results = []
    skip_torch2 = torch2_ready() if any(needs_torch2(n) for n in names) else ""
    try:
        for name in names:
            why = ("this host's own torch is 2.x: no 1.13 to pair it with" if HOST_TORCH2 and needs_two_versions(name)
                   else skip_torch2 if needs_torch2(name) else "")
            if why:
                print(f"skip {name:30s} {why}", flush=True)
                continue
            root = base / name
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                r = run(name, args.opdump, root, env)
            except Exception as e:  # a failed run counts as not localized, with the reason
                r = {"name": name, "what": SCENARIOS[name][0], "ok": False, "got": str(e), "seconds": 0.0,
                     "control": SCENARIOS[name][3] is None, "expected": SCENARIOS[name][3]}
            results.append(r)
            mark = "ok  " if r["ok"] else "MISS"
            print(f"{mark} {name:30s} compare {r['seconds']:6.2f} s  {r['what']}", flush=True)
            if not r["ok"]:
                print(f"       expected: {r['expected']}\n       got:      {r['got']}", flush=True)
            if not args.keep:  # each scenario's dumps (up to a GB) go as soon as it is judged
                shutil.rmtree(root, ignore_errors=True)
                shutil.rmtree(torch2_root() / "tmp" / "opdump-localize" / name, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(torch2_root() / "tmp" / "opdump-localize", ignore_errors=True)
    planted = [r for r in results if not r["control"]]
    controls = [r for r in results if r["control"]]
    line = (f"localized {sum(r['ok'] for r in planted)}/{len(planted)}, "
            f"controls clean {sum(r['ok'] for r in controls)}/{len(controls)}")
    print(line)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"summary": line, "results": results}, indent=2))
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
