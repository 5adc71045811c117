"""One forward pass (and loss) of torchvision's resnet18, dumped either by opdump or in msprobe's
format, written from msprobe's documented layout ("PyTorch data dump" document of MindStudio
Probe): {dump_path}/step0/rank0/dump.json, stack.json, construct.json and, in tensor mode,
dump_tensor_data/{API}.{input|output}.{i}.pt. APIs are caught as msprobe's L1 level names them
(Functional./Torch./Tensor.{api}.{call}.forward), through a TorchFunctionMode; at level mix each
module's forward is recorded too and construct.json names each API's parent module.

  msprobe_workload.py --tool msprobe|opdump|opdump-h5 --out DIR [--task statistics|tensor] [--level L1|mix]
                      [--plant none|layer2_conv|inf_fc|linear_kernel] [--tensor-format pt|npy] [--bf16]
"""
import argparse
import json
import math
import os
import sys
import traceback

import torch
import torch.nn.functional as F
import torchvision


def plant(model, what):
    """A known change: the target's answer is where it first shows."""
    with torch.no_grad():
        if what == "layer2_conv":
            model.layer2[0].conv2.weight.mul_(1.5)
        elif what == "inf_fc":
            model.fc.weight[0, 0] = float("inf")
        elif what == "linear_kernel":  # a faulty CPU kernel: every linear 0.2% too large
            plant.library = torch.library.Library("aten", "IMPL")
            plant.library.impl("linear", lambda x, w, b=None: torch.ops.aten.addmm(b, x, w.t()) * 1.002, "CPU")


