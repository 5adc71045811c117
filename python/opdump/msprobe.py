"""msprobe's front door: `from opdump import PrecisionDebugger` in place of
`from msprobe.pytorch import PrecisionDebugger`, with msprobe's config.json.

    debugger = PrecisionDebugger(config_path="./config.json")
    for data, label in loader:
        debugger.start(model)    # dump from here (msprobe: at the head of the loop)
        ...forward, backward, optimizer step...
        debugger.stop()          # not dumped from here
        debugger.step()          # the step ends (msprobe's "step" list counts these)

The config is read by opdump's core (its msprobe dialect, README "Configs"): tasks statistics, tensor
and overflow_check; levels L0 (modules), L1 (APIs), mix (both, the APIs named by the module they run
in) and L2 (kernels); rank, step, list, data_mode, summary_mode. Module records are named as msprobe
names them: "Module.{path}.{Class}.forward.{n}" with the module's inputs (copied as it starts) and
outputs, and "Module.{path}.{Class}.backward.{n}" with the gradients reaching its outputs. A task or
field opdump does not have is a ConfigError naming it. The dump goes to dump_path in MindSpore's
layout ({dump_path}/rank_{R}/Net/{model id}/{step}/), which `opdump compare` reads.

With "opdump": {"layout": "msprobe"} in the config the dump is msprobe's own layout instead
({dump_path}/step{N}/rank{R}/dump.json, stack.json, construct.json, dump_tensor_data/), recorded as msprobe
records it (framework APIs by their Python names, msprobe_recorder.py) for msprobe's compare and graph tools.
"""
import json
import os
import warnings

from . import _opdump
from .gradients import on_gradients

# PrecisionDebugger's keyword overrides and the config.json keys they replace (the msprobe
# PyTorch data-dump guide: arguments other than config_path and model win over the file).
_OVERRIDES = ("task", "dump_path", "level", "step")


def _read_config(config_path):
    if config_path is None:
        return {}
    path = os.fspath(config_path)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise _opdump.ConfigError(f"{path}: cannot read msprobe's config.json: {e.strerror}") from None
    except ValueError as e:
        raise _opdump.ConfigError(f"{path}: not JSON: {e}") from None


def _tensors(value, out):
    """The tensors of a module's arguments or results, in order (tuples, lists and dict values)."""
    import torch
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, out)
    return out


def _host(tensors, copy):
    """(host tensor, (address, numpy dtype name, shape)) of each dumpable tensor: contiguous host memory
    the caller keeps alive while the core copies it. `copy`: a copy of its own even on the host (a module's
    inputs, which the module may change in place)."""
    import torch
    out = []
    for t in tensors:
        if t.layout != torch.strided or t.is_quantized or t.is_complex():
            continue  # no dump format (the API records of the same data say so)
        h = t.detach().to("cpu", copy=copy).contiguous()
        out.append((h, (h.data_ptr(), str(h.dtype).replace("torch.", ""), list(h.shape))))
    return out


def _dump_record(op_type, name, inputs, outputs):
    """`inputs`, `outputs`: _host() pairs, whose host tensors stay alive here while the core copies them."""
    _opdump.dump_named_op(op_type, name, [t for _, t in inputs], [t for _, t in outputs])


