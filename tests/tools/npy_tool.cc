// Test helper: writes raw bytes as an npy file through opdump's writer, so that the Python
// tests can check the result with numpy.load.
//   npy_tool RAW_FILE DTYPE DIMS OUT.npy      (DIMS like 2x3, or "scalar")
#include <cstdio>
#include <string>

#include "opdump/error.h"
#include "format/npy.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: npy_tool RAW DTYPE DIMS OUT\n");
    return 2;
  }
  try {
    auto dtype = opdump::dtype_from_name(argv[2]);
    if (!dtype) throw opdump::Error(std::string("unknown dtype ") + argv[2]);
    opdump::Shape shape;
    std::string dims = argv[3];
    if (dims != "scalar") {
      size_t start = 0;
      while (start <= dims.size()) {
        size_t x = dims.find('x', start);
        if (x == std::string::npos) x = dims.size();
        shape.push_back(std::stoll(dims.substr(start, x - start)));
        start = x + 1;
      }
    }
    opdump::MappedFile raw(argv[1]);
    opdump::TensorView view{raw.data(), *dtype, shape};
    if (view.nbytes() != raw.size()) throw opdump::Error("raw size does not match dtype and shape");
    opdump::write_npy(argv[4], view);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
