// What PyTorch's own op records cost an observer, with no observer code at all: one global
// RecordFunction callback asking for every op's inputs and outputs and every autograd node's
// record, as opdump's observer does (src/torch/observer.cc), that returns at once. bench_torch.py's
// `records` mode loads this with ctypes and times it beside opdump's modes: the floor under what
// any op-level observer on PyTorch costs, which opdump's `listed` and statistics figures sit on.
#include <ATen/record_function.h>

#include <memory>

namespace {

std::unique_ptr<at::ObserverContext> start(const at::RecordFunction&) { return nullptr; }
void end(const at::RecordFunction&, at::ObserverContext*) {}

at::CallbackHandle handle = 0;

}  // namespace

extern "C" {

// Registers the callback (once) or re-enables it.
__attribute__((visibility("default"))) void opdump_record_floor_on() {
  if (handle == 0) {
    handle = at::addGlobalCallback(at::RecordFunctionCallback(&start, &end)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  } else {
    at::reenableCallback(handle);
  }
}

// Disables it, as opdump disables its callback in an iteration it does not dump.
__attribute__((visibility("default"))) void opdump_record_floor_off() {
  if (handle != 0) at::disableCallback(handle);
}

}  // extern "C"
