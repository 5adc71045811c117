// msprobe's dump.json, construct.json and stack.json (msprobe_dump.h).
#include "format/msprobe_dump.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "opdump/error.h"
#include "util/file_read.h"

namespace opdump {
namespace {

// Objects are std::maps (nlohmann::json): nlohmann::ordered_json looks keys up linearly, so a
// dump.json of 100k APIs took quadratic time. The file's order of keys, which msprobe's execution
// order and argument order live in, is kept beside each object of two or more keys (parse_json).
using ordered_json = nlohmann::json;
constexpr int kMaxJsonDepth = 64;                // msprobe nests a few levels; a hostile file a million
constexpr const char* kKeyOrder = "\x01order";  // an object's keys in the file's order

std::string read_text(const std::string& path, bool required) {
  return required ? read_text_file(path) : read_text_file_if_present(path);
}

// Python's json writes NaN, Infinity and -Infinity bare; JSON has no such literals. Outside
// strings they become strings, which the statistics reader understands.
std::string quote_python_literals(const std::string& text) {
  auto literal_at = [&](size_t i) -> size_t {  // the length of the literal starting at i, or 0
    for (const char* word : {"NaN", "-Infinity", "Infinity"}) {
      const size_t n = std::char_traits<char>::length(word);
      if (text.compare(i, n, word) == 0) return n;
    }
    return 0;
  };
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
    } else if (const size_t n = literal_at(i)) {
      out += '"';
      out.append(text, i, n);
      out += '"';
      i += n - 1;
    } else {
      in_string = c == '"';
      out += c;
    }
  }
  return out;
}

// Builds the document from nlohmann's SAX events (its DOM parser with a callback scans an object's
// members at every member's end: quadratic too), keeping each object's key order beside it and
// refusing nesting deeper than kMaxJsonDepth.
class OrderKeepingBuilder {
 public:
  OrderKeepingBuilder(ordered_json& root, const std::string& name) : root_(root), name_(name) {}
  bool null() { return put(nullptr) != nullptr; }
  bool boolean(bool v) { return put(v) != nullptr; }
  bool number_integer(ordered_json::number_integer_t v) { return put(v) != nullptr; }
  bool number_unsigned(ordered_json::number_unsigned_t v) { return put(v) != nullptr; }
  bool number_float(ordered_json::number_float_t v, const std::string&) { return put(v) != nullptr; }
  bool string(ordered_json::string_t& v) { return put(std::move(v)) != nullptr; }
  bool binary(ordered_json::binary_t& v) { return put(ordered_json::binary(std::move(v))) != nullptr; }
  bool start_object(std::size_t) {
    open(put(ordered_json::object()));
    keys_.emplace_back();
    return true;
  }
  bool key(ordered_json::string_t& k) {
    Keys& keys = keys_.back();
    if (keys.seen.insert(k).second) keys.order.push_back(k);
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    if (keys_.back().order.size() > 1) (*open_.back())[kKeyOrder] = std::move(keys_.back().order);
    keys_.pop_back();
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    open(put(ordered_json::array()));
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw FormatError(name_, std::string("not valid JSON: ") + e.what());
  }

 private:
  struct Keys {
    std::vector<std::string> order;
    std::unordered_set<std::string> seen;
  };
  // Where a value goes: the root, the end of the open array, or the open object's current key.
  // Pointers stay valid: an array grows only while none of its elements is open.
  ordered_json* put(ordered_json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    ordered_json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    ordered_json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  void open(ordered_json* container) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
      throw FormatError(name_, "objects and arrays nested more than " + std::to_string(kMaxJsonDepth) + " deep");
    open_.push_back(container);
  }
  ordered_json& root_;
  const std::string& name_;
  std::vector<ordered_json*> open_;
  std::vector<Keys> keys_;
  std::string key_;
};

