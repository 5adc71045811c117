// The two kinds of slot (dump_tensor.h).
#include "dumper/dump_tensor.h"

#include <utility>

namespace opdump {

DumpTensor data_tensor(TensorView view, std::shared_ptr<const Buffer> owner) {
  DumpTensor t;
  t.view = std::move(view);
  t.owner = std::move(owner);
  return t;
}

DumpTensor placeholder_tensor(std::string why, bool data_lost) {
  DumpTensor t = data_tensor(TensorView{nullptr, DType::Float32, {0}}, nullptr);
  t.placeholder = std::move(why);
  t.data_lost = data_lost;
  return t;
}

}  // namespace opdump
