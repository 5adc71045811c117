#include "opdump/error.h"

#include <cstring>

namespace opdump {

IoError::IoError(const std::string& path, const std::string& what, int err)
    : Error(path + ": " + what + (err ? std::string(": ") + std::strerror(err) : std::string())),
      errno_(err) {}

}  // namespace opdump
