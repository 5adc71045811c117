"""opdump: operator-level dump of PyTorch training and inference.

    import opdump
    opdump.register_model(model, "resnet")   # names ops by module path, selects by dump_list
    opdump.hook_optimizer(optimizer)         # each optimizer.step() ends an iteration (or call opdump.step())
    with opdump.dump("acl.json") as d:       # a path or a dict, in any dialect: acl.json, MindSpore, session options
        ...train...
    print(d.report)                          # what was written and lost

or, without `with`: opdump.set_dump(config) ... opdump.finalize_dump(). Scripts written for msprobe change
only their import: `from opdump import PrecisionDebugger` reads msprobe's config.json (opdump/msprobe.py).

Setting OPDUMP_CONFIG (or MINDSPORE_DUMP_CONFIG) to a config file turns dumping on at import.
"""
import atexit
import sys
import warnings
import os
import weakref

from . import _opdump
from ._opdump import ConfigError, OpdumpError  # noqa: F401

__all__ = ["init", "init_dump", "set_dump", "dump", "finalize_dump", "finalize", "step", "iteration", "counters",
           "register_model", "ModelHandle", "hook_optimizer", "dumping", "dump_root", "dumper", "get_op_map", "ConfigError",
           "OpdumpError", "PrecisionDebugger", "__version__"]

__version__ = _opdump.version()


def _detect_rank():
    """Rank and device of this process: torch.distributed when initialized, else RANK/LOCAL_RANK."""
    rank = device = None
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            rank = dist.get_rank()
    except Exception:  # torch.distributed missing or not usable: fall back to the environment
        pass
    _, env_rank, env_device = _opdump.environment()  # RANK / LOCAL_RANK, read by the library
    if rank is None:
        return env_rank, env_device
    return rank, env_device if "LOCAL_RANK" in os.environ else rank


# ---- torch.compile ----------------------------------------------------------------------------
# Compiled graphs run fused kernels that no operator callback sees: while a dump is configured,
# torch.compile'd code runs eagerly (PyTorch 2.6's torch.compiler.set_stance("force_eager"); on
# earlier 2.x releases dynamo is disabled and its caches reset), so that its ops are dumped like
# any others, with a warning. Finalizing the dump restores compilation.
_compile_restore = None


def _compiled_code_runs_eagerly():
    global _compile_restore
    if _compile_restore is not None:
        return
    try:
        import torch
    except ImportError:
        return
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "set_stance"):
        compiler.set_stance("force_eager")
        _compile_restore = lambda: compiler.set_stance("default")
    elif hasattr(torch, "_dynamo"):
        import torch._dynamo
        previous = torch._dynamo.config.disable
        torch._dynamo.config.disable = True
        torch._dynamo.reset()

        def restore():
            torch._dynamo.config.disable = previous
            torch._dynamo.reset()
        _compile_restore = restore
    # (PyTorch 1.x has no torch.compile: nothing to do)


def _compiled_code_compiles_again():
    global _compile_restore
    if _compile_restore is not None:
        restore, _compile_restore = _compile_restore, None
        restore()


def _configuring(configure):
    """Runs `configure` (which may turn a dump on) with compiled code switched to eager first: the
    switch imports dynamo, whose own ops must not land in the dump."""
    had = _compile_restore is not None
    _compiled_code_runs_eagerly()
    try:
        configure()
    finally:
        if not _opdump.dump_root():
            if not had:
                _compiled_code_compiles_again()
        elif not had and _compile_restore is not None:
            import warnings
            warnings.warn("opdump: torch.compile'd code runs eagerly while a dump is configured, so that its ops "
                          "are observed; finalize_dump() restores compilation", stacklevel=3)


def _apply_config(config, apply_path, what):
    """Applies `config`: a path (str or os.PathLike) with `apply_path`, or a dict (the JSON of any dialect)."""
    rank, device = _detect_rank()
    _opdump.set_rank(rank, device)
    if isinstance(config, dict):
        import json
        try:
            text = json.dumps(config)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{what}: the config dict is not JSON: {e}") from None
        _configuring(lambda: _opdump.set_dump_text(text, f"{what}(dict)"))
    elif isinstance(config, (str, bytes, os.PathLike)):
        path = os.fsdecode(config)
        _configuring(lambda: apply_path(path))
    else:
        raise TypeError(f"{what}: config must be a path or a dict, not {type(config).__name__}")


