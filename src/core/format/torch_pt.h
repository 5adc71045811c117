// PyTorch's torch.save files of one tensor (.pt, the zip format of torch >= 1.6), as msprobe
// writes them: read without PyTorch. The zip is read with minizip; its data.pkl by a restricted
// unpickler that knows the opcodes torch.save emits and rebuilds only tensors (no other callable
// is ever run), so a hostile file is an error, never code.
#pragma once
#include <memory>
#include <string>

#include "util/tensor.h"

namespace opdump {

// The tensor a .pt file holds (a Parameter is read as its tensor). Throws FormatError naming the
// file for anything else: another object, a storage on a big-endian machine, the legacy non-zip
// format, compressed or truncated records.
Tensor read_torch_pt(const std::string& path);
// The same from bytes in memory; `name` appears in errors.
Tensor parse_torch_pt(std::shared_ptr<const Buffer> bytes, const std::string& name);

namespace detail {
// Runs the restricted unpickler alone over a data.pkl (for fuzzing it without building a zip
// around each input): what it built ("a tensor", "a list", ...). Throws FormatError.
std::string unpickle_kind(const void* pickle, size_t size, const std::string& name);
}  // namespace detail

}  // namespace opdump
