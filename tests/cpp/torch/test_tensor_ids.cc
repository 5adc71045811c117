// Tensor ids of the execution order (src/torch/tensor_ids.h): one id per storage, cached per
// thread, and never the id of a storage that died for one made anew at its address.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

#include "runtime/runtime.h"
#include "tensor_ids.h"

using namespace opdump::pt::detail;

namespace {
uint64_t id_of(TensorIds& ids, const at::Tensor& t) {
  thread_local TensorIds::ThreadCache cache;  // as each thread's observer state holds one
  TensorIds::List out;
  ids.ids({t}, cache, out);
  return out.at(0);
}
}  // namespace

TEST(TensorIds, OneIdPerStorageOnEveryThread) {
  opdump::Runtime runtime;
  TensorIds ids(runtime);
  const at::Tensor a = torch::ones({4}), b = torch::ones({4});
  const uint64_t id_a = id_of(ids, a);
  EXPECT_NE(id_a, TensorIds::kNone);
  EXPECT_EQ(id_of(ids, a), id_a);               // (now from this thread's cache)
  EXPECT_EQ(id_of(ids, a.view({2, 2})), id_a);  // a view shares its storage's id
  EXPECT_NE(id_of(ids, b), id_a);
  uint64_t there = 0;
  std::thread([&] { there = id_of(ids, a); }).join();
  EXPECT_EQ(there, id_a);
  EXPECT_EQ(id_of(ids, at::Tensor()), TensorIds::kNone);
}

// Pruning dead storages from the middle of the table (each erase moves the entries after it back)
// keeps every live storage's id.
TEST(TensorIds, PruningKeepsTheIdsOfLiveStorages) {
  opdump::Runtime runtime;
  TensorIds ids(runtime);
  std::vector<at::Tensor> kept;
  std::vector<uint64_t> kept_ids;
  {
    std::vector<at::Tensor> dying;
    for (int i = 0; i < 2000; ++i) {
      at::Tensor t = torch::ones({2});
      const uint64_t id = id_of(ids, t);
      if ((i / 3 + i % 5) % 2) {
        kept.push_back(t);
        kept_ids.push_back(id);
      } else {
        dying.push_back(t);
      }
    }
  }
  ids.prune();  // (a new generation: the ids below come from the table, not this thread's cache)
  for (size_t k = 0; k < kept.size(); ++k) EXPECT_EQ(id_of(ids, kept[k]), kept_ids[k]) << k;
}

TEST(TensorIds, AStorageMadeWhereAPrunedOneWasGetsANewId) {
  opdump::Runtime runtime;
  TensorIds ids(runtime);
  const void* address;
  uint64_t old_id;
  {
    const at::Tensor t = torch::ones({8});
    address = t.storage().unsafeGetStorageImpl();
    old_id = id_of(ids, t);
  }
  ids.prune();  // the dead storage's entry goes (and its address may be reused)
  // Storages made until one lands where the dead one was (the heap hands the block back soon).
  std::vector<at::Tensor> made;
  bool reused = false;
  for (int i = 0; i < 64 && !reused; ++i) {
    made.push_back(torch::ones({8}));
    if (made.back().storage().unsafeGetStorageImpl() != address) continue;
    reused = true;
    EXPECT_NE(id_of(ids, made.back()), old_id);
  }
  if (!reused) GTEST_SKIP() << "the heap never reused the storage's address";
}

TEST(TensorIds, AnAliasedCopyTakesItsSourcesIdOnThreadsThatCachedItsOwn) {
  opdump::Runtime runtime;
  TensorIds ids(runtime);
  const at::Tensor from = torch::ones({4}), to = torch::zeros({4});
  const uint64_t id_from = id_of(ids, from);
  EXPECT_NE(id_of(ids, to), id_from);  // cached on this thread
  ids.alias(from, to);
  EXPECT_EQ(id_of(ids, to), id_from);
}
