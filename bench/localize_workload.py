"""One side of a localization scenario (bench/localize.py): trains a real model for a few steps
under an opdump dump config, with or without a planted change.

    localize_workload.py --scenario NAME --side reference|target --config CFG [--steps N]
        [--model resnet18|transformer --stack fp32|fp64|bf16|fp16|nomkldnn --fault NAME]

Cross-stack scenarios name the model, the stack the side runs on (its dtypes and kernels) and the
fault planted in the target (--fault, none for a control).

Run by /usr/bin/python3 (Debian's torch), with PYTHONPATH naming the built opdump package. For
two-rank scenarios the driver starts one process per rank with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set."""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- models ------------------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.scale = (dim // heads) ** -0.5

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        out = torch.matmul(scores.softmax(dim=-1), v)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.gelu_approximate = "none"

    @staticmethod
    def _norm(norm, x):
        # Under autocast the residual stream is bfloat16; LayerNorm takes it in its own dtype, as
        # mixed-precision code does (PyTorch 1.13's CPU kernel refuses mixed dtypes).
        return norm(x if x.dtype == norm.weight.dtype else x.to(norm.weight.dtype))

    def forward(self, x):
        x = x + self.attn(self._norm(self.norm1, x))
        return x + self.fc2(F.gelu(self.fc1(self._norm(self.norm2, x)), approximate=self.gelu_approximate))


class Transformer(nn.Module):
    def __init__(self, dim=32, heads=4, depth=4, classes=10):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(dim=1))


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


