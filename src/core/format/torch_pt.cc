// torch.save files of one tensor (torch_pt.h).
#include "format/torch_pt.h"

#include <minizip/unzip.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "opdump/error.h"
#include "util/file_read.h"

namespace opdump {
namespace {

// ---- the zip, read from memory -------------------------------------------------------------

struct MemoryStream {
  const uint8_t* data;
  uint64_t size;
  uint64_t at = 0;
};

voidpf ZCALLBACK mem_open(voidpf, const void* stream, int) { return const_cast<void*>(stream); }
uLong ZCALLBACK mem_read(voidpf, voidpf s, void* buf, uLong n) {
  auto* m = static_cast<MemoryStream*>(s);
  const uint64_t take = std::min<uint64_t>(n, m->size - m->at);
  std::memcpy(buf, m->data + m->at, take);
  m->at += take;
  return static_cast<uLong>(take);
}
uLong ZCALLBACK mem_write(voidpf, voidpf, const void*, uLong) { return 0; }
ZPOS64_T ZCALLBACK mem_tell(voidpf, voidpf s) { return static_cast<MemoryStream*>(s)->at; }
long ZCALLBACK mem_seek(voidpf, voidpf s, ZPOS64_T offset, int origin) {
  auto* m = static_cast<MemoryStream*>(s);
  const uint64_t base = origin == ZLIB_FILEFUNC_SEEK_SET ? 0 : origin == ZLIB_FILEFUNC_SEEK_CUR ? m->at : m->size;
  if (offset > m->size || base > m->size - offset) return -1;
  m->at = base + offset;
  return 0;
}
int ZCALLBACK mem_close(voidpf, voidpf) { return 0; }
int ZCALLBACK mem_error(voidpf, voidpf) { return 0; }

// A record of the archive: where its bytes are (torch.save stores them uncompressed, aligned).
struct Record {
  uint64_t offset = 0, size = 0;
};

std::map<std::string, Record> zip_records(const Buffer& bytes, const std::string& name) {
  MemoryStream stream{static_cast<const uint8_t*>(bytes.data()), bytes.size()};
  zlib_filefunc64_def io{};
  io.zopen64_file = mem_open;
  io.zread_file = mem_read;
  io.zwrite_file = mem_write;
  io.ztell64_file = mem_tell;
  io.zseek64_file = mem_seek;
  io.zclose_file = mem_close;
  io.zerror_file = mem_error;
  unzFile zip = unzOpen2_64(&stream, &io);
  if (!zip) {
    if (bytes.size() >= 2 && static_cast<const uint8_t*>(bytes.data())[0] == 0x80)
      throw FormatError(name, "a torch.save file in the legacy format (before PyTorch 1.6): save it again with a newer "
                              "PyTorch, or convert it to npy with the opdump Python module");
    throw FormatError(name, "not a torch.save file (no zip archive)");
  }
  std::map<std::string, Record> records;
  std::string error;
  for (int rc = unzGoToFirstFile(zip); rc == UNZ_OK && error.empty(); rc = unzGoToNextFile(zip)) {
    unz_file_info64 info;
    char entry[1024];
    if (unzGetCurrentFileInfo64(zip, &info, entry, sizeof(entry), nullptr, 0, nullptr, 0) != UNZ_OK ||
        info.size_filename >= sizeof(entry)) {
      error = "a damaged zip directory";
      break;
    }
    if (info.compression_method != 0) {
      error = std::string("record ") + entry + " is compressed (torch.save stores its records uncompressed)";
      break;
    }
    if (unzOpenCurrentFile(zip) != UNZ_OK) {
      error = std::string("record ") + entry + " cannot be opened";
      break;
    }
    const uint64_t at = unzGetCurrentFileZStreamPos64(zip);
    unzCloseCurrentFile(zip);
    if (at > bytes.size() || info.uncompressed_size > bytes.size() - at) {
      error = std::string("record ") + entry + " runs past the end of the file (truncated?)";
      break;
    }
    records[entry] = Record{at, info.uncompressed_size};
  }
  unzClose(zip);
  if (!error.empty()) throw FormatError(name, error);
  return records;
}

// ---- the pickle ------------------------------------------------------------------------------

// What torch.save's pickle of a tensor is built from.
struct Value {
  enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor } kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  std::string s;              // Str; Global: "module.name"; Storage: its record key
  std::vector<Value> items;   // Tuple, List
  uint32_t depth = 1;         // levels of nesting, this value included
  uint64_t nodes = 1;         // values in this tree, this one included
  DType dtype = DType::Float32;  // Storage, Tensor
  uint64_t numel = 0;         // Storage
  // Tensor: its storage's key and numel, offset, sizes and strides in elements
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

using Kind = Value::Kind;

std::optional<DType> storage_dtype(std::string_view cls) {
  static const std::pair<std::string_view, DType> table[] = {
      {"torch.FloatStorage", DType::Float32},     {"torch.DoubleStorage", DType::Float64},
      {"torch.HalfStorage", DType::Float16},      {"torch.BFloat16Storage", DType::BFloat16},
      {"torch.LongStorage", DType::Int64},        {"torch.IntStorage", DType::Int32},
      {"torch.ShortStorage", DType::Int16},       {"torch.CharStorage", DType::Int8},
      {"torch.ByteStorage", DType::UInt8},        {"torch.BoolStorage", DType::Bool},
      {"torch.ComplexFloatStorage", DType::Complex64}, {"torch.ComplexDoubleStorage", DType::Complex128},
  };
  for (const auto& [n, t] : table)
    if (cls == n) return t;
  return std::nullopt;
}

class Unpickler {
 public:
  Unpickler(const uint8_t* p, size_t n, const std::string& name) : p_(p), end_(p + n), name_(name) {}