ordered_json parse_json(const std::string& text, const std::string& name) {
  ordered_json root;
  OrderKeepingBuilder builder(root, name);
  try {
    ordered_json::sax_parse(quote_python_literals(text), &builder);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(name, std::string("not valid JSON: ") + e.what());
  }
  return root;
}

// An object's members in the file's order.
std::vector<std::pair<const std::string*, const ordered_json*>> items_in_order(const ordered_json& object) {
  std::vector<std::pair<const std::string*, const ordered_json*>> out;
  if (!object.is_object()) return out;
  const auto order = object.find(kKeyOrder);
  if (order == object.end() || !order->is_array()) {
    for (auto it = object.begin(); it != object.end(); ++it) out.emplace_back(&it.key(), &it.value());
    return out;
  }
  out.reserve(order->size());
  for (const auto& key : *order) {
    const auto it = object.find(key.get_ref<const std::string&>());
    if (it != object.end()) out.emplace_back(&it.key(), &it.value());
  }
  return out;
}

// A value as an error message shows it: at most 80 characters.
std::string brief(const ordered_json& v) {
  std::string text = v.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string join(const std::vector<std::string>& parts, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += (i > from ? "." : "") + parts[i];
  return out;
}

bool is_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_module_prefix(const std::string& p) { return p == "Module" || p == "Cell"; }

// APIs whose Python signature orders tensors differently from aten's schema of the op.
struct Reorder {
  const char* type;
  std::vector<std::string> python, aten;
};
const Reorder* reorder_of(const std::string& api_type) {
  static const Reorder reorders[] = {
      {"batch_norm", {"input", "running_mean", "running_var", "weight", "bias"},
       {"input", "weight", "bias", "running_mean", "running_var"}},
      {"instance_norm", {"input", "running_mean", "running_var", "weight", "bias"},
       {"input", "weight", "bias", "running_mean", "running_var"}},
      {"embedding", {"input", "weight"}, {"weight", "input"}},
  };
  for (const auto& r : reorders)
    if (api_type == r.type) return &r;
  return nullptr;
}

std::optional<double> statistic(const ordered_json& t, const char* key) {
  auto it = t.find(key);
  if (it == t.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return v;
  }
  return std::nullopt;
}

bool is_tensor(const ordered_json& v) {
  return v.is_object() && v.contains("shape") && v.contains("dtype") && v["dtype"].is_string();
}

class Reader {
 public:
  Reader(MsprobeDump& out, const std::string& name) : out_(out), name_(name) {}

  void api(const std::string& api, const ordered_json& body, uint64_t order,
           const std::map<std::string, std::string>& parents) {
    if (!body.is_object()) throw FormatError(name_, "data." + api + " is not an object");
    MsprobeTensor proto;
    proto.api = api;
    proto.order = order;
    const auto parts = split(api, '.');
    proto.prefix = parts[0];
    if (is_module_prefix(proto.prefix) && parts.size() >= 4) {
      proto.api_type = "module:" + parts[parts.size() - 3];
      proto.backward = parts[parts.size() - 2] != "forward";
    } else if (parts.size() >= 4 && is_number(parts[parts.size() - 2])) {
      proto.api_type = msprobe_api_type(proto.prefix, join(parts, 1, parts.size() - 2));
      proto.backward = parts.back() != "forward";
    } else {
      if (warned_++ < 3) out_.warnings.push_back(name_ + ": data." + api + " is not named {Prefix}.{api}.{n}.{forward|backward}; its op type is unknown");
      proto.api_type = api;
    }
    if (auto p = parents.find(api); p != parents.end()) proto.module = module_path(p->second);
    slots_[0] = slots_[1] = 0;
    if (!proto.backward && (body.contains("input_args") || body.contains("input_kwargs")))
      forward_inputs(proto, body);
    for (const auto& [key_ptr, value_ptr] : items_in_order(body)) {
      const std::string& key = *key_ptr;
      const ordered_json& value = *value_ptr;
      if (key == "input_args" || key == "input_kwargs") {
        continue;  // forward_inputs
      } else if (key == "input") {
        leaves(proto, value, true, "input");
      } else if (key == "output") {
        leaves(proto, value, false, "output");
      } else if (key == "parameters") {
        if (value.is_object())
          for (const auto& [p, v] : items_in_order(value)) leaves(proto, *v, true, "parameters." + *p);
      } else if (proto.backward && (value.is_array() || is_tensor(value))) {
        leaves(proto, value, false, key);  // parameters_grad: {"weight": [tensor], ...}
      }
    }
  }

 private:
  // The inputs of a forward API, numbered in the order aten's schema of the op takes them (where
  // the Python API orders them differently: F.batch_norm passes running statistics before weight
  // and bias, aten::batch_norm after), so that slots pair with an aten-level dump's.
  void forward_inputs(const MsprobeTensor& proto, const ordered_json& body) {
    std::vector<std::pair<std::string, const ordered_json*>> named;  // in the Python call's order
    std::vector<std::string> where;
    const Reorder* reorder = is_module_prefix(proto.prefix) ? nullptr : reorder_of(proto.api_type);
    if (auto args = body.find("input_args"); args != body.end() && args->is_array())
      for (size_t i = 0; i < args->size(); ++i) {
        named.emplace_back(reorder && i < reorder->python.size() ? reorder->python[i] : "#" + std::to_string(i), &(*args)[i]);
        where.push_back("input." + std::to_string(i));
      }
    if (auto kwargs = body.find("input_kwargs"); kwargs != body.end() && kwargs->is_object())
      for (const auto& [kw, v] : items_in_order(*kwargs)) {
        named.emplace_back(*kw, v);
        where.push_back("input." + *kw);
      }
    std::vector<bool> done(named.size(), false);
    if (reorder)
      for (const std::string& name : reorder->aten)
        for (size_t k = 0; k < named.size(); ++k)
          if (!done[k] && named[k].first == name) {
            leaves(proto, *named[k].second, true, where[k]);
            done[k] = true;
          }
    for (size_t k = 0; k < named.size(); ++k)
      if (!done[k]) leaves(proto, *named[k].second, true, where[k]);
  }

  void leaves(const MsprobeTensor& proto, const ordered_json& v, bool input, const std::string& where, int depth = 0) {
    if (v.is_array()) {
      if (depth > 32) throw FormatError(name_, "data." + proto.api + " " + where + ": lists nested too deep");
      for (size_t i = 0; i < v.size(); ++i) leaves(proto, v[i], input, where + "." + std::to_string(i), depth + 1);
      return;
    }
    if (!is_tensor(v)) return;  // ints, floats, None, dtypes, slices: not tensors
    MsprobeTensor t = proto;
    t.input = input;
    t.slot = slots_[input ? 0 : 1]++;
    t.argument = where;
    t.dtype_name = v["dtype"].get<std::string>();
    t.dtype = msprobe_dtype(t.dtype_name);
    const auto& shape = v["shape"];
    if (!shape.is_array()) throw FormatError(name_, "data." + t.api + " " + where + ": shape is not a list");
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw FormatError(name_, "data." + t.api + " " + where + ": shape " + brief(shape) + " is not a list of sizes");
      t.shape.push_back(d.get<int64_t>());
    }
    t.max = statistic(v, "Max");
    t.min = statistic(v, "Min");
    t.mean = statistic(v, "Mean");
    t.norm = statistic(v, "Norm");
    if (auto n = v.find("data_name"); n != v.end() && n->is_string() && n->get<std::string>() != "-1")
      t.data_name = n->get<std::string>();
    if (t.data_name.find('/') != std::string::npos || t.data_name == "." || t.data_name == "..")
      throw FormatError(name_, "data." + t.api + " " + where + ": data_name \"" + t.data_name + "\" is not a file name");
    out_.tensors.push_back(std::move(t));
  }

  MsprobeDump& out_;
  const std::string& name_;
  uint32_t slots_[2] = {0, 0};
  int warned_ = 0;
};

