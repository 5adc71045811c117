#include "read/h5_index.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "format/h5_file.h"
#include "layout/layout.h"
#include "opdump/error.h"

namespace opdump {
namespace {

// Bounds on what one file may make the indexer walk (a hostile file can nest groups deeply).
constexpr int kMaxDepth = 16;
constexpr size_t kMaxEntries = size_t(1) << 24;

struct OpGroup {
  std::string ir, group;
  uint64_t seqid = 0;
};


class H5Indexer {
 public:
  H5Indexer(const h5::Reader& file, const DumpPosition& where, std::vector<DumpEntry>& out)
      : file_(file), where_(where), out_(out) {}

  void op(const OpGroup& g) {
    DumpEntry proto;
    proto.source = DumpEntry::Source::H5;
    proto.path = file_.path();
    proto.where = where_;
    proto.op_type = file_.string_attr(g.group, "OpType").value_or(g.ir);
    proto.op_name = file_.string_attr(g.group, "OpName").value_or(g.ir + "/" + std::to_string(g.seqid));
    proto.key_name = sanitize_name(proto.op_name);
    proto.order = static_cast<uint64_t>(file_.int_attr(g.group, "TaskId").value_or(static_cast<int64_t>(g.seqid)));
    if (auto it = file_.int_attr(g.group, "Iteration")) proto.where.iteration = *it;
    for (const auto& [side, io] : {std::pair<const char*, IoKind>{"input", IoKind::Input}, {"output", IoKind::Output}}) {
      const std::string group = g.group + "/" + side;
      if (!file_.is_group(group)) continue;
      uint32_t slot = 0;
      walk(group, proto, io, &slot, 0);
    }
  }

 private:
  void walk(const std::string& group, const DumpEntry& proto, IoKind io, uint32_t* slot, int depth) {
    if (depth > kMaxDepth) throw FormatError(file_.path(), group + ": groups nested deeper than " + std::to_string(kMaxDepth));
    for (const std::string& name : file_.members(group)) {
      const std::string object = group + "/" + name;
      if (file_.is_group(object)) {  // a list argument
        walk(object, proto, io, slot, depth + 1);
        continue;
      }
      if (!file_.is_dataset(object)) continue;
      const h5::DatasetInfo info = file_.info(object);
      const auto placeholder = file_.string_attr(object, "Placeholder");
      if (info.type != h5::ValueType::Tensor && !placeholder) continue;  // a non-tensor argument
      if (out_.size() >= kMaxEntries) throw FormatError(file_.path(), "more than " + std::to_string(kMaxEntries) + " tensors");
      DumpEntry e = proto;
      e.io = io;
      e.slot = (*slot)++;
      e.object = object;
      e.shape = info.shape;
      if (placeholder) {
        e.placeholder = *placeholder;
        e.dtype = DType::Float32;
        e.shape = {0};
      } else if (info.dtype) {
        e.dtype = *info.dtype;
      } else {
        e.unreadable = file_.path() + ": " + object + ": " + info.unreadable;
      }
      out_.push_back(std::move(e));
    }
  }