def init(config=None):
    """the CANN aclmdlSetDump reference's init: once per process; `config` is a config file path, a dict or None."""
    if config is None or (isinstance(config, (str, bytes)) and not config):
        rank, device = _detect_rank()
        _opdump.set_rank(rank, device)
        _configuring(lambda: _opdump.init(""))
        return
    if isinstance(config, dict):
        _configuring(lambda: _opdump.init(""))
    _apply_config(config, _opdump.init, "init")


def init_dump():
    _opdump.init_dump()


def set_dump(target, enabled=True):
    """set_dump(path or dict): load a dump config (replaces any earlier one); a dict is the config's JSON
    in any dialect ({"dump": {...}}, {"common_dump_settings": {...}}, ...).

    set_dump(module, enabled=True): MindSpore's set_dump, for dump_mode 2: only ops run inside
    marked modules are dumped."""
    if hasattr(target, "register_forward_pre_hook"):
        _mark_module(target, enabled)
        return
    _apply_config(target, _opdump.set_dump, "set_dump")


class dump:
    """One dump session as a `with` block: the config (a path or a dict) applies inside it, and the dump is
    finalized when the block ends, even by an exception.

        with opdump.dump({"dump": {"dump_path": "out", "dump_list": [{"model_name": "net"}]}}) as d:
            train_one_step()
        d.root    # where it dumped
        d.report  # finalize_dump()'s dict: files_written, bytes_written, files_lost, ..., ok
    """

    def __init__(self, config):
        self.config = config
        self.root = None
        self.report = None

    def __enter__(self):
        set_dump(self.config)
        self.root = dump_root()
        return self

    def __exit__(self, *exc):
        self.report = finalize_dump()
        return False


def finalize_dump():
    """Drains and closes the current dump; returns a dict of what was written and lost."""
    try:
        return _opdump.finalize_dump()
    finally:
        _compiled_code_compiles_again()


def finalize():
    try:
        _opdump.finalize()
    finally:
        _compiled_code_compiles_again()


def step():
    """Ends the current iteration."""
    _opdump.step()


def iteration():
    return _opdump.iteration()


def counters():
    """What the current dump has taken so far: a dict with the keys of finalize_dump()'s counters
    (ops, tensors, tensor_bytes, statistic_rows, statistic_bytes, statistic_bytes_read: of those bytes, the ones
    read to summarize them, the rest known from earlier statistics; in overflow mode overflow_checks,
    overflow_bytes_read, overflow_bounded: outputs known clean from their operands, not read, and
    overflow_bytes_copied: inputs copied before an op wrote them in place)."""
    return _opdump.counters()


def dumping():
    """True while the current iteration is being dumped."""
    return _opdump.dumping()


def dump_root():
    """The folder this process dumps into ({path}/rank_N or {dump_path}/{time}/{device})."""
    return _opdump.dump_root()


def hook_optimizer(optimizer):
    """Counts iterations by optimizer.step(): each call ends one (PyTorch 2.x: a step post-hook;
    1.x: step is wrapped)."""
    if hasattr(optimizer, "register_step_post_hook"):
        optimizer.__dict__["_opdump_step_hook"] = optimizer.register_step_post_hook(lambda *args: _opdump.step())
        return optimizer
    original = optimizer.step

    def step_and_count(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            _opdump.step()

    optimizer.step = step_and_count
    return optimizer


def _text(name):
    """A name as UTF-8 text whatever it holds (lone surrogates would make the native call raise
    inside the user's forward)."""
    return str(name).encode("utf-8", "backslashreplace").decode("utf-8")


def _scope_hooks(module, elements, model_name=None):
    """Hooks that put `elements` ((element, short element) pairs) on the scope while `module` runs."""
    elements = [(_text(e), _text(s)) for e, s in elements]
    model_name = None if model_name is None else _text(model_name)

    def pre(mod, inputs):
        if model_name is not None:
            mod.__opdump_depth = _opdump.scope_depth()
            _opdump.enter_model(model_name)
        for element, short_element in elements:
            _opdump.push_scope(element, short_element)

    def post(mod, inputs, output):
        if model_name is not None:
            _opdump.truncate_scope(getattr(mod, "__opdump_depth", 0))
            _opdump.exit_model()
        else:
            for _ in elements:
                _opdump.pop_scope()

    return module.register_forward_pre_hook(pre), module.register_forward_hook(post)


def _never_called(module):
    """Containers whose forward never runs (ModuleList, ModuleDict): their children carry their scope."""
    import torch
    return isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict))