  Value run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                            // PROTO
        case 0x95: bytes(8); break;                          // FRAME
        case '.': return pop();                              // STOP
        case '(':                                            // MARK
          if (marks_.size() >= kMaxMarks) fail("more than " + std::to_string(kMaxMarks) + " open marks");
          marks_.push_back(stack_.size());
          break;
        case 'N': push(Value{}); break;
        case 0x88: case 0x89: {                              // NEWTRUE, NEWFALSE
          Value v;
          v.kind = Kind::Bool;
          v.i = op == 0x88;
          push(std::move(v));
          break;
        }
        case 'K': push(integer(byte())); break;             // BININT1
        case 'M': push(integer(uint16())); break;           // BININT2
        case 'J': push(integer(static_cast<int32_t>(uint32()))); break;  // BININT
        case 0x8a: {                                         // LONG1
          const uint8_t n = byte();
          if (n > 8) fail("an integer of more than 64 bits");
          const uint8_t* b = bytes(n);
          uint64_t u = 0;
          for (int k = n - 1; k >= 0; --k) u = (u << 8) | b[k];
          if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t(0) << (8 * n);  // sign-extend
          push(integer(static_cast<int64_t>(u)));
          break;
        }
        case 'G': {                                          // BINFLOAT (big-endian double)
          const uint8_t* b = bytes(8);
          uint64_t u = 0;
          for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
          Value v;
          v.kind = Kind::Float;
          std::memcpy(&v.f, &u, 8);
          push(std::move(v));
          break;
        }
        case 'X': push(string(uint32())); break;            // BINUNICODE
        case 0x8c: push(string(byte())); break;             // SHORT_BINUNICODE
        case 'c': {                                          // GLOBAL "module\nname\n"
          Value v;
          v.kind = Kind::Global;
          v.s = line();  // the module, then the name: two statements, in that order
          v.s += "." + line();
          push(std::move(v));
          break;
        }
        case 0x93: {                                         // STACK_GLOBAL
          Value name = pop(), module = pop();
          if (name.kind != Kind::Str || module.kind != Kind::Str) fail("a global named by a non-string");
          Value v;
          v.kind = Kind::Global;
          v.s = module.s + "." + name.s;
          push(std::move(v));
          break;
        }
        case ')': push(sequence(Kind::Tuple, {})); break;   // EMPTY_TUPLE
        case ']': push(sequence(Kind::List, {})); break;    // EMPTY_LIST
        case '}': {                                          // EMPTY_DICT
          Value v;
          v.kind = Kind::Dict;
          push(std::move(v));
          break;
        }
        case 0x85: case 0x86: case 0x87: {                   // TUPLE1..3
          const size_t n = op - 0x84u;
          if (stack_.size() < base() + n) fail("a tuple of missing items");
          std::vector<Value> items(std::make_move_iterator(stack_.end() - n), std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
          push(sequence(Kind::Tuple, std::move(items)));
          break;
        }
        case 't': push(sequence(Kind::Tuple, pop_mark())); break;  // TUPLE
        case 'l': push(sequence(Kind::List, pop_mark())); break;   // LIST
        case 'a': {                                          // APPEND
          Value item = pop();
          Value& list = top(Kind::List);
          adopt(list, item);
          list.items.push_back(std::move(item));
          break;
        }
        case 'e': {                                          // APPENDS
          auto items = pop_mark();
          Value& list = top(Kind::List);
          for (auto& x : items) {
            adopt(list, x);
            list.items.push_back(std::move(x));
          }
          break;
        }
        case 's': pop(); pop(); top(Kind::Dict); break;      // SETITEM: dict contents are never used
        case 'u': pop_mark(); top(Kind::Dict); break;        // SETITEMS
        case 'b': pop(); break;                              // BUILD: state of a rebuilt object, unused
        case 'q': memo(byte()); break;                       // BINPUT
        case 'r': memo(uint32()); break;                     // LONG_BINPUT
        case 0x94: memo(static_cast<uint32_t>(memo_.size())); break;  // MEMOIZE
        case 'h': push(recall(byte())); break;               // BINGET
        case 'j': push(recall(uint32())); break;             // LONG_BINGET
        case 'Q': push(persistent(pop())); break;            // BINPERSID
        case 'R': {                                          // REDUCE
          Value args = pop(), callable = pop();
          push(reduce(callable, args));
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "0x%02x", op);
          fail(std::string("pickle opcode ") + hex + " is not one torch.save writes for a tensor");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw FormatError(name_, "data.pkl: " + why); }

