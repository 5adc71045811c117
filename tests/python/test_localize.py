"""The localization benchmark as a test: every planted change on a real model is named as the
first divergence, every no-change control is clean (bench/localize.py, run whole)."""
import json
import os
import subprocess

from conftest import BUILD, PYTHON, ROOT


def test_every_planted_change_localized_and_every_control_clean(tmp_path):
    out = tmp_path / "localize.json"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.run([PYTHON, str(ROOT / "bench" / "localize.py"), "--opdump", str(BUILD / "opdump"),
                           "--json", str(out)], capture_output=True, text=True, env=env, timeout=1800)
    assert out.exists(), f"the bench wrote no results:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())["results"]
    missed = [(r["name"], r["expected"], r["got"]) for r in results if not r["ok"]]
    assert not missed, proc.stdout
    assert proc.returncode == 0
    planted = [r for r in results if not r["control"]]
    assert len(planted) >= 10 and len(results) - len(planted) >= 3
    assert proc.stdout.splitlines()[-1] == f"localized {len(planted)}/{len(planted)}, controls clean " \
                                           f"{len(results) - len(planted)}/{len(results) - len(planted)}"
    # the planted op is named with the reason the data flow gives
    by_name = {r["name"]: r for r in results}
    assert "input 1 (parameter net.layer2.0.conv1.weight) differs: no dumped op produced it" in by_name["param"]["cause"]
    assert by_name["removed"]["got"].startswith("op missing in the target")
    assert by_name["inserted"]["got"].startswith("extra op in the target")
