// The Python module's native part: the lifecycle and scope API of libopdump_torch. It needs
// no torch headers: the observer lives in libopdump_torch, which this module links.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "api/host_ops.h"
#include "config/config.h"
#include "opdump/error.h"
#include "util/log.h"
#include "opdump/opdump.h"
#include "runtime/runtime_interface.h"
#include "load_mode.h"
#include "opdump/torch.h"
#include "observer.h"

namespace py = pybind11;

namespace {

// The counters of a dump: counters() returns them, finalize_dump() returns them with the writer's report.
py::dict counters_dict(const opdump::DumpCounters& c) {
  py::dict d;
  d["ops"] = c.ops;
  d["tensors"] = c.tensors;
  d["tensor_bytes"] = c.tensor_bytes;
  d["statistic_rows"] = c.stat_rows;
  d["statistic_bytes"] = c.stat_bytes;
  d["statistic_bytes_read"] = c.stat_bytes_read;
  d["overflow_checks"] = c.overflow_checks;
  d["overflow_bytes_read"] = c.overflow_bytes_read;
  d["overflow_bounded"] = c.overflow_bounded;
  d["overflow_bytes_copied"] = c.overflow_bytes_copied;
  return d;
}

py::dict report_dict(const opdump::WriterReport& r, const opdump::DumpCounters& c) {
  py::dict d;
  d["files_written"] = r.files_written;
  d["bytes_written"] = r.bytes_written;
  d["files_lost"] = r.files_lost;
  d["bytes_lost"] = r.bytes_lost;
  d["tasks_failed"] = r.tasks_failed;
  d["peak_inflight_bytes"] = r.peak_inflight_bytes;
  d["first_error"] = r.first_error;
  d["warnings"] = r.warnings;
  d["ok"] = r.ok();
  for (auto item : counters_dict(c)) d[item.first] = item.second;
  return d;
}

// The calling thread's Python stack (exception dumps, aic_err_detail_dump). Ops release the
// GIL while they run, so taking it here does not wait on this thread itself.
std::string python_stack() {
  if (!Py_IsInitialized()) return "";
  py::gil_scoped_acquire gil;
  try {
    py::object lines = py::module_::import("traceback").attr("format_stack")();
    std::string out;
    for (py::handle line : lines) out += line.cast<std::string>();
    return out;
  } catch (const py::error_already_set& e) {
    return std::string("(no Python stack: ") + e.what() + ")";
  }
}

// The folders of torch's and opdump's own Python files (set by the package, under the GIL): a
// source line is the user's, wherever the user's code lives, even in a folder named "opdump".
std::vector<std::string>& internal_folders() {
  static std::vector<std::string> folders;
  return folders;
}

bool internal_file(const std::string& file) {
  for (const std::string& folder : internal_folders())
    if (file.compare(0, folder.size(), folder) == 0) return true;
  return false;
}

// "file.py:line" of the innermost frame outside torch and opdump (the user's line that ran the op).
std::string python_location() {
  if (!Py_IsInitialized()) return "";
  py::gil_scoped_acquire gil;
  try {
    PyFrameObject* current = PyEval_GetFrame();  // borrowed; null on threads running no Python
    py::object frame = current ? py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(current)) : py::none();
    for (int depth = 0; !frame.is_none() && depth < 64; ++depth, frame = frame.attr("f_back")) {
      const std::string file = frame.attr("f_code").attr("co_filename").cast<std::string>();
      if (internal_file(file)) continue;
      return file + ":" + std::to_string(frame.attr("f_lineno").cast<int>());
    }
    return "";
  } catch (const py::error_already_set& e) {
    return "";
  }
}

}  // namespace