  const uint8_t* bytes(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) fail("ends early");
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  uint8_t byte() { return *bytes(1); }
  uint16_t uint16() {
    const uint8_t* b = bytes(2);
    return static_cast<uint16_t>(b[0] | b[1] << 8);
  }
  uint32_t uint32() {
    const uint8_t* b = bytes(4);
    return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
  std::string line() {
    const uint8_t* start = p_;
    while (p_ < end_ && *p_ != '\n') ++p_;
    if (p_ == end_) fail("ends inside a global's name");
    return std::string(reinterpret_cast<const char*>(start), static_cast<size_t>(p_++ - start));
  }
  static Value integer(int64_t i) {
    Value v;
    v.kind = Kind::Int;
    v.i = i;
    return v;
  }
  Value string(size_t n) {
    Value v;
    v.kind = Kind::Str;
    v.s.assign(reinterpret_cast<const char*>(bytes(n)), n);
    return v;
  }
  Value sequence(Kind kind, std::vector<Value> items) {
    Value v;
    v.kind = kind;
    v.items = std::move(items);
    for (const Value& x : v.items) adopt(v, x);
    return v;
  }
  // `parent` gains `child`: nesting and size are bounded (a tensor's pickle is a few levels of
  // small tuples; a hostile one nests a level per byte, and freeing it would recurse as deep).
  void adopt(Value& parent, const Value& child) {
    parent.depth = std::max(parent.depth, child.depth + 1);
    parent.nodes += child.nodes;
    if (parent.depth > kMaxDepth) fail("nests containers more than " + std::to_string(kMaxDepth) + " deep");
  }
  // Every value made counts against one budget, recalled copies included: memo recalls of
  // ever larger values cannot double the work and memory per byte of input.
  void spend(uint64_t nodes) {
    if (nodes > budget_) fail("builds more than " + std::to_string(kMaxNodes) + " values");
    budget_ -= nodes;
  }
  static constexpr uint32_t kMaxDepth = 64;
  static constexpr uint64_t kMaxNodes = uint64_t(1) << 20;
  static constexpr size_t kMaxMarks = 4096;
  uint64_t budget_ = kMaxNodes;

  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Value v) {
    if (stack_.size() > 100000) fail("too deep");
    spend(1);
    stack_.push_back(std::move(v));
  }
  Value pop() {
    if (stack_.size() <= base()) fail("pops an empty stack");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value& top(Kind kind) {
    if (stack_.size() <= base() || stack_.back().kind != kind) fail("a container operation on the wrong object");
    return stack_.back();
  }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) fail("a mark is missing");
    const size_t at = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<long>(at)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(at);
    return items;
  }
  void memo(uint32_t key) {
    if (stack_.size() <= base()) fail("memoizes an empty stack");
    if (memo_.size() > 100000) fail("too many memo entries");
    spend(stack_.back().nodes);  // stored as a copy
    memo_[key] = stack_.back();
  }
  Value recall(uint32_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("recalls a value never stored");
    spend(it->second.nodes);  // a copy: it costs what it holds
    return it->second;
  }

