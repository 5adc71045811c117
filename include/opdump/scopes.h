// Module scopes of the calling thread: what names the operators it runs (the framework adapters
// and ModelScope/ScopeGuard push and pop them).
#pragma once
#include <cstddef>
#include <string>

#include "opdump/api.h"

namespace opdump {

// Module scopes of the calling thread: the "Default/net-Net/conv1-Conv2d" prefix of op names.
namespace scopes {
// `element` is "{attribute}-{Class}" (forward names); `short_element` the attribute alone
// (backward names, which embed the forward scope and must stay short; "" = element).
OPDUMP_API void push(const std::string& element, const std::string& short_element = "");
OPDUMP_API void pop();
// Truncates the stack to `depth` elements (recovery after an exception skipped pops).
OPDUMP_API void truncate(size_t depth);
OPDUMP_API size_t depth();
// "Default/elem1/elem2"
OPDUMP_API const std::string& path();
// The same with short elements: "Default/net/conv1".
OPDUMP_API const std::string& short_path();
// The model the calling thread is running ("" outside any registered model).
OPDUMP_API void enter_model(const std::string& name);
OPDUMP_API void exit_model();
OPDUMP_API const std::string& current_model();
// MindSpore dump_mode 2: ops run inside something marked with set_dump.
OPDUMP_API void push_mark(bool marked);
OPDUMP_API void pop_mark();
OPDUMP_API bool marked();
}  // namespace scopes

}  // namespace opdump
