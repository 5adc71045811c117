// The PyTorch adapter's side of the runtime: an at::RecordFunction observer that reports
// operator executions to the Dumper of `runtime` (Kineto's shape: the framework registers a small
// client with the core explicitly; nothing happens in static initializers).
#pragma once
#include "runtime/runtime_interface.h"

namespace opdump::pt::detail {

// Creates the process's observer and registers it as a listener of `runtime` (the callbacks
// are added when a dump becomes active). Once per process: later calls return the same observer.
RuntimeListener& install_observer(RuntimeInterface& runtime);

}  // namespace opdump::pt::detail