  // ('storage', torch.FloatStorage, key, location, numel)
  Value persistent(const Value& id) {
    if (id.kind != Kind::Tuple || id.items.size() < 5 || id.items[0].kind != Kind::Str || id.items[0].s != "storage")
      fail("a persistent object that is not a storage");
    const Value& cls = id.items[1];
    const Value& key = id.items[2];
    const Value& numel = id.items[4];
    if (cls.kind != Kind::Global || key.kind != Kind::Str || numel.kind != Kind::Int || numel.i < 0)
      fail("a malformed storage reference");
    auto dtype = storage_dtype(cls.s);
    if (!dtype) fail("storage type " + cls.s + " is not supported");
    Value v;
    v.kind = Kind::Storage;
    v.s = key.s;
    v.dtype = *dtype;
    v.numel = static_cast<uint64_t>(numel.i);
    return v;
  }

  static bool int_tuple(const Value& v, std::vector<int64_t>* out) {
    if (v.kind != Kind::Tuple) return false;
    out->clear();
    for (const auto& x : v.items) {
      if (x.kind != Kind::Int) return false;
      out->push_back(x.i);
    }
    return true;
  }

  // Only the callables torch.save uses for a tensor are run, and only to build a Value.
  Value reduce(const Value& callable, const Value& args) {
    if (callable.kind != Kind::Global || args.kind != Kind::Tuple) fail("a call of something that is not a global");
    const auto& a = args.items;
    if (callable.s == "collections.OrderedDict") {
      Value v;
      v.kind = Kind::Dict;
      return v;
    }
    if (callable.s == "torch._utils._rebuild_tensor_v2") {
      Value v;
      if (a.size() < 4 || a[0].kind != Kind::Storage || a[1].kind != Kind::Int || !int_tuple(a[2], &v.sizes) ||
          !int_tuple(a[3], &v.strides) || v.sizes.size() != v.strides.size())
        fail("_rebuild_tensor_v2 with malformed arguments");
      v.kind = Kind::Tensor;
      v.s = a[0].s;
      v.dtype = a[0].dtype;
      v.numel = a[0].numel;
      v.offset = a[1].i;
      return v;
    }
    if (callable.s == "torch._utils._rebuild_parameter" || callable.s == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0].kind != Kind::Tensor) fail("a Parameter without a tensor");
      return a[0];
    }
    fail("refuses to call " + callable.s + " (only tensors are read from .pt files)");
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const std::string& name_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::map<uint32_t, Value> memo_;
};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::Str: return "a string";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "a class or function";
    case Kind::Storage: return "a storage";
    case Kind::Tensor: return "a tensor";
  }
  return "an object";
}

}  // namespace

