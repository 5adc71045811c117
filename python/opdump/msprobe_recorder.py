"""What msprobe records, recorded as msprobe names it, for PrecisionDebugger's msprobe layout (msprobe_writer.py).

Level L1: each call of a framework API -- `torch.nn.functional.X` ("Functional.X"), `torch.X` ("Torch.X"), a
Tensor method or operator ("Tensor.X", "Tensor.__add__") -- is one record "{Prefix}.{api}.{n}.forward" with its
Python arguments (read before the call: an in-place API's input is what it read) and results; calls made inside a
recorded call are not recorded. Its backward record "{Prefix}.{api}.{n}.backward" is the autograd node that made
its first result: "input" the gradients reaching it, "output" those it passes to its inputs.
Level L0: each submodule call "Module.{path}.{Class}.forward.{n}" with its inputs, outputs and parameters, and
"...backward.{n}" with the gradients reaching its outputs. Level mix: both, construct.json giving each call's
enclosing module call. n counts the calls of that name in the step. Nothing here may stop the training: a failure
is warned about once and the call goes on unrecorded.
"""
import linecache
import os
import sys
import threading
import warnings
import weakref

from .gradients import on_gradients

_HERE = os.path.dirname(os.path.abspath(__file__))
_local = threading.local()  # .inside: a recorded call (or the recorder itself) is running on this thread

# Tensor methods that are no computation (metadata, conversions out of torch, autograd bookkeeping) or that
# the recorder itself relies on: never wrapped.
_TENSOR_SKIP = {
    "backward", "register_hook", "retain_grad", "requires_grad_", "size", "dim", "numel", "stride", "data_ptr",
    "element_size", "nelement", "ndimension", "item", "tolist", "numpy", "storage", "untyped_storage",
    "storage_offset", "type", "get_device", "share_memory_", "has_names", "refine_names", "rename", "align_to",
    "align_as", "detach", "detach_", "cpu", "contiguous", "clone", "dim_order", "element_size", "new_tensor",
    "pin_memory", "record_stream", "set_", "storage_type", "to_dense", "values", "indices", "coalesce",
}
# Operators msprobe records as Tensor.__op__.
_TENSOR_DUNDERS = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__",
    "__truediv__", "__rtruediv__", "__itruediv__", "__div__", "__rdiv__", "__idiv__", "__floordiv__",
    "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__", "__imod__", "__pow__", "__rpow__", "__ipow__",
    "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__and__", "__rand__", "__iand__", "__or__", "__ror__",
    "__ior__", "__xor__", "__rxor__", "__ixor__", "__invert__", "__lshift__", "__rlshift__", "__ilshift__",
    "__rshift__", "__rrshift__", "__irshift__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
    "__getitem__", "__setitem__",
}
# torch.nn.functional names that are helpers, not APIs.
_FUNCTIONAL_SKIP = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
                    "handle_torch_function", "boolean_dispatch", "assert_int_or_pair"}


def _targets():
    """(namespace, attribute, prefix) of every API recorded at level L1."""
    import inspect
    import torch
    import torch.nn.functional as F
    out = []
    for name in dir(F):
        obj = getattr(F, name, None)
        if name.startswith("_") or name in _FUNCTIONAL_SKIP or inspect.isclass(obj) or inspect.ismodule(obj):
            continue
        if inspect.isfunction(obj) or inspect.isbuiltin(obj):
            out.append((F, name, "Functional"))
    for name in dir(torch._C._VariableFunctions):  # torch's operators (not its utilities)
        if not name.startswith(("_", "is_")) and callable(getattr(torch, name, None)):
            out.append((torch, name, "Torch"))
    for name in dir(torch.Tensor):
        if name in _TENSOR_SKIP or name.startswith(("is_", "has_")):
            continue
        if name.startswith("_") and name not in _TENSOR_DUNDERS:
            continue
        attr = inspect.getattr_static(torch.Tensor, name)
        if callable(attr) and not isinstance(attr, (property, staticmethod, classmethod, type)):
            out.append((torch.Tensor, name, "Tensor"))
    return out


def _inside():
    return getattr(_local, "inside", False)


# A process forked while recording (DataLoader workers) records nothing: its records would never be written, and
# summarizing its batches would slow the loading down.
_recorders = weakref.WeakSet()


