// What the observer knows of a record's operator (src/torch/op_traits.h), as real ATen records
// show it: worked out once per operator overload, and never taken from the cache for a record whose
// name is not a dispatcher op's (such a name may be a temporary whose address a later record reuses).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "op_traits.h"

using namespace opdump::pt::detail;

namespace {

struct Seen {
  std::string name;
  OpTraits traits;
  std::string type;  // (traits.type points into the record's name, gone with the record)
  const OpTraits* where;
};

OpTraitsCache* t_cache = nullptr;
std::vector<Seen>* t_seen = nullptr;

std::unique_ptr<at::ObserverContext> remember(const at::RecordFunction& fn) {
  const OpTraits& traits = t_cache->of(fn);
  t_seen->push_back(Seen{fn.name(), traits, std::string(traits.type), &traits});
  return nullptr;
}

// The records `body` makes on this thread, each with its traits as the cache gave them.
template <typename Body>
std::vector<Seen> records_of(OpTraitsCache& cache, Body body) {
  std::vector<Seen> seen;
  t_cache = &cache;
  t_seen = &seen;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&remember).needsInputs(true).scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  body();
  at::removeCallback(handle);
  return seen;
}

const Seen& first_named(const std::vector<Seen>& seen, const std::string& name) {
  for (const Seen& s : seen)
    if (s.name == name) return s;
  ADD_FAILURE() << "no record named " << name;
  static const Seen none{};
  return none;
}

}  // namespace

TEST(OpTraits, InPlaceAndOutVariantsNameWhatTheyWriteAndWhatTheirResultsDerive) {
  OpTraitsCache cache;
  at::Tensor a = torch::ones({4}), b = torch::ones({4}), out = torch::empty({4});
  const auto seen = records_of(cache, [&] {
    a.add_(b);
    a.mul_(2.0);
    a.zero_();
    at::add_out(out, a, b);
    (void)at::relu(a);
    (void)a.clone();
    (void)a.detach();
  });
  const Seen& add_ = first_named(seen, "aten::add_");
  EXPECT_TRUE(add_.traits.is_operator);
  EXPECT_EQ(add_.type, "add_");
  EXPECT_EQ(add_.traits.written, std::vector<uint32_t>{0});
  EXPECT_TRUE(add_.traits.out.empty());
  EXPECT_EQ(add_.traits.derives, OpTraits::Derives::AddInPlace);
  EXPECT_EQ(first_named(seen, "aten::mul_").traits.derives, OpTraits::Derives::MulInPlace);
  const Seen& zero_ = first_named(seen, "aten::zero_");
  EXPECT_EQ(zero_.traits.derives, OpTraits::Derives::Fill);
  EXPECT_TRUE(zero_.traits.computes_nothing);
  // add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out): a keyword-only buffer
  const Seen& add_out = first_named(seen, "aten::add");
  EXPECT_EQ(add_out.traits.written, std::vector<uint32_t>{3});
  EXPECT_EQ(add_out.traits.out, std::vector<uint32_t>{3});
  EXPECT_EQ(add_out.traits.derives, OpTraits::Derives::Nothing);
  const Seen& relu = first_named(seen, "aten::relu");
  EXPECT_TRUE(relu.traits.written.empty());
  EXPECT_FALSE(relu.traits.computes_nothing);
  EXPECT_EQ(relu.traits.copied_input, -1);
  const Seen& clone = first_named(seen, "aten::clone");
  EXPECT_TRUE(clone.traits.computes_nothing);
  EXPECT_EQ(clone.traits.copied_input, 0);  // data flow runs through the copy
  EXPECT_FALSE(clone.traits.aliases_input);   // (its own memory and version counter)
  EXPECT_FALSE(relu.traits.aliases_input);
  EXPECT_TRUE(first_named(seen, "aten::detach").traits.aliases_input);  // how autograd hands over a gradient
}

TEST(OpTraits, BatchNormWritesItsRunningStatisticsThoughItsSchemaDoesNotSaySo) {
  OpTraitsCache cache;
  at::Tensor x = torch::randn({2, 3, 4, 4}), mean = torch::zeros({3}), var = torch::ones({3});
  const auto seen = records_of(cache, [&] {
    (void)at::batch_norm(x, {}, {}, mean, var, /*training=*/true, 0.1, 1e-5, /*cudnn_enabled=*/false);
  });
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
  EXPECT_EQ(first_named(seen, "aten::batch_norm").traits.written, (std::vector<uint32_t>{3, 4}));
}

TEST(OpTraits, AnOverloadIsWorkedOutOnceAndOtherRecordsEachTime) {
  OpTraitsCache cache;
  at::Tensor a = torch::ones({4}), b = torch::ones({4});
  // Records named by strings of their own (user scopes): made one after another in the same
  // stack slot, their short names sit at the same address each time.
  const std::vector<std::string> names = {"first::op_", "second::mul_", "not an op"};
  const auto seen = records_of(cache, [&] {
    a.add_(b);
    a.add_(b);
    for (const std::string& name : names) {
      RECORD_USER_SCOPE(name);
    }
  });
  std::vector<const Seen*> adds, scopes;
  for (const Seen& s : seen) {
    if (s.name == "aten::add_") adds.push_back(&s);
    for (const std::string& name : names)
      if (s.name == name) scopes.push_back(&s);
  }
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(adds[0]->where, adds[1]->where);  // the same cached traits
  ASSERT_EQ(scopes.size(), names.size());
  EXPECT_TRUE(scopes[0]->traits.is_operator);
  EXPECT_EQ(scopes[0]->type, "op_");
  EXPECT_TRUE(scopes[0]->traits.written.empty());  // no schema: nothing known to be written
  EXPECT_TRUE(scopes[1]->traits.is_operator);
  EXPECT_EQ(scopes[1]->type, "mul_");
  EXPECT_EQ(scopes[1]->traits.derives, OpTraits::Derives::Nothing);  // only aten::mul_ scales
  EXPECT_FALSE(scopes[2]->traits.is_operator);
}
