#include "dumper/dump_sink.h"

namespace opdump {

AdapterSettings AdapterSettings::of(const DumpConfig& config) {
  AdapterSettings s;
  s.level = config.level;
  s.scene = config.scene;
  s.host_work = config.host_work;
  s.iterations = config.iterations;
  s.tensors = config.dumps_tensors();
  s.statistics = config.dumps_statistics();
  s.bin_files = config.file_format == FileFormat::Bin;
  s.h5_file = config.file_format == FileFormat::H5;
  s.device_path_on_cpu = config.device_path_on_cpu;
  s.skip_no_compute_ops = config.skip_no_compute_ops;
  s.check_fp16_range = config.check_fp16_range;
  for (const auto& m : config.dump_list)
    if (!m.layers.empty()) s.watch_has_layers = true;
  return s;
}

}  // namespace opdump
