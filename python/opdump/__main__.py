"""`python -m opdump ...` runs the opdump CLI that was built or installed with this package
(config check, convert, stats, compare, overflow, demo): the same arguments, output and exit codes.
Under torchrun (WORLD_SIZE > 1), `compare` is split across the processes: opdump/distributed_compare.py."""
import os
import sys


def cli_path():
    """The CLI beside this copy of the package: inside it (pip's wheel), or where CMake put it."""
    package = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(package, "bin", "opdump")]
    try:
        from ._install import CLI_FROM_PACKAGE
        candidates.append(os.path.normpath(os.path.join(package, CLI_FROM_PACKAGE)))
    except ImportError:  # a source checkout without a build: only the wheel layout applies
        pass
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the opdump CLI was not found beside the package (looked at: " + ", ".join(candidates) + ")")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        path = cli_path()
    except FileNotFoundError as e:
        sys.stderr.write(f"opdump: {e}\n")
        return 2
    if argv[:1] == ["compare"] and int(os.environ.get("WORLD_SIZE", "1")) > 1 and "--list-ranks" not in argv:
        # launched by torchrun (or another launcher): one compare across the processes and nodes
        from .distributed_compare import main as distributed_main
        return distributed_main(argv[1:], path)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + list(argv))


if __name__ == "__main__":
    sys.exit(main())
