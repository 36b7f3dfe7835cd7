// The fitting of `memstage scale` on synthetic points: exact data gives back its
// parameters and its family; noisy data still picks the family that made it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <cmath>
#include <random>

#include "harness/scale/fit.h"
#include "harness/scale/scale_report.h"

using namespace memstage::scale;
using Catch::Matchers::WithinRel;

namespace {

std::vector<Point> points_of(const std::vector<double>& sizes, double (*f)(double)) {
  std::vector<Point> out;
  for (double n : sizes) out.push_back({n, f(n)});
  return out;
}

const std::vector<double> kSizes = {1000, 2000, 4000, 8000, 16000};

Model chosen(const std::vector<Point>& points) {
  const Selection s = select_model(points);
  REQUIRE(s.best());
  return s.best()->fit.model;
}

}  // namespace

TEST_CASE("each model recovers its own parameters from exact points") {
  SECTION("constant") {
    auto fit = fit_model(Model::kConstant, points_of(kSizes, [](double) { return 5e6; }));
    REQUIRE(fit);
    CHECK_THAT(fit->parameters[0], WithinRel(5e6, 1e-12));
  }
  SECTION("linear") {
    auto fit = fit_model(Model::kLinear, points_of(kSizes, [](double n) { return 4096 * n + 1048576; }));
    REQUIRE(fit);
    CHECK_THAT(fit->parameters[0], WithinRel(4096.0, 1e-9));
    CHECK_THAT(fit->parameters[1], WithinRel(1048576.0, 1e-9));
  }
  SECTION("nlogn") {
    auto fit = fit_model(Model::kNLogN, points_of(kSizes, [](double n) { return 300 * n * std::log(n) + 7e5; }));
    REQUIRE(fit);
    CHECK_THAT(fit->parameters[0], WithinRel(300.0, 1e-9));
    CHECK_THAT(fit->parameters[1], WithinRel(7e5, 1e-6));
  }
  SECTION("quadratic") {
    auto fit = fit_model(Model::kQuadratic, points_of(kSizes, [](double n) { return 3 * n * n + 500 * n + 2e6; }));
    REQUIRE(fit);
    CHECK_THAT(fit->parameters[0], WithinRel(3.0, 1e-9));
    CHECK_THAT(fit->parameters[1], WithinRel(500.0, 1e-6));
    CHECK_THAT(fit->parameters[2], WithinRel(2e6, 1e-5));
  }
  SECTION("power") {
    auto fit = fit_model(Model::kPower, points_of(kSizes, [](double n) { return 64 * std::pow(n, 1.7) + 3e6; }));
    REQUIRE(fit);
    CHECK_THAT(fit->parameters[0], WithinRel(64.0, 1e-6));
    CHECK_THAT(fit->parameters[1], WithinRel(1.7, 1e-8));
    CHECK_THAT(fit->parameters[2], WithinRel(3e6, 1e-5));
  }
}

TEST_CASE("a model with more parameters than sizes is not fitted") {
  CHECK_FALSE(fit_model(Model::kQuadratic, {{1, 1}, {2, 4}}));
  CHECK_FALSE(fit_model(Model::kLinear, {{1, 1}, {1, 2}}));
}

TEST_CASE("selection picks the simplest family that explains exact points") {
  CHECK(chosen(points_of(kSizes, [](double) { return 5e6; })) == Model::kConstant);
  CHECK(chosen(points_of(kSizes, [](double n) { return 4096 * n + 1048576; })) == Model::kLinear);
  CHECK(chosen(points_of(kSizes, [](double n) { return 300 * n * std::log(n) + 7e5; })) == Model::kNLogN);
  CHECK(chosen(points_of(kSizes, [](double n) { return 16 * n * n + 80000; })) == Model::kQuadratic);
  CHECK(chosen(points_of(kSizes, [](double n) { return 64 * std::pow(n, 1.5) + 80000; })) == Model::kPower);
  // A power law through the origin is the monomial (two parameters, three sizes suffice).
  CHECK(chosen(points_of({1000, 2000, 4000, 8000}, [](double n) { return 64 * std::pow(n, 1.5); })) == Model::kMonomial);
  CHECK(chosen(points_of({1000, 2000, 3000}, [](double n) { return 12 * n * 2.6 * std::pow(n, 0.55); })) == Model::kMonomial);
}