  const h5::Reader& file_;
  DumpPosition where_;
  std::vector<DumpEntry>& out_;
};

// Entries cross from the reading child to the caller as JSON.
nlohmann::json to_json(const DumpEntry& e) {
  return {{"op_type", e.op_type}, {"op_name", e.op_name}, {"key_name", e.key_name}, {"order", e.order},
          {"iteration", e.where.iteration}, {"io", static_cast<int>(e.io)}, {"slot", e.slot}, {"object", e.object},
          {"dtype", static_cast<int>(e.dtype)}, {"shape", e.shape}, {"placeholder", e.placeholder},
          {"unreadable", e.unreadable}};
}

DumpEntry from_json(const nlohmann::json& j, const std::string& path, const DumpPosition& where) {
  DumpEntry e;
  e.source = DumpEntry::Source::H5;
  e.path = path;
  e.where = where;
  e.op_type = j.at("op_type").get<std::string>();
  e.op_name = j.at("op_name").get<std::string>();
  e.key_name = j.at("key_name").get<std::string>();
  e.order = j.at("order").get<uint64_t>();
  e.where.iteration = j.at("iteration").get<int64_t>();
  e.io = static_cast<IoKind>(j.at("io").get<int>());
  e.slot = j.at("slot").get<uint32_t>();
  e.object = j.at("object").get<std::string>();
  e.dtype = static_cast<DType>(j.at("dtype").get<int>());
  e.shape = j.at("shape").get<Shape>();
  e.placeholder = j.at("placeholder").get<std::string>();
  e.unreadable = j.at("unreadable").get<std::string>();
  return e;
}

void index_in_process(const std::string& path, const DumpPosition& where, std::vector<DumpEntry>& out) {
  const h5::Reader file(path);
  H5Indexer indexer(file, where, out);
  std::vector<OpGroup> ops;
  for (const std::string& ir : file.members("/")) {
    if (!file.is_group("/" + ir)) continue;
    for (const std::string& seq : file.members("/" + ir)) {
      OpGroup g{ir, "/" + ir + "/" + seq, 0};
      if (!parse_decimal(seq, &g.seqid) || !file.is_group(g.group)) continue;  // not an op call
      ops.push_back(std::move(g));
    }
  }
  // in the order the ops ran: one seqid counter over every op
  std::stable_sort(ops.begin(), ops.end(), [](const OpGroup& a, const OpGroup& b) { return a.seqid < b.seqid; });
  for (const OpGroup& g : ops) indexer.op(g);
}

}  // namespace

namespace {
// opdump's records beside an .h5 it wrote ({file}.opdump/{time}/{device}/execution_order/): the data
// flow (which op produced each input, which inputs are parameters) that compare's origin follows.
std::string records_root(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path records = fs::path(path.substr(0, path.size() - 3) + ".opdump");
  if (!fs::is_directory(records, ec)) return "";
  for (const auto& time : fs::directory_iterator(records, ec))
    for (const auto& device : fs::directory_iterator(time.path(), ec))
      if (fs::is_directory(device.path() / "execution_order", ec)) return fs::absolute(device.path()).lexically_normal().string();
  return "";
}
}  // namespace

void index_h5_dump(const std::string& path, const DumpPosition& at, std::vector<DumpEntry>& out) {
  DumpPosition where = at;
  if (path.size() > 3) {
    if (std::string root = records_root(path); !root.empty()) where.run_root = root;
  }
  const std::string text = h5::isolated(path, [&] {
    std::vector<DumpEntry> entries;
    index_in_process(path, where, entries);
    nlohmann::json list = nlohmann::json::array();
    for (const DumpEntry& e : entries) list.push_back(to_json(e));
    return list.dump();
  });
  const nlohmann::json list = nlohmann::json::parse(text);
  for (const nlohmann::json& j : list) out.push_back(from_json(j, path, where));
}

std::map<std::string, std::string> h5_op_arguments(const std::string& path) {
  const std::string text = h5::isolated(path, [&] {
    const h5::Reader file(path);
    nlohmann::json out = nlohmann::json::object();
    for (const std::string& ir : file.members("/")) {
      if (!file.is_group("/" + ir)) continue;
      for (const std::string& seq : file.members("/" + ir)) {
        const std::string group = "/" + ir + "/" + seq;
        if (!file.is_group(group)) continue;
        const auto name = file.string_attr(group, "OpName");
        const auto arguments = file.string_attr(group, "Arguments");
        if (name && arguments) out[sanitize_name(*name)] = *arguments;
      }
    }
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  });
  std::map<std::string, std::string> out;
  const nlohmann::json all = nlohmann::json::parse(text);
  for (auto it = all.begin(); it != all.end(); ++it)
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  return out;
}

// The tensor crosses as [dtype: 1 byte][rank: 1 byte][dims: rank x int64][data].
Tensor load_h5_entry(const DumpEntry& e) {
  const std::string bytes = h5::isolated(e.path, [&] {
    const Tensor t = h5::Reader(e.path).tensor(e.object);
    std::string out(2 + 8 * t.shape.size(), '\0');
    out[0] = static_cast<char>(t.dtype);
    out[1] = static_cast<char>(t.shape.size());
    std::memcpy(out.data() + 2, t.shape.data(), 8 * t.shape.size());
    out.append(static_cast<const char*>(t.data), t.nbytes());
    return out;
  });
  if (bytes.size() < 2 || static_cast<uint8_t>(bytes[0]) >= kDTypeCount || bytes.size() < 2 + 8 * size_t(uint8_t(bytes[1])))
    throw FormatError(e.path, e.object + ": its reader returned a malformed tensor");
  Tensor t;
  t.dtype = static_cast<DType>(bytes[0]);
  t.shape.resize(static_cast<uint8_t>(bytes[1]));
  std::memcpy(t.shape.data(), bytes.data() + 2, 8 * t.shape.size());
  const size_t header = 2 + 8 * t.shape.size();
  if (checked_bytes(shape_numel(t.shape), dtype_size(t.dtype)) != bytes.size() - header)
    throw FormatError(e.path, e.object + ": its reader returned a tensor of the wrong size");
  auto buffer = std::make_shared<HeapBuffer>(bytes.data() + header, bytes.size() - header);
  t.data = buffer->data();
  t.buffer = std::move(buffer);
  return t;
}

}  // namespace opdump
