"""Shared fixtures: paths of the built binaries and a runner for the CLI."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("OPDUMP_BUILD", ROOT / "build"))


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