def _stop_in_child():
    for recorder in list(_recorders):
        recorder.active = False


os.register_at_fork(after_in_child=_stop_in_child)


class _Inside:
    """Marks this thread as inside a recorded call (or the recorder) for the `with` block."""

    def __enter__(self):
        self.before = _inside()
        _local.inside = True

    def __exit__(self, *exc):
        _local.inside = self.before


def _first_tensor(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(value, dict):
        return _first_tensor(list(value.values()))
    return None


def _has_tensor(value):
    return _first_tensor(value) is not None


def _frames():
    """The Python stack of the call, innermost first, as msprobe's stack.json writes frames (opdump's own
    frames left out)."""
    out = []
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_HERE):
            line = linecache.getline(code.co_filename, frame.f_lineno).strip()
            out.append(f"File {code.co_filename}, line {frame.f_lineno}, in {code.co_name}, \n {line}")
        frame = frame.f_back
    return out


class MsprobeRecorder:
    """Records calls into a MsprobeWriter while `active` (between PrecisionDebugger's start() and stop())."""

    def __init__(self, writer, level, model, names, data_mode):
        self.writer = writer
        self.apis = level in ("L1", "mix")
        self.modules = level in ("L0", "mix")
        self.model = model
        self.names = list(names or [])  # msprobe's "list": record the calls whose names contain an entry
        modes = set(data_mode or ["all"])
        self.forward = bool(modes & {"all", "forward"}) or not modes & {"forward", "backward"}
        self.backward = bool(modes & {"all", "backward"}) or not modes & {"forward", "backward"}
        self.inputs = bool(modes & {"all", "input"}) or not modes & {"input", "output"}
        self.outputs = bool(modes & {"all", "output"}) or not modes & {"input", "output"}
        self.active = False
        self.counts = {}
        self.count_lock = threading.Lock()
        self.module_stack = threading.local()
        self.restore = []  # (namespace, attribute, original, whether the namespace itself held it)
        self.handles = []
        self.failed = False

    # -- installation -------------------------------------------------------------------------------
    def install(self):
        _recorders.add(self)
        if self.apis:
            for namespace, name, prefix in _targets():
                own = name in vars(namespace)
                original = getattr(namespace, name)
                try:
                    setattr(namespace, name, self._wrapper(f"{prefix}.{name}", original))
                except (AttributeError, TypeError):
                    continue  # a read-only attribute: not recorded
                self.restore.append((namespace, name, original, own))
        if self.modules and self.model is not None:
            import torch
            for path, module in self.model.named_modules():
                if not path or isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
                    continue  # the root and containers whose forward never runs, as msprobe
                prefix = f"Module.{path}.{type(module).__name__}"
                self.handles.append(module.register_forward_pre_hook(self._module_pre(prefix)))
                self.handles.append(module.register_forward_hook(self._module_post()))

    def remove(self):
        for namespace, name, original, own in reversed(self.restore):
            if own:
                setattr(namespace, name, original)
            else:
                delattr(namespace, name)  # inherited (Tensor's C methods): the class's own again
        self.restore = []
        for h in self.handles:
            h.remove()
        self.handles = []

    def new_step(self):
        with self.count_lock:
            self.counts = {}

    # -- common -------------------------------------------------------------------------------------
    def _guarded(self, what, fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - a dump never stops the training
            if not self.failed:
                self.failed = True
                warnings.warn(f"opdump: msprobe record {what} was not written: {e}", stacklevel=3)
            return None

    def _next_name(self, stem, direction):
        with self.count_lock:
            n = self.counts.get(stem, 0)
            self.counts[stem] = n + 1
        return f"{stem}.{n}.{direction}" if not stem.startswith("Module.") else f"{stem}.{direction}.{n}"

    def _selected(self, name):
        return not self.names or any(entry in name for entry in self.names)

    def _stack(self):
        stack = getattr(self.module_stack, "calls", None)
        if stack is None:
            stack = self.module_stack.calls = []
        return stack

    def _parent(self):
        stack = self._stack()
        return stack[-1] if stack else None

    def _arguments(self, name, args, kwargs):
        w = self.writer
        return {"input_args": [w.describe(a, f"{name}.input.{i}") for i, a in enumerate(args)],
                "input_kwargs": {k: w.describe(v, f"{name}.input.{k}") for k, v in kwargs.items()}}

    def _results(self, name, out):
        values = list(out) if isinstance(out, (list, tuple)) else [out]
        return [self.writer.describe(v, f"{name}.output.{i}") for i, v in enumerate(values)]

    # -- APIs ---------------------------------------------------------------------------------------
    def _wrapper(self, api, original):
        recorder = self

        def wrapper(*args, **kwargs):
            if not recorder.active or _inside():
                return original(*args, **kwargs)
            return recorder._call(api, original, args, kwargs)

        for attribute in ("__name__", "__qualname__", "__doc__"):
            try:
                setattr(wrapper, attribute, getattr(original, attribute))
            except (AttributeError, TypeError):
                pass
        wrapper.__wrapped__ = original
        return wrapper

    def _call(self, api, original, args, kwargs):
        with _Inside():
            name = self._next_name(api, "forward")
            record = None
            if self.forward and self._selected(name) and (_has_tensor(args) or _has_tensor(kwargs)):
                record = self._guarded(name, lambda: self._arguments(name, args, kwargs) if self.inputs else {})
            out = original(*args, **kwargs)
            if record is not None and (record or self.outputs):
                if self.outputs:
                    results = self._guarded(name, lambda: self._results(name, out))
                    if results is not None:
                        record["output"] = results
                self.writer.add(name, record, self._parent(), self._guarded(name, _frames), self.modules)
            if self.backward:
                self._guarded(name, lambda: self._hook_backward(name.replace(".forward", ".backward"), out))
            return out

    def _hook_backward(self, name, out):
        import torch
        first = _first_tensor(out)
        if first is None or not (first.requires_grad and torch.is_grad_enabled()) or first.grad_fn is None:
            return
        if not self._selected(name):
            return

        def hook(grad_inputs, grad_outputs):
            if not self.writer.open():
                return
            with _Inside():
                w = self.writer
                record = {}
                if self.inputs:
                    record["input"] = self._guarded(name, lambda: [w.describe(g, f"{name}.input.{i}")
                                                                   for i, g in enumerate(grad_outputs)])
                if self.outputs:
                    record["output"] = self._guarded(name, lambda: [w.describe(g, f"{name}.output.{i}")
                                                                    for i, g in enumerate(grad_inputs)])
                w.add(name, record, None, None, self.modules)

        first.grad_fn.register_hook(hook)

    # -- modules ------------------------------------------------------------------------------------
    def _module_pre(self, prefix):
        def pre(module, args):
            if not self.active or _inside():
                return
            with _Inside():
                name = self._next_name(prefix, "forward")
                record = None
                if self.forward and self._selected(name):
                    record = self._guarded(name, lambda: self._arguments(name, args, {}) if self.inputs else {})
                parent = self._parent()
                self._stack().append(name)
                module.__dict__.setdefault("_opdump_msprobe", []).append((name, record, parent))
        return pre

    def _module_post(self):
        def post(module, args, output):
            pending = module.__dict__.get("_opdump_msprobe")
            if not pending:
                return  # not recording when the module started
            name, record, parent = pending.pop()
            stack = self._stack()
            if stack and stack[-1] == name:
                stack.pop()
            with _Inside():
                if record is not None:
                    if self.outputs:
                        results = self._guarded(name, lambda: self._results(name, output))
                        if results is not None:
                            record["output"] = results
                    params = self._guarded(name, lambda: {
                        p: self.writer.describe(t, f"{name}.parameters.{p}")
                        for p, t in module.named_parameters(recurse=False)})
                    if params:
                        record["parameters"] = params
                    self.writer.add(name, record, parent, self._guarded(name, _frames), True)
                if self.backward and self.inputs:
                    self._guarded(name, lambda: self._module_gradients(name.replace(".forward.", ".backward."), output))
        return post

    def _module_gradients(self, name, output):
        """One backward record when the gradients of all the module's outputs that need one arrived."""
        if not self._selected(name):
            return

        def done(grads):
            if self.writer.open():
                with _Inside():
                    inputs = self._guarded(name, lambda: [self.writer.describe(g, f"{name}.input.{j}")
                                                          for j, g in enumerate(grads)])
                    self.writer.add(name, {"input": inputs, "output": []}, None, None, True)
        on_gradients(list(output) if isinstance(output, (list, tuple)) else [output], done)
