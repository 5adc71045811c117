// opdump convert SRC -o OUT [--to npy|txt]
//   bin  -> one npy per input/output: {bin name}.{input|output}.{i}.{dims}.npy (the MindSpore Dump guide)
//   h5   -> one npy per dataset: {stem}/{op}/{seqid}/{input|output}/{argument}.npy
//   npy  -> txt: the flattened values, one per line, as numpy.savetxt writes them (the torch_npu
//                accuracy comparison guide)
#include <fmt/format.h>

#include <complex>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "export/msprobe_layout.h"
#include "format/statistic_csv.h"
#include "read/dump_index.h"
#include "compare/metrics.h"  // widen_values
#include "format/dump_files.h"
#include "format/ascend_bin.h"
#include "format/device_format.h"
#include "opdump/error.h"
#include "layout/layout.h"
#include "format/npy.h"
#include "format/torch_pt.h"
#include "format/h5_file.h"
#include "util/progress.h"
#include "writer/atomic_file.h"

namespace opdump::cli {
namespace {

// One value per line with numpy.savetxt's default "%.18e" (complex: "(re+imj)"), widened to float64
// a block at a time as compare widens them.
void write_txt(const Tensor& t, const std::string& path) {
  AtomicFileWriter out(path);
  fmt::memory_buffer buf;
  const bool complex = t.dtype == DType::Complex64 || t.dtype == DType::Complex128;
  const size_t per_element = complex ? 2 : 1;
  const size_t scalars = static_cast<size_t>(t.numel()) * per_element;
  std::vector<double> block(4096 * per_element);
  for (size_t begin = 0; begin < scalars; begin += block.size()) {
    const size_t n = std::min(block.size(), scalars - begin);
    widen_values(t.view(), begin, n, block.data());
    for (size_t i = 0; i < n; i += per_element) {
      if (complex) fmt::format_to(std::back_inserter(buf), "({:.18e}{:+.18e}j)\n", block[i], block[i + 1]);
      else fmt::format_to(std::back_inserter(buf), "{:.18e}\n", block[i]);
    }
    if (buf.size() > (1u << 20)) {
      out.write(buf.data(), buf.size());
      buf.clear();
    }
  }
  out.write(buf.data(), buf.size());
  out.commit();
}

std::string out_folder_for(const std::string& out_root, const DumpFile& f) {
  const size_t slash = f.relative.find_last_of('/');
  const std::string sub = slash == std::string::npos ? "" : f.relative.substr(0, slash);
  std::string dir = sub.empty() ? out_root : out_root + "/" + sub;
  make_dirs(dir);
  return dir;
}

struct Counts {
  int converted = 0, failed = 0;
};

struct ConvertOptions {
  std::string to;
  bool host_format = false;  // -f NCHW: device formats to NCHW / ND
  Shape shape;               // --shape: the logical shape when the header has none
};

void convert_bin(const DumpFile& f, const std::string& out_root, const ConvertOptions& o, OriginalNames& names,
                 Counts& counts) {
  BinDump dump = read_ascend_bin(f.path);
  const std::string dir = out_folder_for(out_root, f);
  const std::string base = base_name(f.path);
  const std::string original = names.of(f.path);  // differs when the dump shortened a long name
  for (int pass = 0; pass < 2; ++pass) {
    const auto& list = pass == 0 ? dump.inputs : dump.outputs;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string what = std::string(pass == 0 ? "input" : "output") + "." + std::to_string(i);
      try {
        Tensor t = dump.tensor(list[i]);
        if (o.host_format && list[i].format != 0 && list[i].format != 2) {
          const Shape& logical = !list[i].original_shape.empty() ? list[i].original_shape : o.shape;
          if (logical.empty())
            throw FormatError(f.path, what + " is in " + bin_format_name(list[i].format) +
                                          " and the header has no original shape: give --shape");
          t = to_host_format(t, list[i].format, logical, f.path + " " + what);
        }
        const std::string suffix = "." + what + "." + shape_to_dims(t.shape) + (o.to == "txt" ? ".txt" : ".npy");
        if (o.to == "txt") write_txt(t, dir + "/" + base + suffix);
        else write_npy(dir + "/" + base + suffix, t.view());
        if (original != base)  // readers find the op's name through the folder's mapping.csv, as in the dump
          append_to_file(dir + "/mapping.csv", csv_escape(base + suffix) + "," + csv_escape(original + suffix) + "\n");
        ++counts.converted;
      } catch (const Error& e) {
        std::fprintf(stderr, "opdump: %s %s: %s\n", f.path.c_str(), what.c_str(), e.what());
        ++counts.failed;
      } catch (const std::exception& e) {  // out of memory, say: this tensor fails, the others go on
        std::fprintf(stderr, "opdump: %s %s: %s\n", f.path.c_str(), what.c_str(), e.what());
        ++counts.failed;
      }
    }
  }
}

void convert_npy(const DumpFile& f, const std::string& out_root, Counts& counts) {
  Tensor t = read_npy(f.path);
  std::string name = base_name(f.path);
  name = name.substr(0, name.size() - 4) + ".txt";
  write_txt(t, out_folder_for(out_root, f) + "/" + name);
  ++counts.converted;
}

// msprobe's torch.save tensors: .pt -> npy (or txt), same name.
void convert_pt(const DumpFile& f, const std::string& out_root, const std::string& to, Counts& counts) {
  Tensor t = read_torch_pt(f.path);
  std::string name = base_name(f.path);
  name = name.substr(0, name.size() - 3) + (to == "txt" ? ".txt" : ".npy");
  const std::string path = out_folder_for(out_root, f) + "/" + name;
  if (to == "txt") write_txt(t, path);
  else write_npy(path, t.view());
  ++counts.converted;
}

// An .h5 dump (the torch_npu 1.5 dumper's): one npy (or txt) per dataset that holds numbers, at
// {out}/{file stem}/{dataset path}.npy; strings and None arguments have no array to write.
void convert_h5_in_process(const DumpFile& f, const std::string& out_root, const std::string& to, Counts& counts) {
  const h5::Reader file(f.path);
  std::string stem = base_name(f.path);
  stem = stem.substr(0, stem.size() - 3);
  const std::string root = out_folder_for(out_root, f) + "/" + stem;
  std::vector<std::pair<std::string, int>> groups = {{"/", 0}};
  while (!groups.empty()) {
    const auto [group, depth] = groups.back();
    groups.pop_back();
    if (depth > 32) throw FormatError(f.path, group + ": groups nested deeper than 32");
    const std::vector<std::string> members = file.members(group);
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      const std::string object = (group == "/" ? "" : group) + "/" + *it;
      if (file.is_group(object)) {
        groups.emplace_back(object, depth + 1);
        continue;
      }
      if (!file.is_dataset(object)) continue;
      const h5::DatasetInfo info = file.info(object);
      if (!info.dtype || info.null) continue;  // a string, None, or a type without an array form
      try {
        const Tensor t = file.tensor(object);
        const std::string path = root + object + (to == "txt" ? ".txt" : ".npy");
        make_dirs(path.substr(0, path.find_last_of('/')));
        if (to == "txt") write_txt(t, path);
        else write_npy(path, t.view());
        ++counts.converted;
      } catch (const Error& e) {
        std::fprintf(stderr, "opdump: %s\n", e.what());
        ++counts.failed;
      }
    }
  }
}