// "File /x/model.py, line 42, in forward, \n  out = F.relu(x)" -> "/x/model.py:42"
std::string call_site(const ordered_json& frames) {
  if (!frames.is_array()) return "";
  for (const auto& f : frames) {
    if (!f.is_string()) continue;
    const std::string s = f.get<std::string>();
    if (s.rfind("File ", 0) != 0) continue;
    const size_t comma = s.find(", line ");
    if (comma == std::string::npos) continue;
    const std::string file = s.substr(5, comma - 5);
    if (file.find("/msprobe/") != std::string::npos || file.find("/torch/") != std::string::npos ||
        file.find("/mindspore/") != std::string::npos)
      continue;  // the frames of the tools and frameworks, not the user's line
    size_t end = comma + 7;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    return file + ":" + s.substr(comma + 7, end - comma - 7);
  }
  return "";
}

}  // namespace

std::string module_path(const std::string& module) {
  const auto parts = split(module, '.');
  if (parts.size() < 4 || !is_module_prefix(parts[0])) return "";
  return join(parts, 1, parts.size() - 3);
}

MsprobeStatistics msprobe_statistics(const RecordedStats& s, DType dtype) {
  const bool nan = s.nan && *s.nan > 0;
  const bool pos_inf = s.pos_inf && *s.pos_inf > 0;
  const bool neg_inf = s.neg_inf && *s.neg_inf > 0;
  const double NaN = std::nan(""), inf = HUGE_VAL;
  MsprobeStatistics m;
  if (nan) {
    m.max = m.min = m.mean = m.norm = NaN;
    return m;
  }
  auto finite = [&](const std::optional<double>& v) { return s.no_finite ? std::nullopt : v; };
  m.max = finite(s.max);
  m.min = finite(s.min);
  m.mean = finite(s.avg);
  m.norm = finite(s.l2norm);
  if (pos_inf || neg_inf) {
    m.max = pos_inf ? inf : (s.no_finite ? std::optional<double>(-inf) : m.max);
    m.min = neg_inf ? -inf : (s.no_finite ? std::optional<double>(inf) : m.min);
    m.mean = pos_inf && neg_inf ? NaN : (pos_inf ? inf : -inf);
    m.norm = inf;
  }
  if (dtype != DType::Float64)
    for (std::optional<double>* v : {&m.max, &m.min, &m.mean, &m.norm})
      if (*v) **v = static_cast<double>(static_cast<float>(**v));
  return m;
}

