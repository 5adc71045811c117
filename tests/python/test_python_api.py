"""The Python package's conventions: __version__, `python -m opdump`, configs as paths or dicts, the
`with opdump.dump(...)` session, removable model registrations (TorchScript too), one shape for
counters and the finalize report."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, PYTHON, ROOT, ms_config

ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))


def python(code, *args, check=True, file=None):
    """Runs `code` in a fresh interpreter (from `file` when given: TorchScript reads the source of the classes it scripts)."""
    if file is not None:
        file.write_text(code)
    command = [PYTHON, str(file)] if file is not None else [PYTHON, "-c", code]
    proc = subprocess.run(command + [str(a) for a in args], capture_output=True, text=True, timeout=600, env=ENV)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def last_json(proc):
    return json.loads(proc.stdout.splitlines()[-1])


def project_version():
    return re.search(r"project\(opdump VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


def test_version_is_the_project_version_everywhere(opdump_bin):
    version = python("import opdump; print(opdump.__version__)").stdout.strip()
    assert version == project_version()
    cli = subprocess.run([opdump_bin, "--version"], capture_output=True, text=True, check=True).stdout
    assert version in cli


def test_python_m_opdump_runs_the_cli(tmp_path):
    proc = subprocess.run([PYTHON, "-m", "opdump", "--version"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and project_version() in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"dump": {"dump_mode": "both"}}')
    proc = subprocess.run([PYTHON, "-m", "opdump", "config", "check", str(bad)], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 1 and "dump.dump_mode" in proc.stderr  # the CLI's own exit code and message
    proc = subprocess.run([PYTHON, "-m", "opdump", "no-such-command"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 2


MODEL = ("import torch, opdump, json, sys\n"
         "torch.manual_seed(0)\n"
         "class Net(torch.nn.Module):\n"
         "  def __init__(self):\n"
         "    super().__init__(); self.fc1 = torch.nn.Linear(4, 8); self.fc2 = torch.nn.Linear(8, 2)\n"
         "  def forward(self, x): return self.fc2(torch.relu(self.fc1(x)))\n"
         "x = torch.randn(3, 4)\n")


def dumped_names(root):
    names = set()
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith(".npy"):
                names.add(f.split(".")[1])
    return names


def test_set_dump_takes_a_dict_and_a_with_block_is_one_session(tmp_path):
    config = ms_config(tmp_path / "d", iteration="0")
    proc = python(MODEL + (
        "opdump.register_model(net := Net(), 'net')\n"
        "with opdump.dump(json.loads(sys.argv[1])) as d:\n"
        "  assert opdump.dump_root() == d.root and d.root\n"
        "  net(x).sum().backward()\n"
        "  during = opdump.counters()\n"
        "after = opdump.dump_root()\n"
        "print(json.dumps({'report': d.report, 'during': during, 'after': after, 'root': d.root}))\n"),
        json.dumps(config))
    out = last_json(proc)
    report, during = out["report"], out["during"]
    assert out["after"] == "" and out["root"].startswith(str(tmp_path / "d"))
    assert report["ok"] and report["files_written"] > 10
    # one shape: the counters are the report's counters, under the same keys
    assert set(during) == {"ops", "tensors", "tensor_bytes", "statistic_rows", "statistic_bytes", "statistic_bytes_read",
                           "overflow_checks", "overflow_bytes_read", "overflow_bounded",
                           "overflow_bytes_copied"} and set(during) <= set(report)
    assert during["ops"] == report["ops"] > 0 and during["tensors"] == report["tensors"]
    assert "Default_net-Net_fc1-Linear_linear-op0" in dumped_names(tmp_path / "d")


def test_a_with_block_finalizes_when_the_training_raises(tmp_path):
    proc = python(MODEL + (
        "try:\n"
        "  with opdump.dump(json.loads(sys.argv[1])) as d:\n"
        "    Net()(x); raise KeyError('boom')\n"
        "except KeyError:\n"
        "  pass\n"
        "print(json.dumps({'ok': d.report['ok'], 'files': d.report['files_written'], 'after': opdump.dump_root()}))\n"),
        json.dumps(ms_config(tmp_path / "d", iteration="0")))
    out = last_json(proc)
    assert out["ok"] and out["files"] > 0 and out["after"] == ""


@pytest.mark.parametrize("target,error", [
    ("tmp_path", "is a folder"),
    ("42", "TypeError: set_dump: config must be a path or a dict, not int"),
    ("{'dump': {'dump_path': {1, 2}}}", "the config dict is not JSON"),
    ("{'dump': {'dump_mode': 'both'}}", "set_dump(dict): dump.dump_mode"),
])
def test_set_dump_errors_name_the_problem(tmp_path, target, error):
    target = repr(str(tmp_path)) if target == "tmp_path" else target
    proc = python(f"import opdump\nopdump.set_dump({target})\n", check=False)
    assert proc.returncode != 0 and error in proc.stderr, proc.stderr
    assert "Traceback" in proc.stderr and "9223372036854775807" not in proc.stderr


def test_register_model_returns_a_removable_handle(tmp_path):
    proc = python(MODEL + (
        "net = Net()\n"
        "handle = opdump.register_model(net, 'net')\n"
        "assert handle.module is net and handle.registered and 'net' in repr(handle)\n"
        "opdump.set_dump(json.loads(sys.argv[1]))\n"
        "net(x)\n"
        "handle.remove(); handle.remove()  # twice is harmless\n"
        "assert not handle.registered\n"
        "net(x)\n"
        "with opdump.register_model(net, 'again'):\n"
        "  net(x)\n"
        "net(x)\n"
        "print(json.dumps(opdump.finalize_dump()))\n"),
        json.dumps(ms_config(tmp_path / "d", iteration="0")))
    assert last_json(proc)["ok"]
    names = dumped_names(tmp_path / "d")
    assert "Default_net-Net_fc1-Linear_linear-op0" in names  # registered
    assert "Default_linear-op0" in names and "Default_linear-op2" in names  # removed: plain scope, counted on
    assert "Default_again-Net_fc2-Linear_linear-op0" in names  # the with block
    assert not any(n.startswith("Default_net-Net") and n.endswith("op1") for n in names)


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_torchscript_modules_register_like_eager_ones(tmp_path, kind):
    make = {"script": "torch.jit.script(Net())", "trace": "torch.jit.trace(Net(), x)"}[kind]
    config = {"dump": {"dump_path": str(tmp_path / "d"), "dump_mode": "output", "dump_list": [{"model_name": "net"}]}}
    proc = python(MODEL + (
        f"m = {make}\n"
        "opdump.set_dump(json.loads(sys.argv[1]))\n"
        "h = opdump.register_model(m, 'net')  # after the config: CANN's rule for acl.json model dumps\n"
        "eager = Net(); eager.load_state_dict(m.state_dict())\n"
        "y = m(x)\n"
        "assert torch.equal(y, eager(x))  # dumping changes nothing\n"
        "h.remove()\n"
        "m(x)  # not the model any more: not in dump_list\n"
        "print(json.dumps(opdump.finalize_dump()))\n"),
        json.dumps(config), file=tmp_path / "scripted.py")
    assert last_json(proc)["ok"]
    files = [f for _, _, fs in os.walk(tmp_path / "d") for f in fs]
    linear = sorted(f.split(".")[1] for f in files if "linear" in f.lower() or "addmm" in f.lower())
    # ops named by the scripted submodules, as in eager mode; none after remove()
    assert any("Default_net-Net_fc1-Linear_" in n for n in linear), linear
    assert any("Default_net-Net_fc2-Linear_" in n for n in linear), linear
    assert all(n.startswith("Default_net-Net_") for n in linear), linear
    assert "Default_net-Net_fc1-Linear_linear-op0" in linear or kind == "trace"  # trace may record addmm/matmul


def test_source_lines_of_user_code_in_folders_named_like_opdump_or_torch(tmp_path):
    """Only opdump's and torch's own files are skipped when looking for the user's line, wherever
    the user's code lives (a checkout named opdump, a project folder named torch)."""
    folder = tmp_path / "opdump" / "torch"
    folder.mkdir(parents=True)
    script = folder / "user_train.py"
    proc = python(MODEL + (
        "opdump.set_dump(json.loads(sys.argv[1]))\n"
        "opdump.register_model(net := Net(), 'net')\n"
        "net(x).sum().backward()\n"
        "print(json.dumps(opdump.finalize_dump()))\n"),
        json.dumps(ms_config(tmp_path / "d", iteration="0")), file=script)
    assert last_json(proc)["ok"]
    ir = (tmp_path / "d" / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.ir").read_text()
    lines = re.findall(r"user_train\.py:(\d+)", ir)
    forward_line = MODEL.count("\n") + 3  # the line of net(x).sum().backward()
    assert str(forward_line) in lines, ir[:2000]