// HDF5's library reads the file in a child process (h5::isolated): a hostile file ends the child.
void convert_h5(const DumpFile& f, const std::string& out_root, const std::string& to, Counts& counts) {
  const std::string result = h5::isolated(f.path, [&] {
    Counts c;
    convert_h5_in_process(f, out_root, to, c);
    return std::to_string(c.converted) + " " + std::to_string(c.failed);
  });
  int converted = 0, failed = 0;
  if (std::sscanf(result.c_str(), "%d %d", &converted, &failed) != 2)
    throw FormatError(f.path, "its converter returned no counts");
  counts.converted += converted;
  counts.failed += failed;
}

uint64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

// Every tensor the dump holds, in msprobe's layout (export/msprobe_layout.h).
int convert_to_msprobe(const std::string& src, const std::string& out, bool quiet) {
  const DumpIndex index = index_dump(src);
  for (const std::string& w : index.warnings) std::fprintf(stderr, "opdump: warning: %s\n", w.c_str());
  if (index.entries.empty()) {
    std::fprintf(stderr, "opdump: nothing to convert in %s (no tensors or statistics)\n", src.c_str());
    return kExitFailure;
  }
  Progress progress("convert: tensors", index.entries.size(), 0, Progress::for_terminal(quiet));
  const MsprobeExport e = export_msprobe_layout(index, out, &progress);
  progress.finish();
  for (const std::string& w : e.warnings) std::fprintf(stderr, "opdump: warning: %s\n", w.c_str());
  std::printf("wrote %zu call(s), %zu tensor(s) in msprobe's layout (step{N}/rank{R}/dump.json) into %s: %zu folder(s)\n",
              e.calls, e.tensors, out.c_str(), e.folders);
  if (e.statistics_computed)
    std::printf("  statistics of %zu tensor(s) computed from their values; the values stay in %s (msprobe's statistics task)\n",
                e.statistics_computed, src.c_str());
  if (e.without_statistics)
    std::fprintf(stderr, "opdump: warning: %zu tensor(s) have no statistics (their dump has neither values nor Max/Min/Mean/Norm)\n",
                 e.without_statistics);
  return kExitOk;
}

// The outermost folder of `path` that does not exist yet (what make_dirs(path) creates first); empty when
// `path` exists.
std::filesystem::path first_missing_folder(const std::string& path) {
  std::filesystem::path folder = std::filesystem::absolute(path).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();  // "out/"
  if (std::filesystem::exists(folder)) return {};
  while (folder.has_parent_path() && folder.parent_path() != folder && !std::filesystem::exists(folder.parent_path()))
    folder = folder.parent_path();
  return folder;
}

}  // namespace