Tensor parse_torch_pt(std::shared_ptr<const Buffer> bytes, const std::string& name) {
  const auto records = zip_records(*bytes, name);
  std::string prefix;
  const Record* pickle = nullptr;
  for (const auto& [entry, record] : records) {
    const std::string_view e = entry;
    if (e == "data.pkl" || (e.size() > 9 && e.substr(e.size() - 9) == "/data.pkl" &&
                            e.find('/') == e.size() - 9)) {
      prefix = entry.substr(0, entry.size() - 8);
      pickle = &record;
      break;
    }
  }
  if (!pickle) throw FormatError(name, "not a torch.save file (no data.pkl in the archive)");
  const auto* base = static_cast<const uint8_t*>(bytes->data());
  if (auto order = records.find(prefix + "byteorder"); order != records.end()) {
    const std::string_view text(reinterpret_cast<const char*>(base + order->second.offset), order->second.size);
    if (text != "little") throw FormatError(name, "saved on a " + std::string(text) + "-endian machine: not supported");
  }
  const Value v = Unpickler(base + pickle->offset, pickle->size, name).run();
  if (v.kind != Kind::Tensor)
    throw FormatError(name, std::string("holds ") + kind_name(v.kind) + ", not one tensor");

  auto data = records.find(prefix + "data/" + v.s);
  if (data == records.end()) throw FormatError(name, "the record of storage " + v.s + " is missing");
  const size_t item = dtype_size(v.dtype);
  if (v.numel > data->second.size / item)
    throw FormatError(name, "storage " + v.s + " holds " + std::to_string(data->second.size) + " bytes, less than its " +
                                std::to_string(v.numel) + " elements");
  Tensor t;
  t.dtype = v.dtype;
  t.shape = v.sizes;
  uint64_t numel;
  try {
    numel = shape_numel(t.shape);
  } catch (const Error& e) {  // negative sizes, overflow: named with the file
    throw FormatError(name, e.what());
  }
  // The elements the view reaches must lie inside the storage.
  bool contiguous = true;
  uint64_t last = static_cast<uint64_t>(v.offset), expect = 1;
  if (v.offset < 0) throw FormatError(name, "a negative storage offset");
  for (size_t d = v.sizes.size(); d-- > 0;) {
    if (v.strides[d] < 0) throw FormatError(name, "a negative stride");
    if (v.sizes[d] > 1) {
      const uint64_t reach = static_cast<uint64_t>(v.sizes[d] - 1);
      if (v.strides[d] != 0 && reach > (UINT64_MAX - last) / static_cast<uint64_t>(v.strides[d]))
        throw FormatError(name, "strides that overflow");
      last += reach * static_cast<uint64_t>(v.strides[d]);
      if (static_cast<uint64_t>(v.strides[d]) != expect) contiguous = false;
    }
    expect *= static_cast<uint64_t>(std::max<int64_t>(v.sizes[d], 1));
  }
  if (numel > 0 && last >= v.numel)
    throw FormatError(name, "the tensor reaches past the end of its storage (" + std::to_string(v.numel) + " elements)");
  const uint8_t* storage = base + data->second.offset;
  const uint8_t* first = storage + static_cast<uint64_t>(v.offset) * item;
  if (contiguous && reinterpret_cast<uintptr_t>(first) % item == 0) {  // torch.save aligns records to 64 bytes
    t.data = first;
    t.buffer = std::make_shared<ViewBuffer>(bytes, t.data, numel * item);  // within the storage: no overflow
    return t;
  }
  // A view (a slice of a bigger tensor saved as is), or a record another writer left unaligned:
  // copied out in row-major order. A stride-0 view of one element may claim any size: the
  // product is checked, and so is the memory it would take.
  uint64_t view_bytes;
  try {
    view_bytes = checked_bytes(numel, item);
  } catch (const Error& e) {
    throw FormatError(name, e.what());
  }
  check_allocation(view_bytes, name, "the tensor's view of its storage");
  auto out = std::make_shared<HeapBuffer>(static_cast<size_t>(view_bytes));
  std::vector<int64_t> index(v.sizes.size(), 0);
  for (uint64_t k = 0; k < numel; ++k) {
    uint64_t at = static_cast<uint64_t>(v.offset);
    for (size_t d = 0; d < index.size(); ++d) at += static_cast<uint64_t>(index[d] * v.strides[d]);
    std::memcpy(out->mutable_data() + k * item, storage + at * item, item);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < v.sizes[d]) break;
      index[d] = 0;
    }
  }
  t.data = out->data();
  t.buffer = std::move(out);
  return t;
}

namespace detail {
std::string unpickle_kind(const void* pickle, size_t size, const std::string& name) {
  return kind_name(Unpickler(static_cast<const uint8_t*>(pickle), size, name).run().kind);
}
}  // namespace detail

Tensor read_torch_pt(const std::string& path) { return parse_torch_pt(std::make_shared<MappedFile>(path), path); }

}  // namespace opdump