PYBIND11_MODULE(_opdump, m) {
  m.doc() = "opdump native module (see the opdump package for the documented API)";
  // The observer only: the package applies the environment itself (opdump/__init__.py), so that
  // compiled code is switched to eager before a dump starts.
  opdump::pt::detail::install_observer(opdump::runtime_interface());

  static py::exception<opdump::Error> error(m, "OpdumpError", PyExc_RuntimeError);
  static py::exception<opdump::ConfigError> config_error(m, "ConfigError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const opdump::ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());  // the same in every pybind11 version
    } catch (const opdump::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  opdump::RuntimeInterface& rt = opdump::runtime_interface();
  rt.set_python_hooks({&python_stack, &python_location});
  // Calls that may finalize a dump (set_dump replaces one) release the GIL: finalizing waits for
  // ops in flight on other threads, which may need it.
  m.def("init", [&rt](const std::string& path) { rt.init(path); }, py::arg("config_path") = "",
        py::call_guard<py::gil_scoped_release>());
  m.def("initialized", [&rt] { return rt.initialized(); });
  m.def("init_dump", [&rt] { rt.init_dump(); });
  m.def("set_dump", [&rt](const std::string& path) { rt.set_dump(path); }, py::arg("config_path"),
        py::call_guard<py::gil_scoped_release>());
  m.def("set_dump_text", [&rt](const std::string& text, const std::string& source) {
    rt.set_dump_config(opdump::parse_config(text, source));
  }, py::call_guard<py::gil_scoped_release>());
  m.def("finalize_dump", [&rt] {
    auto d = rt.dump_sink();
    opdump::WriterReport r;
    {
      py::gil_scoped_release release;
      r = rt.finalize_dump();
    }
    return report_dict(r, d ? d->counters() : opdump::DumpCounters{});
  });
  m.def("finalize", [&rt] {
    py::gil_scoped_release release;
    rt.finalize();
  });
  // The torch_npu 1.5 dumper: its rules (opdump/torch.h) and its load mode (src/torch/load_mode.h).
  m.def("plan_h5_dump", [](bool use_dump, bool use_load, bool check_overflow, const std::string& dump_path,
                           const std::string& load_file_path, bool load_with_acl_dump, bool check_fp16_range,
                           uint32_t overflow_number, const std::string& level) {
    opdump::pt::H5DumperOptions o;
    o.use_dump = use_dump;
    o.use_load = use_load;
    o.check_overflow = check_overflow;
    o.dump_path = dump_path;
    o.load_file_path = load_file_path;
    o.load_with_acl_dump = load_with_acl_dump;
    o.check_fp16_range = check_fp16_range;
    o.overflow_number = overflow_number;
    o.level = level;
    opdump::pt::H5DumpPlan plan;
    try {
      plan = opdump::pt::plan_h5_dump(o);
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
    py::dict d;
    d["h5_path"] = plan.h5_path;
    d["records_path"] = plan.records_path;
    d["config_json"] = plan.config_json;
    d["load_file"] = plan.load_file;
    d["acl_config"] = plan.acl_config;
    return d;
  });
  m.def("start_load", &opdump::pt::start_load, py::arg("load_file"), py::arg("out_file"), py::arg("acl_config") = "",
        py::call_guard<py::gil_scoped_release>());
  m.def("stop_load", [] {
    opdump::pt::LoadReport r;
    {
      py::gil_scoped_release release;
      r = opdump::pt::stop_load();
    }
    py::dict d;
    d["stored"] = r.stored;
    d["matched"] = r.matched;
    d["failed"] = r.failed;
    d["unmatched"] = r.unmatched;
    d["problems"] = r.problems;
    d["out_file"] = r.out_file;
    return d;
  });
  m.def("step", [&rt] { rt.step(); });
  m.def("set_paused", [&rt](bool paused) { rt.set_paused(paused); });
  // A record the front end names itself (msprobe's module records): each tensor as (address of
  // contiguous host memory the caller keeps alive for the call, numpy dtype name, shape).
  using HostTensorTuple = std::tuple<uintptr_t, std::string, std::vector<int64_t>>;
  m.def("dump_named_op", [](const std::string& op_type, const std::string& op_name, const std::vector<HostTensorTuple>& inputs,
                            const std::vector<HostTensorTuple>& outputs) {
    auto host = [](const std::vector<HostTensorTuple>& tuples) {
      std::vector<opdump::HostTensor> out;
      for (const auto& [address, dtype, shape] : tuples)
        out.push_back(opdump::HostTensor{dtype, shape, reinterpret_cast<const void*>(address)});
      return out;
    };
    opdump::dump_named_op(op_type, op_name, host(inputs), host(outputs));
  });
  m.def("check_config_text", [](const std::string& text, const std::string& source) { (void)opdump::parse_config(text, source); });
  // A config parsed by the core, for front ends that select steps and ranks themselves (msprobe's
  // layout written by its front door): the core's reading of "step" and "rank".
  py::class_<opdump::DumpConfig, std::shared_ptr<opdump::DumpConfig>>(m, "ParsedConfig")
      .def("selects", [](const opdump::DumpConfig& c, uint64_t step, uint32_t rank) {
        return c.enabled && c.rank_selected(rank) && c.iterations.contains(step);
      })
      .def("selects_from", [](const opdump::DumpConfig& c, uint64_t step) {
        return c.iterations.contains(step) || c.iterations.next_after(step) != UINT64_MAX;
      });
  m.def("parse_config_text", [](const std::string& text, const std::string& source) {
    return std::make_shared<opdump::DumpConfig>(opdump::parse_config(text, source));
  });
  // Whether the dump selects `iteration` or a later one (msprobe's front end finishes after the last).
  m.def("selected_from", [&rt](uint64_t iteration) {
    auto d = rt.dump_sink();
    if (!d) return false;
    const opdump::IterationSet& s = d->settings().iterations;
    return s.contains(iteration) || s.next_after(iteration) != UINT64_MAX;
  });
  m.def("iteration", [&rt] { return rt.iteration(); });
  m.def("dumping", [&rt] { return rt.dumping(); });
  m.def("dump_root", [&rt] {
    auto d = rt.dump_sink();
    return d ? d->run_root() : std::string();
  });
  m.def("counters", [&rt] {
    auto d = rt.dump_sink();
    return counters_dict(d ? d->counters() : opdump::DumpCounters{});
  });
  m.def("register_model", [&rt](const std::string& name) { return rt.register_model(name); });
  m.def("name_tensors", [&rt](std::vector<std::pair<uint64_t, std::string>> tensors) {
    rt.name_tensors(std::move(tensors));
  });
  m.def("set_rank", [&rt](uint32_t rank, uint32_t device) { rt.set_rank(rank, device); });
  // (config path, rank, device id) as the environment gives them; claim_environment: the first time only.
  auto settings = [](const opdump::EnvironmentSettings& e) { return py::make_tuple(e.config_path, e.rank, e.device_id); };
  m.def("environment", [settings] { return settings(opdump::read_environment()); });
  m.def("claim_environment", [&rt, settings]() -> py::object {
    auto e = rt.claim_environment();
    return e ? py::object(settings(*e)) : py::none();
  });
  m.def("rank", [&rt] { return rt.rank(); });
  m.def("push_scope", &opdump::scopes::push, py::arg("element"), py::arg("short_element") = "");
  m.def("pop_scope", &opdump::scopes::pop);
  m.def("scope_depth", &opdump::scopes::depth);
  m.def("truncate_scope", &opdump::scopes::truncate);
  m.def("scope_path", [] { return opdump::scopes::path(); });
  m.def("enter_model", &opdump::scopes::enter_model);
  m.def("exit_model", &opdump::scopes::exit_model);
  m.def("push_mark", &opdump::scopes::push_mark);
  m.def("pop_mark", &opdump::scopes::pop_mark);
  m.def("set_internal_folders", [](std::vector<std::string> folders) { internal_folders() = std::move(folders); });
  m.def("version", [] { return opdump::version(); });
  m.def("check_config", [](const std::string& path) { return opdump::describe_config(opdump::load_config(path)); });
}