std::optional<DType> msprobe_dtype(std::string name) {
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  // torch's aliases of its dtypes (str(torch.long) is "torch.int64", but a hand-written file may say either)
  static const std::pair<const char*, DType> aliases[] = {{"float", DType::Float32}, {"double", DType::Float64},
                                                          {"half", DType::Float16},  {"long", DType::Int64},
                                                          {"int", DType::Int32},     {"short", DType::Int16}};
  for (const auto& [alias, dtype] : aliases)
    if (name == alias) return dtype;
  return dtype_from_name(name);
}

std::string msprobe_api_type(const std::string& prefix, const std::string& api) {
  std::string t = api;
  if (t.size() > 4 && t.rfind("__", 0) == 0 && t.compare(t.size() - 2, 2, "__") == 0) {
    t = t.substr(2, t.size() - 4);
    static const std::pair<const char*, const char*> dunder[] = {
        {"add", "add"},           {"radd", "add"},         {"iadd", "add_"},       {"sub", "sub"},
        {"isub", "sub_"},         {"rsub", "rsub"},        {"mul", "mul"},         {"rmul", "mul"},
        {"imul", "mul_"},         {"truediv", "div"},      {"div", "div"},         {"itruediv", "div_"},
        {"rtruediv", "div"},      {"floordiv", "floor_divide"}, {"matmul", "matmul"}, {"rmatmul", "matmul"},
        {"pow", "pow"},           {"rpow", "pow"},         {"ipow", "pow_"},       {"neg", "neg"},
        {"mod", "remainder"},     {"and", "bitwise_and"},  {"or", "bitwise_or"},   {"xor", "bitwise_xor"},
        {"invert", "bitwise_not"}, {"getitem", "getitem"}, {"setitem", "setitem"},
    };
    for (const auto& [from, to] : dunder)
      if (t == from) return to;
    return t;
  }
  if (prefix == "Functional" || prefix == "MintFunctional") {
    if (t == "cross_entropy") return "cross_entropy_loss";
    if (t == "nll_loss") return "nll_loss_nd";
  }
  return t;
}

