"""bench/cache_profile.py: callgrind's per-function table summed by library, and the bench run whole on the tiny-op
model (when valgrind is installed): the counts it reports are what a change to the op path is judged by."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "bench"))
import cache_profile  # noqa: E402

# callgrind_annotate's table as it prints it (--show=Ir,I1mr,D1mr,D1mw), cut to one function per library and kind.
TABLE = """\
--------------------------------------------------------------------------------
Ir                   I1mr               D1mr               D1mw
--------------------------------------------------------------------------------
178,581,467 (100.0%) 7,741,136 (100.0%) 2,745,152 (100.0%) 600,869 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                 I1mr             D1mr             D1mw             file:function
--------------------------------------------------------------------------------
8,360,184 ( 4.68%)  12,480 ( 0.16%)  27,348 ( 1.00%)     15 ( 0.00%)  ???:sgemm_ [/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0]
7,599,639 ( 4.26%)  62,111 ( 0.80%)  39,670 ( 1.45%)  1,304 ( 0.22%)  ./malloc/./malloc/malloc.c:_int_free [/usr/lib/x86_64-linux-gnu/libc.so.6]
  183,369 ( 0.01%)     100 ( 0.00%)      7 ( 0.00%)      .            ./malloc/./malloc/arena.c:free
6,236,406 ( 3.49%)   2,759 ( 0.04%)  48,206 ( 1.76%)      0           ./elf/../sysdeps/x86_64/tls_get_addr.S:__tls_get_addr [/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2]
2,616,392 ( 1.47%) 345,187 ( 4.46%) 104,521 ( 3.81%) 28,059 ( 4.67%)  ???:opdump::pt::detail::(anonymous namespace)::Observer::start_cb(at::RecordFunction const&) [/b/libopdump_torch.so.0.1.0]
1,543,974 ( 0.86%)   5,212 ( 0.07%)  14,232 ( 0.52%)    350 ( 0.06%)  ???:void opdump::detail::k_avx2::(anonymous namespace)::float_kernel<opdump::detail::k_avx2::(anonymous namespace)::ReadF32, false>(void const*, unsigned long) [/b/libopdump.so.0.1.0]
  667,458 ( 0.37%)  48,085 ( 0.62%)   7,729 ( 0.28%)  1,000 ( 0.01%)  ???:opdump::ExecutionLog::record(opdump::OpRecord const&) [/b/libopdump.so.0.1.0]
2,221,512 ( 1.24%)  17,876 ( 0.23%)   6,981 ( 0.25%)  3,041 ( 0.51%)  ???:0x0000000000f288a0 [/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0]
3,784,487 ( 2.12%) 124,766 ( 1.61%)  82,672 ( 3.01%) 22,016 ( 3.66%)  ???:_PyEval_EvalFrameDefault'2 [/usr/bin/python3.11]
1,000,000 ( 0.50%)     200 ( 0.00%)  10,000 ( 0.30%)      0           ???:0x00000000390cf000 [???]
       12 ( 0.00%)       1 ( 0.00%)      .                .           ???:opdump_callgrind_start [/b/bench/libopdump_callgrind_marks.so]
