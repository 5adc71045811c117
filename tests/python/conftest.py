"""Shared fixtures: paths of the built binaries and a runner for the CLI."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("OPDUMP_BUILD", ROOT / "build"))

# Tests that take minutes each: collected first, so that with pytest -n --dist loadfile
# (scripts/test.sh) each starts on a worker of its own at once and the short ones fill in around them.
LONG_FIRST = ("test_localize.py", "test_pip_install.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FIRST)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def opdump_bin():
    path = BUILD / "opdump"
    assert path.exists(), f"build first: {path} is missing"
    return str(path)


@pytest.fixture(scope="session")
def npy_tool():
    path = BUILD / "tests" / "npy_tool"
    assert path.exists(), f"build first: {path} is missing"
    return str(path)


@pytest.fixture
def run(opdump_bin):
    """Runs `opdump ARGS...` and returns the CompletedProcess (text mode)."""

    def _run(*args, check=None):
        proc = subprocess.run([opdump_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
        if check is not None:
            assert proc.returncode == check, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
        return proc

    return _run


WORKLOAD = pathlib.Path(__file__).with_name("torch_workload.py")
# The interpreter that has torch: Debian's (the first python3 on PATH lacks it); a GPU machine's own
# through OPDUMP_TEST_PYTHON (scripts/gpu_check.sh).
PYTHON = os.environ.get("OPDUMP_TEST_PYTHON", "/usr/bin/python3")


@pytest.fixture
def workload(tmp_path):
    """Runs torch_workload.py in a fresh process; returns its result dict.

    config: a dict written as the dump config (None: no dump)."""
    import json

    counter = [0]

    def _run(model="small", steps=3, config=None, extra=(), env=None, check=True):
        counter[0] += 1
        result = tmp_path / f"result{counter[0]}.json"
        cmd = [PYTHON, str(WORKLOAD), "--model", model, "--steps", str(steps), "--result", str(result), *extra]
        if config is not None:
            cfg = tmp_path / f"config{counter[0]}.json"
            cfg.write_text(json.dumps(config))
            cmd += ["--config", str(cfg)]
        full_env = dict(os.environ)
        full_env["OPDUMP_PYTHONPATH"] = str(BUILD / "python")
        full_env["PYTHONPATH"] = str(BUILD / "python")
        full_env.update(env or {})
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=600)
        if check:
            assert proc.returncode == 0, proc.stderr
            data = json.loads(result.read_text())
            data["stderr"] = proc.stderr
            return data
        return proc

    return _run


def ms_config(path, iteration="all", saved_data="tensor", **extra):
    """A MindSpore-dialect synchronous dump config."""
    common = {"dump_mode": 0, "path": str(path), "net_name": "net", "iteration": iteration,
              "saved_data": saved_data, "input_output": 0, "kernels": [], "support_device": [0, 1, 2, 3]}
    common.update(extra.pop("common", {}))
    e2e = {"enable": True}
    e2e.update(extra.pop("e2e", {}))
    cfg = {"common_dump_settings": common, "e2e_dump_settings": e2e}
    if extra:
        cfg["opdump"] = extra
    return cfg


CHROMIUM = __import__("shutil").which("chromium")


def chromium_flags(tmp_path, budget_ms=3000):
    """Debian's chromium, headless, offline, with a profile of its own; its console on stderr."""
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
            f"--virtual-time-budget={budget_ms}"]


def measured_page(page, script, tmp_path, budget_ms=3000, name="measured.html"):
    """Loads a copy of `page` with `script` added at its end, which puts JSON in <pre id="measure">;
    returns that JSON as the browser computed it at 1400x900."""
    import json
    import re
    import subprocess
    copy = tmp_path / name
    copy.write_text(page.read_text().replace("</body>", script + "</body>"))
    dom = subprocess.run(chromium_flags(tmp_path, budget_ms) + ["--window-size=1400,900", "--dump-dom", copy.as_uri()],
                         capture_output=True, text=True, timeout=300)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    return json.loads(re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S).group(1).replace("&quot;", '"')
                      .replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
