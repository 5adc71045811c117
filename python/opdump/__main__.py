"""`python -m opdump ...` runs the opdump CLI that was built or installed with this package
(config check, convert, stats, compare, overflow, demo): the same arguments, output and exit codes."""
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
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + list(argv))


if __name__ == "__main__":
    sys.exit(main())
