// distillation_kl and distillation_loss against PyTorch on the same float64 logits (F.kl_div with
// log_target=True, reduction batchmean, and F.cross_entropy over the rows whose target is kept):
// the loss, its CE and KL parts and the gradient w.r.t. the student logits within 1e-6 (relative
// above 1) for several temperatures and alphas (tests/golden/distill_kl.json, written by
// tools/golden/distill_kl_fixtures.py); the KL per row; gradcheck; no gradient to the teacher;
// finite on float32 logits far beyond exp's range; errors.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/ops/distillation_loss.h"
#include "nanoformer/ops/elementwise.h"
#include "support/testing.h"

namespace nf {
namespace {

using nlohmann::json;

json torch_fixture() {
  std::ifstream in(std::string(NF_GOLDEN_DIR) + "/distill_kl.json");
  EXPECT_TRUE(in.good()) << NF_GOLDEN_DIR << "/distill_kl.json";
  return json::parse(in);
}

Tensor matrix(const json& doc, const char* key, bool requires_grad) {
  Tensor t = Tensor::from_vector(doc[key].get<std::vector<double>>(),
                                 {doc["rows"].get<int64_t>(), doc["vocab"].get<int64_t>()});
  t.set_requires_grad(requires_grad);
  return t;
}

Tensor targets(const json& doc) {
  const std::vector<int64_t> t = doc["targets"].get<std::vector<int64_t>>();
  return Tensor::from_vector(t, {static_cast<int64_t>(t.size())});
}

// within 1e-6, relative where |expected| > 1
void expect_close(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-6 * std::max(1.0, std::fabs(expected))) << what;
}

TEST(DistillationLoss, EqualsTorchsKlDivAndCrossEntropyWithGradients) {
  const json doc = torch_fixture();
  ASSERT_EQ(doc["cases"].size(), 16u);
  for (const json& c : doc["cases"]) {
    const double temperature = c["temperature"].get<double>(), alpha = c["alpha"].get<double>();
    SCOPED_TRACE("T " + std::to_string(temperature) + " alpha " + std::to_string(alpha));
    const Tensor student = matrix(doc, "student", true), teacher = matrix(doc, "teacher", false);
    const DistillationLoss out = distillation_loss(student, teacher, targets(doc), temperature, alpha);
    expect_close(out.loss.item(), c["loss"].get<double>(), "loss");
    expect_close(out.ce.item(), c["ce"].get<double>(), "ce");
    expect_close(out.kl.item(), c["kl"].get<double>(), "kl");
    out.loss.backward();
    const std::vector<double> grad = student.grad().to_vector<double>();
    const std::vector<double> expected = c["grad_student"].get<std::vector<double>>();
    ASSERT_EQ(grad.size(), expected.size());
    for (size_t i = 0; i < grad.size(); ++i) expect_close(grad[i], expected[i], "grad[" + std::to_string(i) + "]");
  }
}

TEST(DistillationLoss, KlPerRowEqualsTorchsAndIsZeroOnIgnoredRows) {
  const json doc = torch_fixture();
  const Tensor student = matrix(doc, "student", false), teacher = matrix(doc, "teacher", false);
  const std::vector<int64_t> keep_all(5, 0);
  const Tensor rows = distillation_kl(student, teacher, Tensor::from_vector(keep_all, {5}), 2.0, -100, Reduction::none);
  const std::vector<double> kl = rows.to_vector<double>(), expected = doc["kl_per_row_t2"].get<std::vector<double>>();
  ASSERT_EQ(kl.size(), expected.size());
  for (size_t i = 0; i < kl.size(); ++i) expect_close(kl[i], expected[i], "row " + std::to_string(i));
  const std::vector<double> masked =
      distillation_kl(student, teacher, targets(doc), 2.0, -100, Reduction::none).to_vector<double>();
  EXPECT_EQ(masked[1], 0.0);  // the fixture's row 1 is ignored
  expect_close(distillation_kl(student, teacher, targets(doc), 2.0, -100, Reduction::sum).item(),
               kl[0] + kl[2] + kl[3] + kl[4], "sum over kept rows");
}

TEST(DistillationLoss, GradcheckEveryReductionAndNoGradientToTheTeacher) {
  const Tensor teacher = testing::random_leaf({4, 6}, 7, -3.0, 3.0);
  const std::vector<int64_t> t = {1, -100, 5, 0};
  const Tensor target = Tensor::from_vector(t, {4});
  for (const Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    EXPECT_GRAD_OK(
        [&](const std::vector<Tensor>& x) { return distillation_kl(x[0], teacher, target, 1.7, -100, reduction); },
        {testing::random_leaf({4, 6}, 8, -3.0, 3.0)});
  }
  EXPECT_GRAD_OK(
      [&](const std::vector<Tensor>& x) { return distillation_loss(x[0], teacher, target, 0.6, 0.3).loss; },
      {testing::random_leaf({4, 6}, 9, -3.0, 3.0)});
  const Tensor student = testing::random_leaf({4, 6}, 10, -3.0, 3.0);
  distillation_loss(student, teacher, target, 2.0, 0.5).loss.backward();
  EXPECT_TRUE(student.grad().defined());
  EXPECT_FALSE(teacher.grad().defined());  // the teacher is a constant
}

TEST(DistillationLoss, FiniteOnFloat32LogitsBeyondExpsRange) {
  // logits shifted by 1000 (e^1000 overflows float32 and float64): the log-softmax is shift-invariant
  const Tensor student = testing::random_leaf({3, 5}, 11, -4.0, 4.0).detach();
  const Tensor teacher = testing::random_leaf({3, 5}, 12, -4.0, 4.0).detach();
  const std::vector<int64_t> t = {0, 1, 2};
  const Tensor target = Tensor::from_vector(t, {3});
  const double reference = distillation_kl(student, teacher, target, 1.5).item();
  Tensor shifted = add(student, 1000.0).to(DType::f32);
  shifted.set_requires_grad(true);
  const Tensor kl = distillation_kl(shifted, add(teacher, 1000.0).to(DType::f32), target, 1.5);
  EXPECT_TRUE(std::isfinite(kl.item()));
  EXPECT_NEAR(kl.item(), reference, 1e-3);
  kl.backward();
  for (const float g : shifted.grad().to_vector<float>()) EXPECT_TRUE(std::isfinite(g));
}

TEST(DistillationLoss, ErrorsNameTheInputAndValue) {
  const Tensor a = Tensor::from_vector(std::vector<double>(6, 0.0), {2, 3});
  const Tensor b = Tensor::from_vector(std::vector<double>(8, 0.0), {2, 4});
  const Tensor target = Tensor::from_vector(std::vector<int64_t>{0, 1}, {2});
  EXPECT_THROW_WITH(distillation_kl(a, b, target, 1.0),
                    "distillation_kl: student logits (2, 3) f64 and teacher logits (2, 4) f64 are not two (N, V) of one dtype");
  EXPECT_THROW_WITH(distillation_kl(a, a, target, 0.0), "distillation_kl: temperature must be > 0, got 0");
  EXPECT_THROW_WITH(distillation_loss(a, a, target, 1.0, 1.5), "distillation_loss: alpha must be in [0, 1], got 1.5");
  EXPECT_THROW_WITH(distillation_kl(a, a, Tensor::from_vector(std::vector<int64_t>{0}, {1}), 1.0),
                    "distillation_kl: target (1) is not (N) = (2) i64 or i32");
}

}  // namespace
}  // namespace nf
