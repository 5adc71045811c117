"""The model as a picture in the HTML reports: the module hierarchy the dump recorded (forward, and backward
under Gradients/), each module coloured by the worst result beneath it, the path to the first divergence open
and highlighted, a click showing a module's rows; checked in headless Chromium at 1400x900, on a screenshot too,
and fast with 10,000 modules and 100,000 rows."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, CHROMIUM, PYTHON, chromium_flags, measured_page, ms_config

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")

ERROR_RGB, WARNING_RGB, PASS_RGB, PATH_RGB = (251, 218, 218), (255, 243, 196), (223, 240, 220), (214, 39, 40)

# Added to a copy of a report: the tree as drawn, a click on the deepest highlighted module, and where things are.
PROBE = """<script>
window.addEventListener('load', () => {
  const box = document.getElementById('model-tree');
  const items = [...box.querySelectorAll('li')];
  const onPath = items.filter(li => li.classList.contains('on-path'));
  const colour = li => getComputedStyle(li.firstChild).backgroundColor;
  const rect = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const out = {modules: +box.dataset.modules, drawn: items.length,
    roots: [...box.querySelectorAll(':scope>ul>li')].map(li => li.dataset.path),
    path: onPath.map(li => li.dataset.path), pathColours: onPath.map(colour),
    colours: [...new Set(items.map(colour))], box: rect(box),
    deepest: onPath.length ? rect(onPath[onPath.length - 1].firstChild) : null};
  if (typeof all !== 'undefined' && FIRST >= 0) out.firstName = all.find(r => r[0] === FIRST)[5];
  if (onPath.length) {
    onPath[onPath.length - 1].querySelector('a').click();
    const rows = [...document.querySelectorAll('#rows tr')].filter(tr => tr.cells[0].tagName === 'TD' && tr.style.display !== 'none');
    out.clicked = onPath[onPath.length - 1].dataset.path;
    out.filter = document.getElementById('filter') ? document.getElementById('filter').value : null;
    const nameCell = document.getElementById('rows-data') ? 5 : 2;  // compare's target column; replay's op
    out.shownNames = rows.map(tr => tr.cells[nameCell].textContent);
  }
  const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def rgb(css):
    return tuple(int(v) for v in css[css.index("(") + 1:css.index(")")].split(",")[:3])


def screenshot_pixels(page, tmp_path, box):
    """The pixels of `box` (left, top, right, bottom in CSS px) in a 1400x900 screenshot of the page."""
    from PIL import Image
    shot = tmp_path / "shot.png"
    proc = subprocess.run(chromium_flags(tmp_path) + ["--window-size=1400,900", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    image = np.asarray(Image.open(shot).convert("RGB"))
    assert image.shape[:2] == (900, 1400)
    left, top, right, bottom = (int(v) for v in box)
    return image[max(top, 0):min(bottom, 900), max(left, 0):min(right, 1400)].reshape(-1, 3)


def count_near(pixels, colour, tolerance=6):
    return int((np.abs(pixels.astype(int) - np.array(colour)).max(axis=1) <= tolerance).sum())


def test_compare_report_draws_the_model_and_the_path_to_the_divergence(workload, run, tmp_path):
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    bad = workload("small", steps=1, config=ms_config(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    page = tmp_path / "out" / "compare_report.html"
    m = measured_page(page, PROBE, tmp_path)
    assert m["modules"] > 5 and "Default/" in m["roots"] and "Gradients/" in m["roots"], m["roots"]
    # the path: every highlighted module contains the next, the deepest the first divergence's op
    assert len(m["path"]) >= 2
    assert all(b.startswith(a) for a, b in zip(m["path"], m["path"][1:])), m["path"]
    assert m["firstName"].startswith(m["path"][-1]), (m["firstName"], m["path"])
    # each highlighted module holds a failing row (its own colour: the worst beneath it)
    assert all(rgb(c) in (ERROR_RGB, WARNING_RGB) for c in m["pathColours"]), m["pathColours"]
    assert rgb(m["pathColours"][0]) == ERROR_RGB  # the top module holds the errors that follow
    assert PASS_RGB in {rgb(c) for c in m["colours"]}  # modules before the fault pass
    # a click on a module shows its rows, and only them
    assert m["filter"] == m["clicked"] and m["shownNames"]
    assert all(name.startswith(m["clicked"]) for name in m["shownNames"]), m["shownNames"][:5]
    # the screenshot shows it: the tree in the first screen, error colour and the highlighted outline in it
    assert m["box"][1] < 900 and m["deepest"] and m["deepest"][3] <= 900, m
    pixels = screenshot_pixels(page, tmp_path, m["box"])
    assert count_near(pixels, ERROR_RGB) > 500 and count_near(pixels, PASS_RGB) > 500
    assert count_near(pixels, rgb(m["pathColours"][-1])) > 200
    assert count_near(pixels, PATH_RGB, tolerance=40) > 50


def test_a_tree_of_10000_modules_opens_on_the_path_alone(run, tmp_path):
    """100,000 statistics rows in 10,000 modules; the changed op's modules are the only ones drawn open."""
    header = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
              "L2Norm Value\n")
    changed = 73_456
    for side in ("target", "reference"):
        folder = tmp_path / side / "rank_0" / "net" / "0" / "0"
        folder.mkdir(parents=True)
        lines = [header]
        for i in range(100_000):
            block, layer = divmod(i // 10, 100)
            top = 1.5 if side == "target" and i == changed else 1.0
            lines.append(f"linear,Default/net-Net/block{block}-Block/layer{layer}-Linear/linear-op{i % 10},{i},0,"
                         f"{1000 + i},output,0,64,float32,\"(4,4)\",{top},-1.0,2.0\n")
        (folder / "statistic.csv").write_text("".join(lines))
    run("compare", tmp_path / "target", tmp_path / "reference", "-o", tmp_path / "out", "-q", check=0)
    m = measured_page(tmp_path / "out" / "compare_report.html", PROBE, tmp_path, budget_ms=10000)
    assert m["modules"] == 2 + 100 + 10_000  # Default, net, the blocks, the layers
    assert m["drawn"] < 300  # the roots and the open path's levels, not 10,000 items
    assert m["path"][-1] == "Default/net-Net/block73-Block/layer45-Linear/"
    assert m["firstName"] == f"Default/net-Net/block73-Block/layer45-Linear/linear-op{changed % 10}"


@pytest.mark.skipif(not (BUILD / "opdump_replay").exists(), reason="built without the PyTorch adapter")
def test_replay_report_draws_the_model_with_the_faulty_op(tmp_path):
    sys.path.insert(0, str(BUILD.parents[0] / "bench"))
    from replay_bench import TRAIN
    cfg = ms_config(tmp_path / "d", iteration="1", saved_data="tensor", e2e={"save_kernel_args": True})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    proc = subprocess.run([PYTHON, "-c", TRAIN, str(tmp_path / "c.json"), str(BUILD / "python"), "mlp", "sigmoid"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    subprocess.run([str(BUILD / "opdump"), "replay", str(tmp_path / "d"), "-o", str(tmp_path / "r"), "-q"], timeout=600)
    m = measured_page(tmp_path / "r" / "replay_report.html", PROBE, tmp_path)
    assert m["path"] and all(rgb(c) in (ERROR_RGB, WARNING_RGB) for c in m["pathColours"]), m
    assert m["shownNames"] and all(m["clicked"] in name for name in m["shownNames"]), m["shownNames"][:5]
