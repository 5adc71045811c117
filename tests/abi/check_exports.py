#!/usr/bin/env python3
"""ABI.ExportedSymbols: libopdump.so exports its API and the framework side's bridge, nothing else.

Usage: check_exports.py [--unlist NAME] EXPORTS_TXT LIBOPDUMP [FRAMEWORK_DSO ...]
(--unlist: checks the check -- NAME taken out of the list must be reported as exported)

- every dynamic symbol libopdump.so defines is named in EXPORTS_TXT (an engine class, protobuf or a
  std:: template leaking out fails here, by name);
- every name in EXPORTS_TXT is exported (the list stays the truth);
- every opdump symbol a framework-side library (libopdump_torch.so, the Python module) needs is
  defined by libopdump.so or by those libraries: the Python module is linked with undefined symbols
  allowed, so a hidden one would otherwise fail only at import.
"""
import re
import subprocess
import sys


def symbols(path, which):
    out = subprocess.run(["nm", "-D", "-C", which, path], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split(maxsplit=2) if which == "--defined-only" else line.split(maxsplit=1)
        name = fields[-1].strip()
        names.add(normalize(name))
    return names


def normalize(name):
    name = name.replace("[abi:cxx11]", "")
    if name.startswith(("typeinfo", "vtable")):
        return name
    return re.sub(r"\(.*$", "", name)  # parameters and qualifiers


def main(argv):
    unlisted = None
    if argv[1] == "--unlist":
        unlisted, argv = argv[2], argv[:1] + argv[3:]
    listed, sections = set(), {}
    section = None
    for line in open(argv[1], encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        listed.add(line)
        sections[line] = section
    listed.discard(unlisted)
    exported = symbols(argv[2], "--defined-only")
    failures = []
    for name in sorted(exported - listed):
        failures.append(f"{argv[2]} exports {name!r}, which is neither API nor in {argv[1]}: keep engine "
                        "symbols hidden (OPDUMP_API is for include/opdump only)")
    for name in sorted(listed - exported):
        failures.append(f"{argv[1]} lists {name!r} ({sections[name]}), which {argv[2]} no longer exports: "
                        "remove it from the list")
    provided = set(exported)
    for dso in argv[3:]:
        provided |= symbols(dso, "--defined-only")
    for dso in argv[3:]:
        for name in sorted(symbols(dso, "--undefined-only")):
            if "opdump" in name and name not in provided:
                failures.append(f"{dso} needs {name!r}, which libopdump.so hides")
    for f in failures:
        print("ABI:", f, file=sys.stderr)
    print(f"ABI: {argv[2]} exports {len(exported)} names "
          f"({sum(1 for n in exported if sections.get(n) == 'api')} API, "
          f"{sum(1 for n in exported if sections.get(n) == 'adapter')} for the framework side)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
