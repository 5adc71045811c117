// Integers appended to a row being built in place (statistic.csv, the execution order's csv files):
// fmt::format_int writes the digits without a formatting pass (format_to through a back_inserter was a
// fifth of the execution log's time on the training thread).
#pragma once
#include <fmt/format.h>

#include <string>

namespace opdump {

template <typename Integer>
void append_number(std::string& out, Integer n) {
  const fmt::format_int digits(n);
  out.append(digits.data(), digits.size());
}

}  // namespace opdump
