"""The benchmarks' own shared libraries (bench/CMakeLists.txt), found in the bench folder of the build whose opdump
package is on PYTHONPATH, so that a bench loads the ones built with the opdump it measures."""
import os


def built(pythonpath, name):
    """The absolute path of bench library `name` (e.g. libopdump_record_floor.so) beside the first opdump package
    folder of `pythonpath` that has it built; "" when none has."""
    for folder in pythonpath.split(os.pathsep):
        lib = os.path.join(folder, os.pardir, "bench", name)
        if folder and os.path.exists(lib):
            return os.path.abspath(lib)
    return ""


def record_floor(pythonpath):
    """bench/record_floor.cc's library: PyTorch's op records with no observer code (bench_torch.py's and
    cache_profile.py's `records` mode)."""
    return built(pythonpath, "libopdump_record_floor.so")