TEST_CASE("selection with noise still finds the family") {
  std::mt19937 random(42);
  std::normal_distribution<double> noise(0, 0.005);  // 0.5% of the value: RSS sampling jitter
  const std::vector<double> sizes = {1000, 2000, 3000, 4000, 6000, 8000};
  auto noisy = [&](double (*f)(double)) {
    auto points = points_of(sizes, f);
    for (auto& p : points) p.bytes *= 1 + noise(random);
    return points;
  };
  for (int trial = 0; trial < 5; ++trial) {
    CHECK(chosen(noisy([](double) { return 5e7; })) == Model::kConstant);
    CHECK(chosen(noisy([](double n) { return 4096 * n + 1e6; })) == Model::kLinear);
    const Selection fast = select_model(noisy([](double n) { return 16 * n * n + 1e6; }));
    const Model model = fast.best()->fit.model;
    CHECK((model == Model::kQuadratic || model == Model::kPower || model == Model::kMonomial));
    if (model == Model::kMonomial) CHECK(fast.best()->fit.parameters[1] == Approx(2).margin(0.05));
  }
}

TEST_CASE("leave-one-out scores and residual errors are reported") {
  const Selection s = select_model(points_of(kSizes, [](double n) { return 4096 * n + 1048576; }));
  REQUIRE(s.best());
  REQUIRE(s.best()->loo_rms_bytes);
  CHECK(*s.best()->loo_rms_bytes < 1e-3);
  CHECK(s.best()->loo_fits.size() == kSizes.size());
  for (const auto& score : s.scores) {
    if (score.fit.model == Model::kConstant) CHECK(*score.loo_rms_bytes > 1e6);
  }
}

TEST_CASE("two sizes give the line through both and one size a constant") {
  const Selection two = select_model({{1000, 5e6}, {2000, 9e6}});
  REQUIRE(two.best());
  CHECK(two.best()->fit.model == Model::kLinear);
  CHECK_THAT(two.best()->fit.evaluate(4000), WithinRel(17e6, 1e-9));
  const Selection one = select_model({{1000, 5e6}});
  REQUIRE(one.best());
  CHECK(one.best()->fit.model == Model::kConstant);
  CHECK_FALSE(predict({{1000, 5e6}}, 2000));
}

TEST_CASE("crossing n solves the model for the limit") {
  Fit linear{Model::kLinear, {4096, 1048576}, 0, 5};
  const double limit = 1024.0 * 1024 * 1024;
  auto n = crossing_n(linear, limit);
  REQUIRE(n);
  CHECK_THAT(*n, WithinRel((limit - 1048576) / 4096, 1e-9));
  Fit power{Model::kPower, {64, 1.5, 0}, 0, 5};
  n = crossing_n(power, limit);
  REQUIRE(n);
  CHECK_THAT(*n, WithinRel(std::pow(limit / 64, 1 / 1.5), 1e-9));
  Fit flat{Model::kConstant, {1e6}, 0, 5};
  CHECK_FALSE(crossing_n(flat, limit));
  Fit shrinking{Model::kQuadratic, {-1, 0, 1e6}, 0, 5};
  CHECK_FALSE(crossing_n(shrinking, limit));
}

TEST_CASE("a declared-flat stage that grows is flagged and a flat one is not and names are escaped") {
  ScaleInput input;
  input.ram_bytes = 1e9;
  input.metric = Metric::kHeap;
  input.flat = {"setup", "train", "missing"};
  input.totals = {"total", "", {}};
  Series setup{"setup", "setup", {}}, train{"train", "train", {}}, evil{"<script>", "a/<script>", {}};
  for (double n : {1000.0, 2000.0, 4000.0, 8000.0}) {
    input.totals.points.push_back({n, 2e6 + 1000 * n, 3e6 + 1000 * n});
    setup.points.push_back({n, 2e6, 3e6});
    train.points.push_back({n, 1000 * n, 1000 * n});
    evil.points.push_back({n, 5e5, 5e5});
  }
  input.stages = {setup, train, evil};
  const ScaleAnalysis a = analyze(input);
  CHECK_FALSE(a.stages[0].flag);
  CHECK(a.stages[1].flag);
  CHECK(a.unknown_flat == std::vector<std::string>{"missing"});
  REQUIRE(a.totals.crossing_n);
  CHECK_THAT(*a.totals.crossing_n, WithinRel((1e9 - 2e6) / 1000, 1e-9));
  const std::string html = render_scale_html(a);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  const auto json = nlohmann::json::parse(render_scale_json(a));
  CHECK(json["totals"]["fits"]["heap"]["chosen"]["model"] == "linear");
  CHECK(json["flags"].size() == 2);
}
