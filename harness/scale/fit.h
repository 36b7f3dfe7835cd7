// Growth models for `memstage scale`: least-squares fits of peak bytes against the input
// size n, chosen by leave-one-out error, and the n at which a fitted model passes a limit.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memstage::scale {

// In order of preference when two models explain the points equally well.
enum class Model { kConstant, kLinear, kNLogN, kMonomial, kQuadratic, kPower };
inline constexpr Model kAllModels[] = {Model::kConstant, Model::kLinear,    Model::kNLogN,
                                       Model::kMonomial, Model::kQuadratic, Model::kPower};

// "constant", "linear", "nlogn", "monomial", "quadratic", "power"
const char* model_name(Model model);
std::optional<Model> parse_model(const std::string& name);
int parameter_count(Model model);                // free parameters, the exponent of `power` included
std::vector<std::string> parameter_names(Model model);

struct Point {
  double n = 0;      // input size
  double bytes = 0;  // measured peak
};

// One model fitted to some points. Parameters are in natural units (bytes, n):
//   constant  c              linear  a·n + b         nlogn  a·n·ln(n) + b
//   monomial  a·n^b          quadratic a·n² + b·n + c  power  a·n^b + c
// The monomial is the power law without a constant: two parameters, so three sizes can
// cross-check it (a dense rows × vocabulary matrix grows like n^(1+β), Heaps' law).
struct Fit {
  Model model = Model::kConstant;
  std::vector<double> parameters;
  double residual_sum_squares = 0;  // bytes²
  size_t point_count = 0;

  double evaluate(double n) const;
  double slope(double n) const;  // d bytes / d n: the growth per unit of input at n
  std::string formula() const;   // e.g. "4096·n + 1.05e+06"
};

// Least squares; nothing when the model has more parameters than there are distinct
// sizes (or the system is degenerate). `power` and `monomial` optimise the exponent in
// [0.05, 5] with a grid and a golden-section refinement, solving a (and c) exactly for
// each exponent.
std::optional<Fit> fit_model(Model model, const std::vector<Point>& points);

struct ModelScore {
  Fit fit;                          // on all points
  std::optional<double> loo_rms_bytes;      // root mean square leave-one-out error; none when too few points
  std::optional<double> residual_se_bytes;  // sqrt(RSS / (N - p)); none when N == p
  std::vector<Fit> loo_fits;        // the refits without each point, in point order
};

struct Selection {
  std::vector<ModelScore> scores;  // every model that could be fitted, in kAllModels order
  int chosen = -1;                 // index into scores; -1 with no points
  std::string criterion;           // how the choice was made, in words
  const ModelScore* best() const { return chosen < 0 ? nullptr : &scores[chosen]; }
};

// The selection rule (docs/scale.md): every model with at least p + 1 distinct sizes is
// scored by its leave-one-out RMS error (refit without each point, predict it: that is an
// interpolation or an extrapolation error, which is what a prediction needs). Models within
// twice the best score, plus a noise floor of 1e-6 of the largest value, count as equally
// good, and among those the one with the fewest parameters wins (then kAllModels order).
// With exactly two sizes nothing can be cross-checked; the line through both is taken.
Selection select_model(const std::vector<Point>& points);

// The smallest n >= 1 at which `fit` reaches `limit_bytes` (searched by doubling, then
// bisection to a relative 1e-12); nothing if it stays below up to n = 1e15.
std::optional<double> crossing_n(const Fit& fit, double limit_bytes);

}  // namespace memstage::scale