bool parse_msprobe_file_name(const std::string& file_name, MsprobeFileName* out) {
  std::string stem = file_name;
  for (const char* ext : {".npy", ".pt"}) {
    const size_t n = std::char_traits<char>::length(ext);
    if (stem.size() > n && stem.compare(stem.size() - n, n, ext) == 0) stem.resize(stem.size() - n);
  }
  const auto parts = split(stem, '.');
  // {api...}.{input|output}.{index}[.{index}...]: the last input/output marker followed by numbers
  for (size_t i = parts.size(); i-- > 1;) {
    if (parts[i] != "input" && parts[i] != "output") continue;
    if (i + 1 >= parts.size() || parts[i + 1].empty() || (is_number(parts[i + 1]) && parts[i + 1].size() > 9)) return false;
    const auto api = std::vector<std::string>(parts.begin(), parts.begin() + static_cast<long>(i));
    if (api.size() < 4) return false;
    const bool module = is_module_prefix(api[0]);
    const std::string& direction = module ? api[api.size() - 2] : api.back();
    if (direction != "forward" && direction != "backward") return false;
    out->api = join(api, 0, api.size());
    out->api_type = module ? "module:" + api[api.size() - 3] : msprobe_api_type(api[0], join(api, 1, api.size() - 2));
    out->backward = direction == "backward";
    out->input = parts[i] == "input";
    const std::string& index = parts[i + 1];
    if (is_number(index)) {
      out->slot = static_cast<uint32_t>(std::stoul(index));
    } else {  // a keyword argument: its place in aten's order where known, else a stable number of its name
      const Reorder* r = reorder_of(out->api_type);
      const auto at = r ? std::find(r->aten.begin(), r->aten.end(), index) : std::vector<std::string>::const_iterator();
      if (r && at != r->aten.end()) {
        out->slot = static_cast<uint32_t>(at - r->aten.begin());
      } else {
        uint32_t h = 2166136261u;  // FNV-1a
        for (unsigned char c : index) h = (h ^ c) * 16777619u;
        out->slot = 1000 + h % 100000;
      }
    }
    return true;
  }
  return false;
}

