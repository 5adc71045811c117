// What libopdump.so exports. The library is built with hidden visibility (fmt's packaging): only
// declarations marked here are its ABI, and nothing of the engine (its classes, protobuf, fmt, RE2)
// leaks into the programs that link it. The test ABI.ExportedSymbols checks the list.
#pragma once

// The public API: the functions and classes of include/opdump.
#define OPDUMP_API __attribute__((visibility("default")))

// What opdump's own framework side (libopdump_torch.so, the Python module, their tests) reaches of
// the engine beyond the public API, so that the process keeps one runtime. Not a public API: these
// headers are not installed. Programs that link the engine itself (the CLI, the core's tests) see
// none of it exported: they link it with --exclude-libs.
#define OPDUMP_ADAPTER_API __attribute__((visibility("default")))
