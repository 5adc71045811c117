"""bench/bench_torch.py's interval for a median ratio: whether a figure near a target (1.16x against 1.15x) is above
it or only reads so in one run's noise. Checked on samples whose true median is known."""
import math
import random
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_torch  # noqa: E402


def test_too_few_values_have_no_interval():
    assert bench_torch.median_interval([]) is None
    assert bench_torch.median_interval([1.2, 1.1, 1.3, 1.15, 1.18]) is None


def test_the_interval_is_made_of_the_values_around_their_median():
    values = [1.21, 1.14, 1.18, 1.30, 1.17, 1.16, 1.19, 1.25, 1.12, 1.20, 1.15, 1.22]
    median, lo, hi = bench_torch.median_interval(values)
    assert median == 1.185
    assert lo in values and hi in values
    assert lo < median < hi
    # order statistics: neither end is an extreme of twelve values
    assert lo > min(values) and hi < max(values)


def test_the_interval_holds_the_true_median_about_19_times_in_20():
    rng = random.Random(7)
    true_median = math.log(2)  # of the exponential distribution: skewed, as step times are
    for n in (12, 24, 40):
        covered = 0
        trials = 2000
        for _ in range(trials):
            _, lo, hi = bench_torch.median_interval([rng.expovariate(1.0) for _ in range(n)])
            covered += lo <= true_median <= hi
        assert 0.9 <= covered / trials <= 0.99, (n, covered / trials)
