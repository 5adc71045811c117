"""msprobe's dump files, as PrecisionDebugger writes them with `"opdump": {"layout": "msprobe"}`: per step and rank
{dump_path}/step{N}/rank{R}/dump.json (every API or module call's arguments and results; tensors with their dtype,
shape, msprobe's statistics Max/Min/Mean/Norm and requires_grad, CRC32 as "md5" with summary_mode md5),
stack.json, construct.json and, for the tensor task, dump_tensor_data/{call}.{input|output}.{i}.pt (torch.save).
Format per msprobe's "PyTorch data dump" document."""
import ctypes
import json
import os
import threading
import zlib


def _write_whole(path, text):
    """The file appears complete or not at all (a crash leaves the previous version or nothing)."""
    temp = f"{path}.opdump-{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temp, path)


class MsprobeWriter:
    """One step's records at a time; end_step() writes its folder. Thread-safe: backward hooks run on
    autograd's threads."""

    def __init__(self, dump_path, task, level, summary_mode, rank):
        self.dump_path = os.path.abspath(os.fspath(dump_path))
        self.task, self.level, self.rank = task, level, rank
        self.md5 = summary_mode == "md5"
        self.lock = threading.Lock()
        self.step = None
        self.written = []  # folders written, in order

    # -- the step's folder --------------------------------------------------------------------------
    def begin_step(self, step):
        with self.lock:
            self.step = step
            self.folder = os.path.join(self.dump_path, f"step{step}", f"rank{self.rank}")
            self.data, self.construct, self.stacks = {}, {}, {}
            self.tensor_folder = os.path.join(self.folder, "dump_tensor_data") if self.task == "tensor" else None

    def open(self):
        return self.step is not None

    def end_step(self):
        """Writes the step's dump.json, stack.json and construct.json (nothing when no call was recorded)."""
        with self.lock:
            if self.step is None:
                return None
            step, data, construct, stacks = self.step, self.data, self.construct, self.stacks
            self.step = None
        if not data:
            return None
        os.makedirs(self.folder, exist_ok=True)
        head = {"task": self.task, "level": self.level, "framework": "pytorch", "dump_data_dir": self.tensor_folder}
        # One line per call: json's C encoder (an indent makes it the pure-Python one, a third of a resnet18
        # step), still read line by line. Python's json writes NaN and Infinity bare, as msprobe's files have them.
        lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
        calls = ",\n".join(f"  {json.dumps(name)}: {json.dumps(record)}" for name, record in data.items())
        text = "{\n" + ",\n".join(lines) + ',\n "data": {\n' + calls + "\n }\n}\n"
        _write_whole(os.path.join(self.folder, "dump.json"), text)
        stack = {str(i): [names, frames] for i, (frames, names) in enumerate(stacks.items())}
        _write_whole(os.path.join(self.folder, "stack.json"), json.dumps(stack, indent=1))
        _write_whole(os.path.join(self.folder, "construct.json"), json.dumps(construct, indent=1))
        self.written.append(self.folder)
        return step

    # -- records ------------------------------------------------------------------------------------
    def add(self, name, record, parent, frames, module_records):
        """`parent`: the enclosing module call's name (None at the top); `module_records`: whether the
        level records modules (msprobe's construct.json is empty otherwise)."""
        with self.lock:
            if self.step is None:
                return
            self.data[name] = record
            if module_records:
                self.construct[name] = parent
            if frames:
                self.stacks.setdefault(tuple(frames), []).append(name)

    # -- values as msprobe describes them -----------------------------------------------------------
    def describe(self, value, stem):
        """`value` (a call's argument, result or gradient) as dump.json holds it; `stem`: the name of its
        tensor file without ".pt" ("Functional.conv2d.0.forward.input.0")."""
        import torch
        if isinstance(value, torch.Tensor):
            return self.tensor(value, stem)
        if value is None:
            return None
        if isinstance(value, bool):
            return {"type": "bool", "value": value}
        if isinstance(value, int):
            return {"type": "int", "value": value}
        if isinstance(value, float):
            return {"type": "float", "value": value}
        if isinstance(value, str):
            return {"type": "str", "value": value}
        if isinstance(value, torch.Size):
            return {"type": "torch.Size", "value": list(value)}
        if isinstance(value, (list, tuple)):
            return [self.describe(v, f"{stem}.{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {str(k): self.describe(v, f"{stem}.{k}") for k, v in value.items()}
        if isinstance(value, torch.dtype):
            return {"type": "torch.dtype", "value": str(value)}
        if isinstance(value, torch.device):
            return {"type": "torch.device", "value": str(value)}
        if isinstance(value, slice):
            return {"type": "slice", "value": [self.describe(v, stem) if v is not None else None
                                                for v in (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        return {"type": f"{type(value).__module__}.{type(value).__qualname__}"}

    @staticmethod
    def statistics(t):
        """Max, Min, Mean and Norm as msprobe computes them: torch's own reductions in the tensor's dtype on its
        device (so that the same tensor gives the same bits in both tools); Mean and Norm of floating
        tensors other than float64 only, Max/Min of bool tensors as any/all, a 0-d tensor its value four
        times. Values on the device are read back in one synchronization."""
        import torch
        if t.dtype == torch.bool:
            return bool(t.any()), bool(t.all()), None, None
        if not t.shape:
            v = t.item()
            return v, v, v, v
        if t.is_complex():
            magnitude = t.abs()
            return tuple(float(x) for x in (magnitude.max(), magnitude.min(), magnitude.mean())) + (None,)
        try:
            low, high = torch.aminmax(t)  # one pass; the same values as torch.max and torch.min
        except RuntimeError:  # a dtype aminmax lacks on this device
            low, high = torch.min(t), torch.max(t)
        if t.is_floating_point() and t.dtype != torch.float64:
            return high.item(), low.item(), torch.mean(t).item(), torch.norm(t).item()
        return high.item(), low.item(), None, None

    def tensor(self, t, stem):
        import torch
        entry = {"type": "torch.Tensor", "dtype": str(t.dtype), "shape": list(t.shape)}
        values = t.detach()
        if values.layout != torch.strided or values.is_quantized or values.device.type == "meta" or not values.numel():
            entry.update(Max=None, Min=None, Mean=None, Norm=None, requires_grad=t.requires_grad)
            return entry  # no values to summarize (msprobe writes none either)
        mx, mn, mean, norm = self.statistics(values)
        entry.update(Max=mx, Min=mn, Mean=mean, Norm=norm, requires_grad=t.requires_grad)
        if self.md5 or self.tensor_folder is not None:
            host = values.cpu() if values.device.type != "cpu" else values
            host = host.contiguous()
        if self.md5:  # msprobe's "md5" is the CRC32 of the tensor's bytes
            size = host.numel() * host.element_size()
            entry["md5"] = f"{zlib.crc32((ctypes.c_char * size).from_address(host.data_ptr())):08x}"
        if self.tensor_folder is not None:
            os.makedirs(self.tensor_folder, exist_ok=True)
            file_name = f"{stem}.pt"
            path = os.path.join(self.tensor_folder, file_name)
            temp = f"{path}.opdump-{os.getpid()}.tmp"
            torch.save(host.clone(), temp)  # a clone: a view would save its whole storage
            os.replace(temp, path)
            entry["data_name"] = file_name
        return entry