// The options of this subcommand, one value per command (CLI11's subcommands-in-files shape).
struct ConvertCommandOptions {
  std::string src, out, to, format, shape_text;
  bool quiet = false;
};

void add_convert_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<ConvertCommandOptions>();  // owned by the callback (CLI11 keeps it alive)
  auto* cmd = app.add_subcommand(
      "convert", "Convert dump files: Ascend bin -> one npy per input/output; .h5 (torch_npu dumper) -> one npy per dataset; torch.save .pt (msprobe) -> npy; npy -> txt (one value per line); any dump -> msprobe's layout (--to msprobe)");
  cmd->add_option("SRC", opt->src, "A dump file or a folder of them")->required();
  cmd->add_option("-o,--output", opt->out, "Folder for the converted files (created)")->required();
  cmd->add_option("--to", opt->to,
                  "Target format: npy (default for bin files), txt (default for npy files), or msprobe: the whole dump as "
                  "msprobe's step{N}/rank{R}/dump.json, construct.json and stack.json (statistics), for msprobe's compare")
      ->check(CLI::IsMember({"npy", "txt", "msprobe"}));
  cmd->add_option("-f,--format", opt->format, "Convert device formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NHWC, HWCN) to NCHW/ND")
      ->check(CLI::IsMember({"NCHW", "ND"}));
  cmd->add_option("--shape", opt->shape_text, "Logical shape (e.g. 32,256,13,13) for tensors whose header has none");
  cmd->add_flag("-q,--quiet", opt->quiet, "No progress on stderr (shown only when stderr is a terminal)");
  cmd->callback([opt, exit_code] {
    if (opt->to == "msprobe") {
      if (!opt->format.empty() || !opt->shape_text.empty())
        throw Error("--to msprobe: -f/--format and --shape apply to bin files converted one by one, not to a whole dump");
      *exit_code = convert_to_msprobe(opt->src, opt->out, opt->quiet);
      return;
    }
    ConvertOptions o;
    o.to = opt->to.empty() ? "npy" : opt->to;
    o.host_format = !opt->format.empty();
    if (!opt->shape_text.empty()) {
      size_t start = 0;
      while (start <= opt->shape_text.size()) {
        size_t comma = opt->shape_text.find(',', start);
        if (comma == std::string::npos) comma = opt->shape_text.size();
        const std::string d = opt->shape_text.substr(start, comma - start);
        if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos)
          throw Error("--shape: \"" + opt->shape_text + "\" is not a list of dimensions like 32,256,13,13");
        o.shape.push_back(std::stoll(d));
        start = comma + 1;
      }
    }
    std::vector<DumpFile> files = scan_dump(opt->src);
    // A single file that is neither bin nor npy: say why it is not a bin file.
    if (files.size() == 1 && files[0].relative.empty() && files[0].kind == DumpFileKind::Other) read_ascend_bin(opt->src);
    const std::filesystem::path created = first_missing_folder(opt->out);  // removed again if nothing is converted
    make_dirs(opt->out);
    Counts counts;
    OriginalNames names;
    uint64_t total_bytes = 0;
    for (const auto& f : files) total_bytes += file_size_or_zero(f.path);
    Progress progress("convert: files", files.size(), total_bytes, Progress::for_terminal(opt->quiet));
    for (const auto& f : files) {
      struct Advance {  // also when the file fails
        Progress& p;
        uint64_t bytes;
        ~Advance() { p.advance(1, bytes); }
      } advance{progress, file_size_or_zero(f.path)};
      try {
        if (f.kind == DumpFileKind::Bin) convert_bin(f, opt->out, o, names, counts);
        else if (f.kind == DumpFileKind::Npy && opt->to != "npy") convert_npy(f, opt->out, counts);
        else if (f.kind == DumpFileKind::Pt) convert_pt(f, opt->out, o.to, counts);
        else if (f.kind == DumpFileKind::H5) convert_h5(f, opt->out, o.to, counts);
      } catch (const Error& e) {
        std::fprintf(stderr, "opdump: %s\n", e.what());
        ++counts.failed;
      } catch (const std::exception& e) {  // out of memory, say: this file fails, the others go on
        std::fprintf(stderr, "opdump: %s: %s\n", f.path.c_str(), e.what());
        ++counts.failed;
      }
    }
    progress.finish();
    if (counts.converted > 0)
      std::printf("converted %d tensor(s) into %s; %d failed\n", counts.converted, opt->out.c_str(), counts.failed);
    else
      std::printf("converted no tensors (%d failed): nothing written to %s\n", counts.failed, opt->out.c_str());
    if (counts.converted == 0 && counts.failed == 0)
      std::fprintf(stderr, "opdump: nothing to convert in %s (no bin, h5, pt or npy files)\n", opt->src.c_str());
    *exit_code = counts.failed || counts.converted == 0 ? kExitFailure : kExitOk;
    if (counts.converted == 0 && !created.empty()) {  // no empty folder left behind (what --to msprobe does too)
      std::error_code ignored;
      std::filesystem::remove_all(created, ignored);
    }
  });
}

}  // namespace opdump::cli