class _ModuleRecords:
    """msprobe's module records (levels L0 and mix): forward hooks on every submodule of the model,
    and hooks on its outputs' gradients. A failure is warned about once and never reaches the training."""

    def __init__(self, model, inputs, outputs):
        import torch
        self.inputs, self.outputs = inputs, outputs
        self.handles = []
        self.calls = {}
        self.iteration = None
        self.failed = False
        for path, module in model.named_modules():
            if not path or isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
                continue  # the root (the model's own call) and containers whose forward never runs
            prefix = f"Module.{path}.{type(module).__name__}"
            self.handles.append(module.register_forward_pre_hook(self._pre(prefix)))
            self.handles.append(module.register_forward_hook(self._post(type(module).__name__)))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _guarded(self, what, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a dump never stops the training
            if not self.failed:
                self.failed = True
                warnings.warn(f"opdump: a module record ({what}) was not written: {e}", stacklevel=3)

    def _next_call(self, prefix):
        iteration = _opdump.iteration()
        if iteration != self.iteration:  # numbered afresh each step, as msprobe does
            self.iteration, self.calls = iteration, {}
        n = self.calls.get(prefix, 0)
        self.calls[prefix] = n + 1
        return n

    def _pre(self, prefix):
        def pre(module, args):
            if not _opdump.dumping():
                return
            name = f"{prefix}.forward.{self._next_call(prefix)}"
            kept = []
            if self.inputs:
                self._guarded(name, lambda: kept.extend(_host(_tensors(args, []), copy=True)))
            module.__dict__.setdefault("_opdump_records", []).append((prefix, name, kept))
        return pre

    def _post(self, class_name):
        def post(module, args, output):
            pending = module.__dict__.get("_opdump_records")
            if not pending:
                return  # not dumping when the module started
            prefix, name, inputs = pending.pop()
            results = _tensors(output, [])

            self._guarded(name, lambda: _dump_record(class_name, name, inputs,
                                                     _host(results, copy=False) if self.outputs else []))
            self._guarded(name, lambda: self._hook_gradients(class_name, name.replace(".forward.", ".backward."), results))
        return post

    def _hook_gradients(self, class_name, name, results):
        """One backward record when the gradients of all the module's outputs that need one arrived."""
        def done(grads):
            if _opdump.dumping():  # no host copies of gradients nobody dumps
                self._guarded(name, lambda: _dump_record(class_name, name, _host(grads, copy=False), []))
        on_gradients(results, done)


class PrecisionDebugger:
    """msprobe's PrecisionDebugger (one per process, as msprobe's): the constructor takes config_path and
    the overrides task, dump_path, level, model and step; start(model), stop(), step() and
    forward_backward_dump_end() as msprobe's, also when called on the class."""

    _instance = None

    def __new__(cls, *args, **kwargs):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._ready = False
        return cls._instance

    def __init__(self, config_path=None, task=None, dump_path=None, level=None, model=None, step=None):
        if self._ready:
            return  # msprobe keeps the first instance's settings
        config = _read_config(config_path)
        if not isinstance(config, dict):
            raise _opdump.ConfigError(f"{config_path}: msprobe's config.json must be a JSON object")
        given = dict(task=task, dump_path=dump_path, level=level, step=step)
        for key in _OVERRIDES:
            if given[key] is not None:
                config[key] = list(given[key]) if key == "step" else given[key]
        config.setdefault("task", "statistics")  # msprobe's defaults
        config.setdefault("level", "L1")
        if config.get("dump_path") is not None:
            config["dump_path"] = os.fspath(config["dump_path"])
        # The core checks everything now: a task or field opdump lacks fails here, not at start().
        self.parsed = _opdump.parse_config_text(json.dumps(config), self._source(config_path))
        self.msprobe_layout = (config.get("opdump") or {}).get("layout") == "msprobe"
        if self.msprobe_layout and config["level"] not in ("L0", "L1", "mix"):
            raise _opdump.ConfigError(f"{self._source(config_path)}: level: \"{config['level']}\" in msprobe's layout: "
                                      "only L0, L1 and mix (kernels are dumped in MindSpore's layout)")
        self.config = config
        self.config_path = config_path
        self.model = model
        self._handle = None
        self._modules = None
        self._recorder = None
        self._step = 0  # msprobe's step count (the msprobe layout counts its own; the engine's otherwise)
        self._configured = False
        self._finished = False
        self._ready = True

    @staticmethod
    def _source(config_path):
        return os.fspath(config_path) if config_path is not None else "PrecisionDebugger(...)"

    @classmethod
    def _get(cls, what):
        if cls._instance is None or not cls._instance._ready:
            raise RuntimeError(f"PrecisionDebugger.{what}(): create PrecisionDebugger(config_path=...) first")
        return cls._instance

    def _configure(self, model):
        from . import _apply_config, register_model  # the package's own route (rank, compiled code)
        model = model if model is not None else self.model
        level = self.config["level"]
        if level in ("L0", "mix") and model is None:
            raise ValueError(f"PrecisionDebugger: level \"{level}\" records the model's modules: "
                             "pass the model to PrecisionDebugger(model=...) or start(model)")
        if self.msprobe_layout:
            self._configure_msprobe_layout(model)
            return
        if model is not None:
            self._handle = register_model(model, type(model).__name__)
        if level in ("L0", "mix") and self.config["task"] != "overflow_check":
            modes = (self.config.get(self.config["task"]) or {}).get("data_mode") or ["all"]
            self._modules = _ModuleRecords(model, inputs="all" in modes or "input" in modes,
                                           outputs="all" in modes or "output" in modes)
        _opdump.set_paused(True)  # nothing is dumped before start() returns
        _apply_config(self.config, _opdump.set_dump, "PrecisionDebugger")
        self._configured = True

    def _configure_msprobe_layout(self, model):
        from . import _detect_rank
        from .msprobe_recorder import MsprobeRecorder
        from .msprobe_writer import MsprobeWriter
        task = self.config["task"]
        fields = self.config.get(task) or {}
        rank, _ = _detect_rank()
        self._rank = rank
        writer = MsprobeWriter(self.config.get("dump_path") or "./", task, self.config["level"],
                               fields.get("summary_mode", "statistics"), rank)
        self._recorder = MsprobeRecorder(writer, self.config["level"], model, fields.get("list"),
                                         fields.get("data_mode"))
        self._recorder.install()
        self._configured = True

    @classmethod
    def start(cls, model=None):
        """Dumps the ops run from now until stop() (or forward_backward_dump_end())."""
        self = cls._get("start")
        if self._finished:
            return
        if not self._configured:
            self._configure(model)
        if not self._steps_left():
            self.finish()
            return
        if self._recorder is not None:
            self._start_recording()
            return
        _opdump.set_paused(False)

    def _start_recording(self):
        recorder = self._recorder
        if not self.parsed.selects(self._step, self._rank):
            return  # a step or rank the config does not select
        if not recorder.writer.open():
            recorder.writer.begin_step(self._step)
            recorder.new_step()
        recorder.active = True

    @classmethod
    def stop(cls):
        """Ops run from now on are not dumped; after the last step of the config's "step" list the dump is
        finished (its files complete, as msprobe's stop() makes them)."""
        self = cls._get("stop")
        if self._recorder is not None:
            self._recorder.active = False
        else:
            _opdump.set_paused(True)
        if self._configured and not self._finished and not self._steps_left(after_this=True):
            self.finish()

    @classmethod
    def forward_backward_dump_end(cls):
        """msprobe's: the rest of this step is not dumped (start() at the next step dumps again)."""
        self = cls._get("forward_backward_dump_end")
        if self._recorder is not None:
            self._recorder.active = False
        else:
            _opdump.set_paused(True)

    @classmethod
    def step(cls):
        """Ends the current step."""
        self = cls._get("step")
        if self._recorder is not None:
            self._recorder.active = False
            self._recorder.writer.end_step()  # the step's files, complete
            self._step += 1
            return
        _opdump.step()

    def finish(self):
        """Finishes the dump now (also done at exit): returns finalize_dump()'s report, or None."""
        from . import finalize_dump
        if self._finished or not self._configured:
            return None
        self._finished = True
        if self._recorder is not None:
            recorder, self._recorder = self._recorder, None
            recorder.active = False
            recorder.remove()
            recorder.writer.end_step()
            folders = recorder.writer.written
            if not folders:
                warnings.warn(f"opdump: PrecisionDebugger recorded nothing in {recorder.writer.dump_path} "
                              "(no selected step and rank ran between start() and stop())", stacklevel=2)
            return {"layout": "msprobe", "folders": folders}
        try:
            report = finalize_dump()
        finally:
            _opdump.set_paused(False)
            if self._handle is not None:
                self._handle.remove()
                self._handle = None
            if self._modules is not None:
                self._modules.remove()
                self._modules = None
        return report

    def _steps_left(self, after_this=False):
        """Whether a selected step is still to come (this one included unless after_this)."""
        if self.msprobe_layout:
            return self.parsed.selects_from(self._step + 1 if after_this else self._step)
        iteration = _opdump.iteration()
        return _opdump.selected_from(iteration + 1 if after_this else iteration)

    @classmethod
    def _reset(cls):
        """Tests: forget the instance (msprobe's is for the process's life)."""
        if cls._instance is not None and cls._instance._ready:
            cls._instance.finish()
        cls._instance = None