class MsprobeRecorder(torch.overrides.TorchFunctionMode):
    """Records each framework API call like msprobe's L1 dump (the calls inside it are not seen)."""

    def __init__(self, out, task, level, tensor_format):
        super().__init__()
        self.folder = os.path.join(out, "step0", "rank0")
        self.data_dir = os.path.join(self.folder, "dump_tensor_data")
        os.makedirs(self.data_dir if task == "tensor" else self.folder, exist_ok=True)
        self.task, self.level, self.tensor_format = task, level, tensor_format
        self.data, self.stack, self.construct = {}, {}, {}
        self.calls = {}
        self.busy = False
        self.modules = []  # the module forwards running now, innermost last
        self.names = {}
        for prefix, owner in (("Functional", F), ("Torch", torch), ("Tensor", torch.Tensor)):
            for attr in dir(owner):
                obj = getattr(owner, attr, None)
                if callable(obj):
                    self.names.setdefault(id(obj), (prefix, attr))
                    self.names.setdefault(id(getattr(obj, "__func__", obj)), (prefix, attr))

    def api_name(self, func):
        prefix, name = self.names.get(id(func), (None, None))
        if prefix is None:  # methods reached through their descriptor
            prefix, name = "Tensor", getattr(func, "__name__", "unknown")
        key = f"{prefix}.{name}"
        index = self.calls.get(key, 0)
        self.calls[key] = index + 1
        return f"{key}.{index}.forward"

    def describe(self, value, name):
        if isinstance(value, torch.Size):
            return {"type": "torch.Size", "value": [int(d) for d in value]}
        if isinstance(value, (list, tuple)):
            return [self.describe(v, f"{name}.{i}") for i, v in enumerate(value)]
        if isinstance(value, torch.Tensor):
            t = value.detach()
            f = t.float()
            entry = {"type": "torch.Tensor", "dtype": str(t.dtype), "shape": list(t.shape),
                     "Max": f.max().item() if t.numel() else None, "Min": f.min().item() if t.numel() else None,
                     "Mean": f.mean().item() if t.numel() else None, "Norm": f.norm().item() if t.numel() else None,
                     "requires_grad": value.requires_grad}
            if self.task == "tensor":
                if self.tensor_format == "pt":
                    entry["data_name"] = name + ".pt"
                    torch.save(t.clone(), os.path.join(self.data_dir, entry["data_name"]))
                else:
                    import numpy as np
                    entry["data_name"] = name + ".npy"
                    np.save(os.path.join(self.data_dir, entry["data_name"]), t.numpy())
            return entry
        if value is None:
            return None
        if isinstance(value, (bool, int, float, str)):
            return {"type": type(value).__name__, "value": value}
        if isinstance(value, slice):
            return {"type": "slice", "value": [value.start, value.stop, value.step]}
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        if isinstance(value, torch.dtype):
            return {"type": "torch.dtype", "value": str(value)}
        if isinstance(value, torch.device):
            return {"type": "torch.device", "value": str(value)}
        return {"type": type(value).__name__}

    def record_inputs(self, api, args, kwargs):
        """Before the call, as msprobe does: an in-place API's input is what it read."""
        self.data[api] = {"input_args": self.describe(list(args), f"{api}.input"),
                          "input_kwargs": {k: self.describe(v, f"{api}.input.{k}") for k, v in kwargs.items()}}

    def record(self, api, output):
        self.data[api]["output"] = self.describe(output if isinstance(output, (list, tuple)) else [output],
                                                 f"{api}.output")
        frames = [f"File {f.filename}, line {f.lineno}, in {f.name}, \n {f.line}"
                  for f in reversed(traceback.extract_stack()[:-2]) if "/torch/" not in f.filename]
        self.stack[api] = frames
        if self.level == "mix":
            self.construct[api] = self.modules[-1] if self.modules else None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.busy or getattr(func, "__name__", "") in ("__get__", "__set__", "dim", "size", "numel", "__len__"):
            return func(*args, **kwargs)
        api = self.api_name(func)
        self.record_inputs(api, args, kwargs)
        output = func(*args, **kwargs)
        self.record(api, output)
        return output

    def watch(self, model):
        """Module forwards (level mix): Module.{path}.{Class}.forward.{n}."""
        counts = {}

        def pre(module, args, path):
            name = f"Module.{path}.{type(module).__name__}.forward.{counts.get(path, 0)}"
            counts[path] = counts.get(path, 0) + 1
            if self.level == "mix":
                self.construct[name] = self.modules[-1] if self.modules else None
            self.modules.append(name)

        def post(module, args, output, path):
            name = self.modules.pop()
            if self.level == "mix":
                self.busy = True  # the statistics' own calls are not APIs of the model
                self.data[name] = {"input_args": self.describe(list(args), f"{name}.input"), "input_kwargs": {},
                                   "output": self.describe([output], f"{name}.output")}
                self.busy = False

        for path, module in model.named_modules():
            if path:  # the model itself is not dumped, as in msprobe
                module.register_forward_pre_hook(lambda m, a, p=path: pre(m, a, p))
                module.register_forward_hook(lambda m, a, o, p=path: post(m, a, o, p))

    def save(self):
        dump = {"task": self.task, "level": self.level, "framework": "pytorch",
                "dump_data_dir": self.data_dir if self.task == "tensor" else None, "data": self.data}
        for name, content in (("dump.json", dump), ("stack.json", self.stack), ("construct.json", self.construct)):
            with open(os.path.join(self.folder, name), "w") as f:
                json.dump(content, f, indent=1)  # NaN and Infinity written bare, as Python's json does


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", choices=["msprobe", "opdump", "opdump-h5"], required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--task", default="statistics", choices=["statistics", "tensor"])
    p.add_argument("--level", default="mix", choices=["L1", "mix"])
    p.add_argument("--plant", default="none")
    p.add_argument("--tensor-format", default="pt", choices=["pt", "npy"])
    p.add_argument("--opdump-path", default="")
    p.add_argument("--bf16", action="store_true", help="forward under CPU autocast to bfloat16")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torchvision.models.resnet18(num_classes=10).eval()
    plant(model, args.plant)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    y = torch.tensor([1, 7])

    if args.tool == "msprobe":
        recorder = MsprobeRecorder(args.out, args.task, args.level, args.tensor_format)
        recorder.watch(model)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16), recorder:
            loss = F.cross_entropy(model(x), y)
        recorder.save()
    else:
        sys.path.insert(0, args.opdump_path)
        import opdump
        config = {"common_dump_settings": {
            "dump_mode": 0, "path": args.out, "net_name": "net", "iteration": "all", "input_output": 0,
            "kernels": [], "support_device": [0], "saved_data": "statistic" if args.task == "statistics" else "tensor",
            "statistic_category": ["max", "min", "avg", "l2norm", "count", "nan count", "negative inf count",
                                   "positive inf count"]}, "e2e_dump_settings": {"enable": True}}
        if args.tool == "opdump-h5":  # the torch_npu 1.5 dumper's file: {out}/run.h5
            opdump.register_model(model, "net")
            with opdump.dumper(use_dump=True, dump_path=os.path.join(args.out, "run.h5")), torch.no_grad():
                loss = F.cross_entropy(model(x), y)
        else:
            with opdump.dump(config):
                opdump.register_model(model, "net")
                with torch.no_grad():
                    loss = F.cross_entropy(model(x), y)
    print(json.dumps({"loss": loss.item() if math.isfinite(loss.item()) else str(loss.item())}))


if __name__ == "__main__":
    main()
