// Text placed in the HTML reports (compare's, replay's).
#pragma once
#include <string>

namespace opdump {

// `s` with < > & " written as entities.
std::string html_escape(const std::string& s);

}  // namespace opdump
