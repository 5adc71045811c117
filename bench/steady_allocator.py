"""The allocator settings every benchmark that times a training step measures under.

glibc's defaults move with what a process frees: after a large block is freed its mmap threshold rises and it
trims freed memory back to the kernel, so a plain training step faults its activations in again every step
(205k minor faults and 2 s of system time per 10 resnet18 steps here), while tensors a dump holds a little longer
change when memory goes back, and the dumped run can come out faster than no tool at all. Fixed thresholds keep
the heap steady, as the jemalloc/tcmalloc that CPU training setups preload do: the default for every figure.
No block is mapped on its own either (MALLOC_MMAP_MAX_=0): glibc caps the mmap threshold at 32 MiB, and with two
training threads resnet18's convolution_backward allocates a 75.6 MB working tensor three times a step, which
was mapped, faulted in and unmapped each time: 14,000 minor faults and 35 ms of system time in a 104 ms plain step
(72 ms without them), which hid a dump's cost with every core training.
"""
import os

ALLOCATORS = {
    "steady": {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "17179869184", "MALLOC_MMAP_MAX_": "0"},
    "glibc": {},  # glibc's default, dynamic thresholds: labelled as such where printed
}
LABELS = {
    "steady": "steady allocator (glibc thresholds fixed: MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=16 GiB, "
              "MALLOC_MMAP_MAX_=0)",
    "glibc": "glibc's default dynamic thresholds (page faults move with what is freed)",
}


def environment(allocator="steady"):
    """This process's environment with the allocator's settings in place of any MALLOC_ ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(ALLOCATORS[allocator])
    return env