class ConvMix(nn.Module):
    """Convolutions with batch and instance norms, hardswish, leaky ReLU, ELU, reflection padding, max pooling.
    c2 gives 32 channels: with 24, Debian's PyTorch 2.6 computes c2's input gradient wrong (by a third, or NaN
    from memory it never wrote; oneDNN's channel block is 16), and a control on 2.6 would hold a real fault."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(32, affine=True)
        self.fc = nn.Linear(64, 10)
        self.slope = 0.05  # leaky ReLU's (the fault slope changes it)

    def forward(self, x):
        h = F.max_pool2d(F.hardswish(self.bn(self.c1(x))), 2)
        h = F.leaky_relu(self.inorm(self.c2(F.pad(h, (1, 1, 1, 1), mode="reflect"))), self.slope)
        h = torch.cat([F.adaptive_max_pool2d(h, 1).flatten(1), F.adaptive_avg_pool2d(F.elu(h), 1).flatten(1)], 1)
        return self.fc(h)


class Scale(nn.Module):
    """x * c with a Python constant: the op is the same on both sides, only the constant differs."""

    def __init__(self, c=1.0):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x * self.c


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.scale = Scale()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(self.conv2(self.scale(x)), 2)
        return self.fc(torch.flatten(x, 1))


def vision(name):
    import torchvision
    return getattr(torchvision.models, name)(num_classes=10), (2, 3, 32, 32)


# ---- planted changes -------------------------------------------------------------------------

def bf16_conv(conv):
    """The layer computes in bfloat16 (a precision change on one layer)."""
    def forward(x):
        return F.conv2d(x.bfloat16(), conv.weight.bfloat16(), None, conv.stride, conv.padding).float()
    conv.forward = forward


def autocast_module(module):
    """The module runs under CPU autocast to bfloat16."""
    original = module.forward

    def forward(*args, **kwargs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return original(*args, **kwargs).float()
    module.forward = forward


def scale_output(module, factor):
    """An op inserted after the module (a forward hook registered before opdump's own)."""
    module.register_forward_hook(lambda mod, inputs, output: output * factor)


def _scaled_grad(t, factor):
    if t.requires_grad:
        t.register_hook(lambda g: g * factor)
    return t


# ---- cross-stack pairs ---------------------------------------------------------------------------
# The stack a side runs on: how its forward computes (dtypes, kernel library). Each returns a
# function that wraps the forward pass, and converts the model and the batch.
STACKS = ("fp32", "fp64", "bf16", "fp16", "nomkldnn")


def apply_stack(stack, model):
    """Converts the model for the stack; returns (convert the batch, the context the forward runs in)."""
    import contextlib
    if stack == "fp64":
        model.double()
        return (lambda x: x.double()), contextlib.nullcontext
    if stack == "fp16":  # the whole model and its data in float16 (PyTorch 2.x has CPU kernels for it)
        model.half()
        return (lambda x: x.half()), contextlib.nullcontext
    if stack == "bf16":  # the forward under CPU autocast, as bf16 training runs
        return (lambda x: x), (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    if stack == "nomkldnn":  # convolutions from PyTorch's own kernels instead of oneDNN's
        torch.backends.mkldnn.enabled = False
    return (lambda x: x), contextlib.nullcontext


# Faults planted in the target of a cross-stack pair (the reference never has one).
def plant(fault, model):
    if fault == "ln_eps":  # a LayerNorm eps of 0.1 instead of 1e-5 in block 2
        model.layers[2].norm2.eps = 0.1
    elif fault == "gelu_tanh":  # the GELU approximation of block 2
        model.layers[2].gelu_approximate = "tanh"
    elif fault == "attn_scale":  # the attention scale of block 1 x1.01 (a constant)
        model.layers[1].attn.scale *= 1.01
    elif fault == "conv_channel":  # one output channel of layer2[0].conv1 with weights x1.05
        with torch.no_grad():
            model.layer2[0].conv1.weight[3].mul_(1.05)
    elif fault == "bn_eps":  # BatchNorm eps 1e-5 -> 0.1 in layer1[1].bn1
        model.layer1[1].bn1.eps = 0.1
    elif fault == "bn_weight":  # mobilenet_v2: the BatchNorm weight of features[7]'s expansion x1.03
        with torch.no_grad():
            model.features[7].conv[0][1].weight.mul_(1.03)
    elif fault == "norm1_eps":  # nn.TransformerEncoder: norm1's eps 0.1 instead of 1e-5 in layer 1
        model[1].layers[1].norm1.eps = 0.1
    elif fault == "bn_removed":  # resnet18: layer3[1].bn2 replaced by Identity (an op only the reference runs)
        model.layer3[1].bn2 = nn.Identity()
    elif fault == "block_scaled":  # resnet18: an op inserted after layer2[0] (its output x1.01)
        scale_output(model.layer2[0], 1.01)
    elif fault == "grad_scaled":  # resnet18: the gradient of layer2[0].conv1's output x1.02 (backward only)
        original = model.layer2[0].conv1.forward
        model.layer2[0].conv1.forward = lambda x: _scaled_grad(original(x), 1.02)
    elif fault == "gru_weight":  # recurrent: row 3 of the GRU's hidden-to-hidden weights x1.05
        with torch.no_grad():
            model.gru.weight_hh_l0[3].mul_(1.05)
    elif fault == "head_bias":  # recurrent: the head's bias 2 + 0.01
        with torch.no_grad():
            model.head.bias[2].add_(0.01)
    elif fault == "inorm_weight":  # convmix: the instance norm's weight of channel 2 x1.03
        with torch.no_grad():
            model.inorm.weight[2].mul_(1.03)
    elif fault == "fc_row":  # convmix: row 4 of the head's weights x1.02
        with torch.no_grad():
            model.fc.weight[4].mul_(1.02)
    elif fault == "slope":  # convmix: leaky ReLU's negative slope 0.3 instead of 0.05 (an argument statistics do not record)
        model.slope = 0.3
    elif fault != "none":
        raise SystemExit(f"unknown fault {fault}")


# Each scenario: the model, and what the target changes (before registration, at each step).
def encoder():
    """PyTorch's own nn.TransformerEncoder (three layers) between two linear layers."""
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    return nn.Sequential(nn.Linear(8, 32), nn.TransformerEncoder(layer, num_layers=3), nn.Flatten(), nn.Linear(6 * 32, 10))


def build(scenario, target, rank, model_name=None):
    if model_name == "resnet18":
        return vision("resnet18") + (0.01,)
    if model_name == "transformer":
        return Transformer(), (2, 6, 8), 0.01
    if model_name == "mobilenet_v2":
        return vision("mobilenet_v2") + (0.01,)
    if model_name == "encoder":
        return encoder(), (2, 6, 8), 0.01
    if model_name == "recurrent":
        return Recurrent(), (4, 10, 8), 0.01
    if model_name == "convmix":
        return ConvMix(), (4, 3, 16, 16), 0.01
    if scenario in ("param", "removed", "dtype", "autocast", "stats_bn", "lr", "stats_vs_tensors", "data",
                    "inputs_only"):
        model, shape = vision("resnet18")
    elif scenario in ("inserted", "identical"):
        model, shape = vision("mobilenet_v2")
    elif scenario in ("constant", "iteration"):
        model, shape = Transformer(), (2, 6, 8)
    elif scenario == "workers":
        model, shape = Recurrent(), (4, 10, 8)
    elif scenario == "ranks":
        model, shape = SmallNet(), (2, 3, 16, 16)
    elif scenario in ("encoder", "threads"):
        model, shape = encoder(), (2, 6, 8)
    elif scenario == "grad_hook":
        model, shape = SmallNet(), (2, 3, 16, 16)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    lr = 0.01
    if target:
        if scenario == "param":
            with torch.no_grad():
                model.layer2[0].conv1.weight.mul_(1.001)
        elif scenario == "inputs_only":
            with torch.no_grad():
                model.layer3[0].bn2.weight.mul_(1.01)
        elif scenario == "constant":
            model.layers[1].attn.scale *= 1.001
        elif scenario == "inserted":
            scale_output(model.features[5], 1.01)
        elif scenario == "removed":
            model.layer3[1].bn2 = nn.Identity()
        elif scenario == "dtype":
            bf16_conv(model.layer4[0].conv2)
        elif scenario == "autocast":
            autocast_module(model.layer3)
        elif scenario == "stats_bn":
            model.layer1[1].bn1.eps = 1e-2
        elif scenario == "lr":
            lr = 0.0101
        elif scenario == "ranks" and rank == 1:
            model.scale.c = 1.001
        elif scenario == "encoder":
            with torch.no_grad():
                model[1].layers[1].linear2.bias.add_(1e-3)
        elif scenario == "grad_hook":  # backward only: the gradient reaching conv2's output is scaled
            original = model.conv2.forward
            model.conv2.forward = lambda x: _scaled_grad(original(x), 1.01)
    return model, shape, lr


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True)
    p.add_argument("--side", choices=["reference", "target"], required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--result")
    p.add_argument("--model", choices=["resnet18", "transformer", "mobilenet_v2", "encoder", "recurrent", "convmix"],
                   help="cross-stack pairs: the model")
    p.add_argument("--stack", choices=STACKS, default="fp32", help="cross-stack pairs: what this side runs on")
    p.add_argument("--fault", default="none", help="cross-stack pairs: the fault planted (target only)")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(args.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model, shape, lr = build(args.scenario, args.side == "target", rank, args.model)
    if args.side == "target":
        plant(args.fault, model)
    convert, forward_context = apply_stack(args.stack, model)
    gen = torch.Generator().manual_seed(1)
    classes = 10
    data = [(torch.randn(shape, generator=gen), torch.randint(0, classes, (shape[0],), generator=gen))
            for _ in range(args.steps)]
    if args.scenario == "data" and args.side == "target":
        data = [(x * 1.0001, y) for x, y in data]  # the input pipeline changed
    loader = data
    if args.scenario == "workers":
        dataset = torch.utils.data.TensorDataset(torch.cat([x for x, _ in data]), torch.cat([y for _, y in data]))
        # The worker processes take their seed from the main process's generator: give the loader
        # its own, so that the model's numbers do not depend on the number of workers.
        loader = torch.utils.data.DataLoader(dataset, batch_size=shape[0], num_workers=args.workers,
                                             generator=torch.Generator().manual_seed(2))

    import opdump
    opdump.set_dump(args.config)
    opdump.register_model(model, "net")
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    opdump.hook_optimizer(optimizer)

    losses = []
    for step, (x, y) in enumerate(loader):
        if args.scenario == "iteration" and args.side == "target" and step >= 1:
            model.layers[2].gelu_approximate = "tanh"  # the change starts at iteration 1
        optimizer.zero_grad()
        with forward_context():
            loss = F.cross_entropy(model(convert(x)), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    report = opdump.finalize_dump()
    if args.result:
        with open(args.result, "w") as f:
            json.dump({"losses": losses, "report": report}, f)
    if not report["ok"]:
        print(f"dump incomplete: {report}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
