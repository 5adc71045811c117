"""`pip install .` as a user runs it: offline, with Debian's setuptools (--no-build-isolation), into a
fresh virtual environment that sees the system's torch; then the package, its CLI and a dump, from
outside the source and build trees."""
import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON, ROOT

VENV_OK = subprocess.run([PYTHON, "-c", "import venv, ensurepip, setuptools, wheel"], capture_output=True).returncode == 0


@pytest.mark.skipif(not VENV_OK, reason="python3-venv, python3-setuptools or python3-wheel is not installed")
def test_pip_install_into_a_fresh_venv_and_dump(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPDUMP_CONFIG")}
    # A build of its own: the checkout may be shared with another Python (the PyTorch 2.x chroot).
    build = dict(env, OPDUMP_PIP_BUILD_DIR=str(tmp_path / "pip-build"))
    proc = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", str(ROOT)],
                          capture_output=True, text=True, env=build, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    work = tmp_path / "elsewhere"
    work.mkdir()
    code = (
        "import json, os, sys, torch, opdump\n"
        "torch.manual_seed(0)\n"
        "cfg = {'common_dump_settings': {'dump_mode': 0, 'path': sys.argv[1], 'net_name': 'net', 'iteration': 'all',"
        " 'saved_data': 'tensor', 'input_output': 0, 'kernels': [], 'support_device': [0]},"
        " 'e2e_dump_settings': {'enable': True, 'save_kernel_args': True}}\n"
        "net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())\n"
        "with opdump.dump(cfg) as d, opdump.register_model(net, 'net'):\n"
        "  y = net(torch.randn(2, 4))\n"
        "print(json.dumps({'file': opdump.__file__, 'version': opdump.__version__, 'report': d.report}))\n")
    proc = subprocess.run([python, "-c", code, str(work / "dump")], cwd=work, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["file"].startswith(str(venv)) and out["report"]["ok"] and out["report"]["files_written"] >= 4
    linear = [f for f in os.listdir(work / "dump" / "rank_0" / "net" / "0" / "0")
              if f.startswith("linear.") and f.endswith(".npy")]
    assert len(linear) == 4  # input, weight, bias, output of the one Linear

    # the CLI: the console script, and python -m opdump, on the dump just written
    script = subprocess.run([str(venv / "bin" / "opdump"), "--version"], capture_output=True, text=True, env=env)
    assert script.returncode == 0 and out["version"] in script.stdout
    stats = subprocess.run([python, "-m", "opdump", "stats", str(work / "dump"), "--csv", str(work / "s.csv")],
                           cwd=work, capture_output=True, text=True, env=env)
    assert stats.returncode == 0, stats.stderr
    assert "linear" in (work / "s.csv").read_text()
    # opdump replay runs the replay program the package carries beside the CLI
    replay = subprocess.run([python, "-m", "opdump", "replay", str(work / "dump"), "-o", str(work / "replay")],
                            cwd=work, capture_output=True, text=True, env=env)
    assert replay.returncode == 0 and "replayed 2 of 2 ops" in replay.stdout, replay.stdout + replay.stderr

    proc = subprocess.run([python, "-m", "pip", "uninstall", "-y", "opdump"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    gone = subprocess.run([python, "-c", "import opdump"], cwd=work, capture_output=True, text=True, env=env)
    assert gone.returncode != 0
