"""opdump: operator-level dump of PyTorch training and inference.

    import opdump
    opdump.set_dump("acl.json")            # any dialect: acl.json, MindSpore, session options
    model = opdump.register_model(model, "resnet")   # names ops by module path, selects by dump_list
    opdump.hook_optimizer(optimizer)       # each optimizer.step() ends an iteration (or call opdump.step())
    ...train...
    opdump.finalize()                      # drains the writer; returns what was written and lost

Setting OPDUMP_CONFIG (or MINDSPORE_DUMP_CONFIG) to a config file turns dumping on at import.
"""
import atexit
import sys
import warnings
import os
import weakref

from . import _opdump
from ._opdump import ConfigError, OpdumpError  # noqa: F401

__all__ = ["init", "init_dump", "set_dump", "finalize_dump", "finalize", "step", "iteration", "register_model",
           "hook_optimizer", "dumping", "dump_root", "dumper", "ConfigError", "OpdumpError"]


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


def init(config=None):
    """the CANN aclmdlSetDump reference's init: once per process; `config` is a config file path or None."""
    rank, device = _detect_rank()
    _opdump.set_rank(rank, device)
    _configuring(lambda: _opdump.init(os.fspath(config) if config else ""))


def init_dump():
    _opdump.init_dump()


def set_dump(target, enabled=True):
    """set_dump(path): load a dump config (replaces any earlier one).

    set_dump(module, enabled=True): MindSpore's set_dump, for dump_mode 2: only ops run inside
    marked modules are dumped."""
    if hasattr(target, "register_forward_pre_hook"):
        _mark_module(target, enabled)
        return
    rank, device = _detect_rank()
    _opdump.set_rank(rank, device)
    _configuring(lambda: _opdump.set_dump(os.fspath(target)))


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


def register_model(module, name):
    """Registers `module` as model `name`: its ops are named by module path
    (Default/{name}-{Class}/{attr}-{Class}/.../{op}-op{n}) and selected by dump_list model_name/layer.
    Returns the module."""
    name = _text(name)
    _opdump.register_model(name)
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
    module.__dict__["_opdump_handles"] = handles
    return module


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
    """The torch_npu accuracy comparison guide's `torch.utils.dumper`: dumps the ops run inside a `with` block.

        with opdump.dumper(check_overflow=True, dump_path="out") as d:
            loss = model(x).sum(); loss.backward()
        print(d.root_cause)

    check_overflow=True: only ops whose outputs hold NaN/Inf are dumped (inputs and outputs),
    each printed as it happens, with an Opdebug record; afterwards `overflows` lists them and
    `root_cause` is the first op whose inputs were finite and outputs not (None when nothing
    overflowed). check_overflow=False: every op's inputs and outputs are dumped.
    check_fp16_range: also flag values beyond float16's range. overflow_number: cap on dumped
    overflowing ops (0: all). load_file_path is Ascend's IR-mapping input and has no meaning here.
    The block replaces any dump configured before it and ends it on exit."""

    def __init__(self, check_overflow=False, dump_path="dump", load_file_path=None, check_fp16_range=False,
                 overflow_number=0, level="api"):
        if load_file_path is not None:
            import warnings
            warnings.warn("opdump.dumper: load_file_path (Ascend IR mapping) is not used by opdump", stacklevel=2)
        dump = {"dump_path": os.fspath(dump_path), "dump_list": []}
        if check_overflow:
            dump["dump_debug"] = "on"
        else:
            dump.update({"dump_op_switch": "on", "dump_mode": "all"})
        self._config = {"dump": dump, "opdump": {"check_fp16_range": bool(check_fp16_range), "level": level}}
        if overflow_number:
            self._config["opdump"]["overflow_number"] = int(overflow_number)
        self.check_overflow = check_overflow
        self.root = None
        self.report = None
        self.overflows = []
        self.root_cause = None

    def __enter__(self):
        import json
        rank, device = _detect_rank()
        _opdump.set_rank(rank, device)
        _configuring(lambda: _opdump.set_dump_text(json.dumps(self._config), "opdump.dumper(...)"))
        self.root = _opdump.dump_root()
        return self

    def __exit__(self, *exc):
        import json
        self.report = finalize_dump()
        summary = os.path.join(self.root, "overflow_summary.json")
        if self.check_overflow and os.path.exists(summary):
            with open(summary) as f:
                data = json.load(f)
            self.overflows = data["ops"]
            self.root_cause = data["root_cause"]
        return False


@atexit.register
def _finalize_at_exit():
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