"""


def test_the_table_is_summed_by_library():
    totals = cache_profile.parse_annotate(TABLE)
    assert totals["opdump adapter"] == [2616392, 345187, 104521, 28059]
    assert totals["opdump kernels"] == [1543974, 5212, 14232, 350]  # not the core's, though in libopdump.so
    assert totals["opdump core"] == [667458, 48085, 7729, 1000]
    assert totals["libc"] == [7599639 + 183369, 62111 + 100, 39670 + 7, 1304]  # "." is none; no library: glibc's
    assert totals["thread-locals (ld.so)"] == [6236406, 2759, 48206, 0]
    assert totals["oneDNN, OpenMP, BLAS"][0] == 8360184
    assert totals["torch"][0] == 2221512 and totals["python"][0] == 3784487
    assert totals["generated code, other"][0] == 1000000 + 12  # oneDNN's JIT code, and the bench's own marks
    # every row counted once, the program's totals line not at all
    assert sum(t[0] for t in totals.values()) == 8360184 + 7599639 + 183369 + 6236406 + 2616392 + 1543974 + \
        667458 + 2221512 + 3784487 + 1000000 + 12


# valgrind's log when the CPU does not report an instruction a library runs (an AMD EPYC VM without rdtscp).
UNRECOGNISED = """\
vex amd64->IR: unhandled instruction bytes: 0xF 0x1 0xF9 0x48 0xC1 0xE2 0x20 0x48 0x9 0xD0
==19201== valgrind: Unrecognised instruction at address 0x1e7da522.
==19201==    at 0x1E7DA522: hwy::platform::TimerResolution() (in /usr/lib/x86_64-linux-gnu/libhwy.so.1.0.3)
==19201== Your program just tried to execute an instruction that Valgrind
==19201== did not recognise.  There are two possible reasons for this.
==19201== Process terminating with default action of signal 4 (SIGILL)
==19201==  Illegal opcode at address 0x1E7DA522
==19201==    at 0x1E7DA522: hwy::platform::TimerResolution() (in /usr/lib/x86_64-linux-gnu/libhwy.so.1.0.3)
==19201==    by 0x1E7D8218: ??? (in /usr/lib/x86_64-linux-gnu/libhwy.so.1.0.3)
"""


def test_an_instruction_valgrind_cannot_run_is_named():
    assert cache_profile.unrecognised_instruction(UNRECOGNISED) == \
        "hwy::platform::TimerResolution() (in /usr/lib/x86_64-linux-gnu/libhwy.so.1.0.3)"
    assert cache_profile.unrecognised_instruction("==1== some other failure\nTraceback (most recent call last):") is None


@pytest.mark.skipif(not shutil.which("valgrind") or not (BUILD / "bench" / "libopdump_callgrind_marks.so").exists()
                    or not (BUILD / "bench" / "libopdump_record_floor.so").exists(),
                    reason="valgrind, or bench/callgrind_marks.c's or bench/record_floor.cc's library, missing")
def test_the_tiny_model_counted_plain_records_and_listed(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "cache_profile.py"), "--model", "tiny", "--modes",
                           "plain,records,listed", "--warmup", "1", "--steps", "1", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0 and "valgrind cannot run" in proc.stderr:
        pytest.skip(proc.stderr.strip().splitlines()[-1])  # this CPU hides an instruction torch's libraries run
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout

    def table(title):
        lines = text[text.index(title + "\n"):].splitlines()[2:]
        rows = {}
        for line in lines:
            if not line.startswith("  "):
                break
            name, cells = line[:24].strip(), line[24:].split()
            rows[name] = [float(c[:-1]) * (1e6 if c.endswith("M") else 1e3) for c in cells]
        return rows

    plain, extra = table("plain: the training thread"), table("listed over plain: the training thread")
    floor = table("records over plain: the training thread")
    assert plain["all"][0] > 1e6 and plain["all"][1] > 0  # instructions and instruction-cache misses counted
    assert "opdump adapter" not in plain  # nothing of opdump's runs without it
    # PyTorch's records alone: torch's work, none of it opdump's (the floor's own callbacks count as "other")
    assert floor["torch"][0] > 1e6 and floor["torch"][1] > 1e3
    assert "opdump adapter" not in floor and "opdump core" not in floor
    # listing every op costs more than the records it is built on
    assert extra["all"][1] > floor["all"][1] and extra["torch"][0] >= floor["torch"][0] * 0.9
    # naming and listing every op is the adapter's and the core's work, with the misses that come with it
    assert extra["opdump adapter"][0] > 1e5 and extra["opdump adapter"][1] > 1e3
    assert extra["opdump core"][0] > 1e5
    assert not list(tmp_path.iterdir())  # its callgrind files and dumps are gone
