"""msprobe's PyTorch package imports torch.utils.tensorboard (for its monitor, which these tests do not use), and
PyTorch 2.x's needs the tensorboard package, which Debian does not package: where it is missing, a stand-in module
takes its place so that msprobe's dump and compare import."""
import importlib.util
import sys
import types

if importlib.util.find_spec("tensorboard") is None:
    stand_in = types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError("tensorboard is not installed (a stand-in for running msprobe's tests here)")

    stand_in.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = stand_in