def _storage_address(t):
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _tensor_names(module, model_name):
    """Tells opdump what the model's parameters and buffers are called, by the address of their
    storage, so that a report can say "parameter layer2.0.conv1.weight differs". Sent again when
    the tensors moved (model.cuda(), a load that replaced them)."""
    last = [None]

    def send(mod=None, inputs=None):
        first = next(module.parameters(), None)
        signature = _storage_address(first) if first is not None else None
        if signature == last[0]:
            return
        last[0] = signature
        params = list(module.named_parameters())
        named = [(_storage_address(t), f"parameter {model_name}.{n}") for n, t in params]
        named += [(_storage_address(t), f"buffer {model_name}.{n}") for n, t in module.named_buffers()
                  if t is not None and t.numel() > 0]
        _opdump.name_tensors([(a, _text(n)) for a, n in named])

    send()
    return send


class ModelHandle:
    """What register_model returns: remove() takes the model's hooks off (its ops are then named and
    selected like any unregistered code); as a `with` block, the model is registered inside it."""

    def __init__(self, module, name, removers):
        self.module = module
        self.name = name
        self._removers = removers

    def remove(self):
        removers, self._removers = self._removers, []
        for remove in removers:
            remove()

    @property
    def registered(self):
        return bool(self._removers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        state = "registered" if self.registered else "removed"
        return f"<opdump.ModelHandle {self.name!r} ({type(self.module).__name__}, {state})>"


def _is_script_module(module):
    try:
        import torch
    except ImportError:
        return False
    return isinstance(module, torch.jit.ScriptModule)


def _register_script_module(module, name):
    """TorchScript modules take no forward hooks: forward runs inside the model's scope, and the
    interpreter's module hierarchy names the submodules (as the C++ opdump::pt::ScriptModel does)."""
    class_name = getattr(module, "original_name", type(module).__name__)
    scripted_forward = module.forward
    send_names = _tensor_names(module, name)

    def forward(*args, **kwargs):
        send_names()
        depth = _opdump.scope_depth()
        _opdump.enter_model(name)
        _opdump.push_scope(f"{name}-{class_name}", name)
        try:
            return scripted_forward(*args, **kwargs)
        finally:
            _opdump.truncate_scope(depth)
            _opdump.exit_model()

    module.__dict__["forward"] = forward  # the instance's forward: nn.Module.__call__ runs it

    def remove():
        if module.__dict__.get("forward") is forward:
            del module.__dict__["forward"]
    return [remove]


def register_model(module, name):
    """Registers `module` (an nn.Module, or a TorchScript module from torch.jit.script/trace/load) as model
    `name`: its ops are named by module path (Default/{name}-{Class}/{attr}-{Class}/.../{op}-op{n}) and
    selected by dump_list model_name/layer. Returns a ModelHandle; handle.remove() unregisters it.
    Registering a module again replaces its earlier registration."""
    if not hasattr(module, "named_modules"):
        raise TypeError(f"register_model: expected a torch.nn.Module or TorchScript module, not {type(module).__name__}")
    name = _text(name)
    if not name:
        raise ValueError("register_model: the model name is empty")
    previous = module.__dict__.get("_opdump_handle")
    if previous is not None:
        previous.remove()
    _opdump.register_model(name)
    if _is_script_module(module):
        removers = _register_script_module(module, name)
    else:
        handles = [module.register_forward_pre_hook(_tensor_names(module, name))]
        handles += _scope_hooks(module, [(f"{name}-{type(module).__name__}", name)], model_name=name)
        modules = dict(module.named_modules())
        for attr, sub in modules.items():
            if sub is module or _never_called(sub):
                continue
            parent, _, leaf = attr.rpartition(".")
            elements = [(f"{leaf}-{type(sub).__name__}", leaf)]
            while parent and _never_called(modules[parent]):
                grandparent, _, parent_leaf = parent.rpartition(".")
                elements.insert(0, (f"{parent_leaf}-{type(modules[parent]).__name__}", parent_leaf))
                parent = grandparent
            handles += _scope_hooks(sub, elements)
        removers = [h.remove for h in handles]
    handle = ModelHandle(module, name, removers)
    removers.append(lambda: module.__dict__.pop("_opdump_handle", None))
    module.__dict__["_opdump_handle"] = handle
    return handle


def _mark_module(module, enabled):
    def pre(mod, inputs):
        _opdump.push_mark(bool(enabled))

    def post(mod, inputs, output):
        _opdump.pop_mark()

    for handle in module.__dict__.pop("_opdump_mark_handles", []):
        handle.remove()
    module.__dict__["_opdump_mark_handles"] = [module.register_forward_pre_hook(pre),
                                               module.register_forward_hook(post)]


class dumper:
    """The torch_npu 1.5 dumper (`torch.utils.dumper` of the PyTorch 1.5.0 accuracy comparison guide):
    the ops run inside a `with` block go to one `.h5` file.

        with opdump.dumper(use_dump=True, dump_path="./run.h5"): ...        # every op's inputs and outputs
        with opdump.dumper(check_overflow=True, dump_path="./ovf.h5") as d: # only the ops that overflow
            ...
        print(d.root_cause)

    Exactly one mode. dump_path: a path ending in .h5, or a folder (the file is named
    YYYYmmdd_HHMMSS.ffffff.h5 there). The file holds /<op>/<seqid>/input/<argument> and
    /<op>/<seqid>/output/<return> (docs/debug_modes.md); h5py, h5dump and h5copy read it, and opdump's
    compare, convert, stats and overflow commands take it. opdump's own records (execution order,
    Opdebug records, overflow_summary.json) go to the folder beside it, <file>.opdump (`root`).
    check_overflow: prints `IR: <op> SeqId: <n> is overflow!` per overflowing op; afterwards `overflows`
    lists them and `root_cause` is the first op whose inputs were finite and outputs not.
    use_load: each op call of the block that matches a call stored in load_file_path (an .h5 file
    opdump wrote, or ops picked from one with h5copy; same operator, tensor shapes and dtypes, other
    argument values; the first unused seqid when several match) is re-run on copies of the stored
    inputs on the running op's device, and its inputs and new outputs go to dump_path under the same
    /<op>/<seqid>/. The block's own tensors and results are untouched. `load_report` says what
    matched; stored calls no op matched are warned about. load_with_acl_dump: the re-runs' kernels are
    also dumped by ./acl.json (its dump_path and data; opdump's kernel level; nothing else is dumped).
    check_fp16_range: also flag values beyond float16's range. overflow_number: cap on dumped
    overflowing ops (0: all). The block replaces any dump configured before it and ends it on exit."""

    def __init__(self, use_dump=False, use_load=False, check_overflow=False, dump_path=None, load_file_path=None,
                 load_with_acl_dump=False, check_fp16_range=False, overflow_number=0, level="api"):
        # The guide's rules are opdump::pt::plan_h5_dump's (C++ and Python share them): ValueError
        # naming the argument.
        plan = _opdump.plan_h5_dump(bool(use_dump), bool(use_load), bool(check_overflow),
                                    "" if dump_path is None else os.fspath(dump_path),
                                    "" if load_file_path is None else os.fspath(load_file_path),
                                    bool(load_with_acl_dump), bool(check_fp16_range), int(overflow_number), str(level))
        self.h5_path, self._config, self._load = plan["h5_path"], plan["config_json"], plan["load_file"]
        self._acl_config = plan["acl_config"]
        self.use_load = bool(use_load)
        self.check_overflow = bool(check_overflow)
        self.load_report = None
        self.root = None
        self.report = None
        self.overflows = []
        self.root_cause = None

    def __enter__(self):
        import json
        if self.use_load:
            os.makedirs(os.path.dirname(self.h5_path), exist_ok=True)
            _opdump.start_load(self._load, self.h5_path, self._acl_config)
            return self
        rank, device = _detect_rank()
        _opdump.set_rank(rank, device)
        _configuring(lambda: _opdump.set_dump_text(self._config, "opdump.dumper(...)"))
        self.root = _opdump.dump_root()
        return self

    def __exit__(self, *exc):
        import json
        if self.use_load:
            self.load_report = _opdump.stop_load()
            r = self.load_report
            if r["unmatched"] or r["problems"]:
                warnings.warn(f"opdump.dumper(use_load): {r['matched']} of {r['stored']} stored op calls re-run into "
                              f"{r['out_file']}; {len(r['unmatched'])} matched no op of this run "
                              f"({', '.join(r['unmatched'][:5])}{' ...' if len(r['unmatched']) > 5 else ''})"
                              + (f"; problems: {'; '.join(r['problems'][:3])}" if r["problems"] else ""), stacklevel=2)
            return False
        self.report = finalize_dump()
        summary = os.path.join(self.root, "overflow_summary.json")
        if self.check_overflow and os.path.exists(summary):
            with open(summary) as f:
                data = json.load(f)
            self.overflows = data["ops"]
            self.root_cause = data["root_cause"]
        return False


def get_op_map(path=None):
    """(ir_map, param_map) of the torch_npu 1.5 dumper: IR name -> the names the same operation has on
    other stacks, and IR name -> {argument: the equivalent's argument}. From the op_map.json shipped
    with opdump, extended by `path` or the file the OPDUMP_OP_MAP environment variable names (same
    shape: {"ir_map": {name: [names]}, "param_map": {name: {argument: argument}}})."""
    import json

    def read(file):
        try:
            with open(file) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise OpdumpError(f"{file}: cannot read the op map: {e}") from None
        if not isinstance(data, dict):
            raise OpdumpError(f"{file}: the op map is not a JSON object")
        ir = data.get("ir_map", {})
        params = data.get("param_map", {})
        if not isinstance(ir, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                                               for v in ir.values()):
            raise OpdumpError(f"{file}: ir_map must map each IR name to a list of names")
        if not isinstance(params, dict) or not all(isinstance(v, dict) and all(isinstance(n, str) for n in v.values())
                                                   for v in params.values()):
            raise OpdumpError(f"{file}: param_map must map each IR name to {{argument: argument}}")
        return ir, params

    ir_map, param_map = read(os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_map.json"))
    extra = path if path is not None else os.environ.get("OPDUMP_OP_MAP")
    if extra:
        ir, params = read(os.fspath(extra))
        for name, names in ir.items():
            ir_map[name] = list(dict.fromkeys(ir_map.get(name, []) + names))
        for name, mapping in params.items():
            param_map.setdefault(name, {}).update(mapping)
    return ir_map, param_map


@atexit.register
def _finalize_at_exit():
    debugger = PrecisionDebugger._instance
    if debugger is not None and getattr(debugger, "_recorder", None) is not None:
        debugger.finish()  # msprobe's layout: the step in progress is written
    if _opdump.dumping() or _opdump.dump_root():
        _opdump.finalize_dump()


def _internal_folders():
    """torch's and opdump's package folders: their frames are never the user's source line."""
    import importlib.util
    folders = [os.path.dirname(os.path.abspath(__file__))]
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        folders += [os.path.abspath(p) for p in spec.submodule_search_locations]
    return [f.rstrip(os.sep) + os.sep for f in folders]


_opdump.set_internal_folders(_internal_folders())

from .msprobe import PrecisionDebugger  # noqa: E402  (msprobe's front door; uses the functions above)


def _configure_from_environment():
    """OPDUMP_CONFIG (or MindSpore's MINDSPORE_DUMP_CONFIG): the library reads the variables; this
    applies them through init(), so that compiled code runs eagerly before the dump starts."""
    claimed = _opdump.claim_environment()
    if claimed is None:
        return
    path = claimed[0]
    if not path:
        return
    if _opdump.initialized():
        warnings.warn(f"opdump: the environment names a dump config ({path}) but opdump was already initialized; "
                      "it is not applied", stacklevel=2)
        return
    try:
        init(path)
    except OpdumpError as e:  # a bad variable must not stop the program: reported, not raised
        sys.stderr.write(f"[opdump error] cannot dump with {path}: {e}\n")


_configure_from_environment()
