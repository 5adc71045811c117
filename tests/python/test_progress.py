"""Long work shows progress on stderr when it is a terminal (compare, convert, replay): items, bytes, rate
and time left; quiet with -q and when stderr is not a terminal. OPDUMP_PROGRESS_AFTER_S=0 shows it from the
start (by default only work of more than 2 s does)."""
import errno
import json
import os
import pathlib
import pty
import select
import socket
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, PYTHON, ms_config

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _terminals_available():
    try:
        a, b = os.openpty()
    except OSError:  # a chroot without /dev/pts (scripts/torch2.sh binds /dev alone)
        return False
    os.close(a)
    os.close(b)
    return True


pytestmark = pytest.mark.skipif(not _terminals_available(), reason="no pseudo-terminals here")


def start_in_terminal(argv, env):
    """Starts ARGV with a pseudo-terminal of its own as stdin, stdout and stderr; returns (pid, terminal fd)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def read_terminals(children):
    """Reads every child's terminal until each closes it; returns [(exit code, what it printed)]."""
    chunks = {fd: [] for _, fd in children}
    open_fds = set(chunks)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 300)
        assert ready, "no output for 300 s"
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError as e:  # EIO: the child closed the terminal
                if e.errno != errno.EIO:
                    raise
                data = b""
            if data:
                chunks[fd].append(data)
            else:
                open_fds.discard(fd)
                os.close(fd)
    results = []
    for pid, fd in children:
        _, status = os.waitpid(pid, 0)
        results.append((os.waitstatus_to_exitcode(status), b"".join(chunks[fd]).decode("utf-8", "replace")))
    return results


def in_terminal(*args, after="0"):
    """Runs `opdump ARGS` in a pseudo-terminal; returns (exit code, what it printed)."""
    env = dict(os.environ, OPDUMP_PROGRESS_AFTER_S=after)
    return read_terminals([start_in_terminal([str(BUILD / "opdump"), *map(str, args)], env)])[0]


@pytest.fixture
def npy_folder(tmp_path):
    folder = tmp_path / "npy"
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(12):
        np.save(folder / f"Add.Default_add-op{i}.{i}.15891950815880{i:02d}.output.0.npy",
                rng.standard_normal((64, 64)).astype(np.float32))
    return folder


def test_convert_and_compare_show_progress_in_a_terminal(npy_folder, tmp_path):
    code, text = in_terminal("convert", npy_folder, "-o", tmp_path / "txt")
    assert code == 0, text
    assert "\rconvert: files: 12/12 (100%), " in text, text
    code, text = in_terminal("compare", npy_folder, npy_folder, "-o", tmp_path / "cmp")
    assert code == 0, text
    assert "\rcompare: tensor pairs: 12/12 (100%), " in text, text
    assert "B/s" in text
    code, text = in_terminal("convert", npy_folder, "-o", tmp_path / "msprobe", "--to", "msprobe")
    assert code == 0, text
    assert "\rconvert: tensors: 12/12 (100%), " in text, text  # msprobe's layout: statistics of each tensor


def test_quiet_short_or_piped_work_shows_none(npy_folder, tmp_path, run):
    code, text = in_terminal("convert", npy_folder, "-o", tmp_path / "a", "-q")
    assert code == 0 and "convert: files" not in text, text
    code, text = in_terminal("compare", npy_folder, npy_folder, "-o", tmp_path / "b", "-q")
    assert code == 0 and "compare: tensor pairs" not in text, text
    code, text = in_terminal("compare", npy_folder, npy_folder, "-o", tmp_path / "c", after="3600")  # short work
    assert code == 0 and "compare: tensor pairs" not in text, text
    proc = run("convert", npy_folder, "-o", tmp_path / "d", check=0)  # stderr a pipe: not a terminal
    assert "convert: files" not in proc.stderr and "\r" not in proc.stderr


@pytest.mark.skipif(not (BUILD / "opdump_replay").exists(), reason="built without the PyTorch adapter")
def test_replay_shows_progress_in_a_terminal(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from replay_bench import TRAIN
    cfg = ms_config(tmp_path / "d", iteration="1", saved_data="tensor", e2e={"save_kernel_args": True})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    proc = subprocess.run([PYTHON, "-c", TRAIN, str(tmp_path / "c.json"), str(BUILD / "python"), "mlp", "none"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    code, text = in_terminal("replay", tmp_path / "d", "-o", tmp_path / "replay")
    assert code == 0, text
    assert "\rreplay: ops: " in text and "(100%)" in text, text
    code, text = in_terminal("replay", tmp_path / "d", "-o", tmp_path / "replay2", "-q")
    assert code == 0 and "replay: ops" not in text, text


def test_distributed_compare_shows_each_process_its_progress(tmp_path):
    # Two processes as torchrun starts them, each in a terminal of its own, each comparing one rank.
    rng = np.random.default_rng(6)
    for rank in (0, 1):
        for i in range(6):
            tensor = rng.standard_normal((64, 64)).astype(np.float32)
            for side in ("target", "reference"):
                folder = tmp_path / side / f"rank_{rank}" / "net" / "0" / "0"
                folder.mkdir(parents=True, exist_ok=True)
                np.save(folder / f"Add.Default_add-op{i}.{i}.15891950815880{i:02d}.output.0.npy", tensor)

    def launch(out, *extra):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        children = []
        for rank in (0, 1):
            env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), RANK=str(rank), WORLD_SIZE="2",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), USE_LIBUV="0", OPDUMP_PROGRESS_AFTER_S="0")
            children.append(start_in_terminal([PYTHON, "-m", "opdump", "compare", str(tmp_path / "target"),
                                               str(tmp_path / "reference"), "-o", str(out), *extra], env))
        return read_terminals(children)

    results = launch(tmp_path / "out")
    for code, text in results:
        assert code == 0, text
        assert "\rcompare: tensor pairs: 6/6 (100%), " in text, text
    summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    assert summary["ranks"] == [0, 1] and summary["processes"] == 2, summary
    for code, text in launch(tmp_path / "quiet", "-q"):
        assert code == 0 and "compare: tensor pairs" not in text, text