namespace {

// The dump of one parsed dump.json (`dump`: its root, known to hold a "data" object).
MsprobeDump dump_of(const ordered_json& dump, const std::string& construct_text, const std::string& stack_text,
                    const std::string& name) {
  MsprobeDump out;
  for (auto [key, field] : {std::pair{"task", &out.task}, {"level", &out.level}, {"framework", &out.framework}})
    if (auto it = dump.find(key); it != dump.end() && it->is_string()) *field = it->get<std::string>();

  std::map<std::string, std::string> parents;
  const std::string construct_name = name.substr(0, name.find_last_of('/') + 1) + "construct.json";
  if (!construct_text.empty()) {
    const ordered_json c = parse_json(construct_text, construct_name);
    if (c.is_object())
      for (const auto& [api, parent] : c.items())
        if (parent.is_string()) parents[api] = parent.get<std::string>();
  }
  const std::string stack_name = name.substr(0, name.find_last_of('/') + 1) + "stack.json";
  if (!stack_text.empty()) {
    const ordered_json s = parse_json(stack_text, stack_name);
    if (s.is_object())
      for (const auto& [key, value] : s.items()) {
        // {api: [frames]} (older msprobe) or {"n": [[apis], [frames]]} (frames shared by APIs)
        if (value.is_array() && value.size() == 2 && value[0].is_array() && value[1].is_array()) {
          const std::string site = call_site(value[1]);
          for (const auto& api : value[0])
            if (api.is_string() && !site.empty()) out.call_sites[api.get<std::string>()] = site;
        } else if (const std::string site = call_site(value); !site.empty()) {
          out.call_sites[key] = site;
        }
      }
  }

  Reader reader(out, name);
  uint64_t order = 0;
  for (const auto& [api, body] : items_in_order(dump["data"])) reader.api(*api, *body, order++, parents);
  return out;
}

bool holds_data(const ordered_json& dump) { return dump.is_object() && dump.contains("data") && dump["data"].is_object(); }

// A value without the key-order members parse_json adds.
ordered_json plain(const ordered_json& v) {
  if (v.is_array()) {
    ordered_json out = ordered_json::array();
    for (const auto& e : v) out.push_back(plain(e));
    return out;
  }
  if (!v.is_object()) return v;
  ordered_json out = ordered_json::object();
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != kKeyOrder) out[it.key()] = plain(it.value());
  return out;
}

}  // namespace

MsprobeDump parse_msprobe_dump(const std::string& dump_text, const std::string& construct_text,
                               const std::string& stack_text, const std::string& name) {
  const ordered_json dump = parse_json(dump_text, name);
  if (!holds_data(dump)) {
    MsprobeDump out;
    out.recognized = false;
    return out;
  }
  return dump_of(dump, construct_text, stack_text, name);
}

MsprobeCalls parse_msprobe_calls(const std::string& dump_text, const std::string& name) {
  MsprobeCalls out;
  const ordered_json dump = parse_json(dump_text, name);
  if (!holds_data(dump)) {
    out.dump.recognized = false;
    return out;
  }
  out.dump = dump_of(dump, "", "", name);
  std::map<std::string, std::vector<const MsprobeTensor*>> by_api;
  for (const MsprobeTensor& t : out.dump.tensors) by_api[t.api].push_back(&t);
  for (const auto& [api, body] : items_in_order(dump["data"])) {
    const auto parts = split(*api, '.');
    if (!body->is_object() || is_module_prefix(parts[0]) || parts.size() < 4 || parts.back() != "forward" ||
        !is_number(parts[parts.size() - 2]))
      continue;
    MsprobeCall call;
    call.api = *api;
    call.prefix = parts[0];
    call.api_type = msprobe_api_type(call.prefix, join(parts, 1, parts.size() - 2));
    if (auto args = body->find("input_args"); args != body->end() && args->is_array()) call.args = plain(*args);
    if (auto kwargs = body->find("input_kwargs"); kwargs != body->end() && kwargs->is_object())
      for (const auto& [kw, v] : items_in_order(*kwargs)) call.kwargs.emplace_back(*kw, plain(*v));
    if (auto t = by_api.find(*api); t != by_api.end()) call.tensors = t->second;
    out.calls.push_back(std::move(call));
  }
  return out;
}

MsprobeCalls read_msprobe_calls(const std::string& dump_json) { return parse_msprobe_calls(read_text(dump_json, true), dump_json); }

MsprobeDump read_msprobe_dump(const std::string& dump_json) {
  const std::string folder = dump_json.substr(0, dump_json.find_last_of('/') + 1);
  return parse_msprobe_dump(read_text(dump_json, true), read_text(folder + "construct.json", false),
                            read_text(folder + "stack.json", false), dump_json);
}

}  // namespace opdump
