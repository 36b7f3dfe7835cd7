#include "harness/scale/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace memstage::scale {

namespace {

double n_log_n(double n) { return n > 0 ? n * std::log(n) : 0; }

// Least squares y ≈ Σ coef_j·column_j by modified Gram-Schmidt on columns scaled to unit
// maximum: n² at n = 1e5 is 1e10 while the constant column is 1, and unscaled normal
// equations would lose most of the digits. Returns nothing when the columns are
// (numerically) dependent.
struct LeastSquares {
  std::vector<double> coefficients;
  double residual_sum_squares = 0;
};

std::optional<LeastSquares> solve(std::vector<std::vector<double>> columns, const std::vector<double>& y) {
  const size_t m = y.size(), p = columns.size();
  if (m < p) return std::nullopt;
  std::vector<double> scale(p, 1);
  for (size_t j = 0; j < p; ++j) {
    double largest = 0;
    for (double v : columns[j]) largest = std::max(largest, std::fabs(v));
    if (largest == 0) return std::nullopt;
    scale[j] = largest;
    for (double& v : columns[j]) v /= largest;
  }
  // Q (m×p, orthonormal columns) and R (p×p upper triangular) with A = Q·R.
  std::vector<std::vector<double>> q = columns;
  std::vector<std::vector<double>> r(p, std::vector<double>(p, 0));
  for (size_t j = 0; j < p; ++j) {
    double original_norm = 0;
    for (double v : q[j]) original_norm += v * v;
    original_norm = std::sqrt(original_norm);
    for (size_t k = 0; k < j; ++k) {
      double dot = 0;
      for (size_t i = 0; i < m; ++i) dot += q[k][i] * q[j][i];
      r[k][j] = dot;
      for (size_t i = 0; i < m; ++i) q[j][i] -= dot * q[k][i];
    }
    double norm = 0;
    for (double v : q[j]) norm += v * v;
    norm = std::sqrt(norm);
    if (norm <= 1e-10 * original_norm) return std::nullopt;
    r[j][j] = norm;
    for (double& v : q[j]) v /= norm;
  }
  // R·x = Qᵀ·y (y projected), then back substitution.
  std::vector<double> qty(p, 0);
  std::vector<double> residual = y;
  for (size_t j = 0; j < p; ++j) {
    double dot = 0;
    for (size_t i = 0; i < m; ++i) dot += q[j][i] * residual[i];
    qty[j] = dot;
    for (size_t i = 0; i < m; ++i) residual[i] -= dot * q[j][i];
  }
  LeastSquares out;
  out.coefficients.assign(p, 0);
  for (size_t jj = p; jj-- > 0;) {
    double sum = qty[jj];
    for (size_t k = jj + 1; k < p; ++k) sum -= r[jj][k] * out.coefficients[k];
    out.coefficients[jj] = sum / r[jj][jj];
  }
  for (size_t j = 0; j < p; ++j) out.coefficients[j] /= scale[j];
  for (double v : residual) out.residual_sum_squares += v * v;
  return out;
}

std::vector<double> ys(const std::vector<Point>& points) {
  std::vector<double> out;
  for (const auto& p : points) out.push_back(p.bytes);
  return out;
}

std::vector<double> column(const std::vector<Point>& points, double (*f)(double, double), double arg = 0) {
  std::vector<double> out;
  for (const auto& p : points) out.push_back(f(p.n, arg));
  return out;
}

double one(double, double) { return 1; }
double identity(double n, double) { return n; }
double square(double n, double) { return n * n; }
double nlogn_column(double n, double) { return n_log_n(n); }
double power_column(double n, double exponent) { return std::pow(n, exponent); }

// Power law for a fixed exponent: a and c by linear least squares.
std::optional<LeastSquares> power_at(const std::vector<Point>& points, double exponent) {
  return solve({column(points, power_column, exponent), column(points, one)}, ys(points));
}

std::optional<LeastSquares> monomial_at(const std::vector<Point>& points, double exponent) {
  return solve({column(points, power_column, exponent)}, ys(points));
}

// The exponent in [0.05, 5] with the least residual for `solve_at` (power_at,
// monomial_at). The residual as a function of the exponent is smooth but not always
// unimodal over the whole range: a grid finds the right valley, golden section its bottom.
template <typename SolveAt>
std::optional<double> best_exponent(SolveAt solve_at) {
  auto rss_at = [&](double exponent) {
    auto r = solve_at(exponent);
    return r ? r->residual_sum_squares : std::numeric_limits<double>::infinity();
  };
  constexpr double kLowest = 0.05, kHighest = 5, kStep = 0.01;
  double best = kLowest, best_rss = std::numeric_limits<double>::infinity();
  for (double e = kLowest; e <= kHighest + 1e-9; e += kStep) {
    const double r = rss_at(e);
    if (r < best_rss) best_rss = r, best = e;
  }
  if (!std::isfinite(best_rss)) return std::nullopt;
  double lo = std::max(kLowest, best - kStep), hi = std::min(kHighest, best + kStep);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - ratio * (hi - lo), x2 = lo + ratio * (hi - lo);
  double f1 = rss_at(x1), f2 = rss_at(x2);
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    if (f1 <= f2) {
      hi = x2, x2 = x1, f2 = f1, x1 = hi - ratio * (hi - lo), f1 = rss_at(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2, x2 = lo + ratio * (hi - lo), f2 = rss_at(x2);
    }
  }
  const double exponent = (lo + hi) / 2;
  return rss_at(exponent) > best_rss ? best : exponent;
}

size_t distinct_sizes(const std::vector<Point>& points) {
  std::set<double> sizes;
  for (const auto& p : points) sizes.insert(p.n);
  return sizes.size();
}

std::string number(double v) {
  char buffer[64];
  snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

// " + 3" or " - 3": a formula reads "a·n - 5", not "a·n + -5".
std::string term(double v) { return (v < 0 ? " - " : " + ") + number(std::fabs(v)); }

}  // namespace

const char* model_name(Model model) {
  switch (model) {
    case Model::kConstant: return "constant";
    case Model::kLinear: return "linear";
    case Model::kNLogN: return "nlogn";
    case Model::kMonomial: return "monomial";
    case Model::kQuadratic: return "quadratic";
    case Model::kPower: return "power";
  }
  return "?";
}

std::optional<Model> parse_model(const std::string& name) {
  for (Model m : kAllModels)
    if (name == model_name(m)) return m;
  return std::nullopt;
}

int parameter_count(Model model) {
  switch (model) {
    case Model::kConstant: return 1;
    case Model::kLinear:
    case Model::kNLogN:
    case Model::kMonomial: return 2;
    case Model::kQuadratic:
    case Model::kPower: return 3;
  }
  return 0;
}

std::vector<std::string> parameter_names(Model model) {
  switch (model) {
    case Model::kConstant: return {"c"};
    case Model::kLinear:
    case Model::kNLogN:
    case Model::kMonomial: return {"a", "b"};
    case Model::kQuadratic:
    case Model::kPower: return {"a", "b", "c"};
  }
  return {};
}

double Fit::evaluate(double n) const {
  const auto& k = parameters;
  switch (model) {
    case Model::kConstant: return k[0];
    case Model::kLinear: return k[0] * n + k[1];
    case Model::kNLogN: return k[0] * n_log_n(n) + k[1];
    case Model::kQuadratic: return (k[0] * n + k[1]) * n + k[2];
    case Model::kMonomial: return k[0] * std::pow(n, k[1]);
    case Model::kPower: return k[0] * std::pow(n, k[1]) + k[2];
  }
  return 0;
}

double Fit::slope(double n) const {
  const auto& k = parameters;
  switch (model) {
    case Model::kConstant: return 0;
    case Model::kLinear: return k[0];
    case Model::kNLogN: return n > 0 ? k[0] * (std::log(n) + 1) : 0;
    case Model::kQuadratic: return 2 * k[0] * n + k[1];
    case Model::kMonomial:
    case Model::kPower: return n > 0 ? k[0] * k[1] * std::pow(n, k[1] - 1) : 0;
  }
  return 0;
}

std::string Fit::formula() const {
  const auto& k = parameters;
  switch (model) {
    case Model::kConstant: return number(k[0]);
    case Model::kLinear: return number(k[0]) + "·n" + term(k[1]);
    case Model::kNLogN: return number(k[0]) + "·n·ln n" + term(k[1]);
    case Model::kQuadratic: return number(k[0]) + "·n²" + term(k[1]) + "·n" + term(k[2]);
    case Model::kMonomial: return number(k[0]) + "·n^" + number(k[1]);
    case Model::kPower: return number(k[0]) + "·n^" + number(k[1]) + term(k[2]);
  }
  return "";
}

std::optional<Fit> fit_model(Model model, const std::vector<Point>& points) {
  if (points.empty() || distinct_sizes(points) < static_cast<size_t>(parameter_count(model))) return std::nullopt;
  Fit fit;
  fit.model = model;
  fit.point_count = points.size();
  const std::vector<double> y = ys(points);
  std::optional<LeastSquares> ls;
  switch (model) {
    case Model::kConstant: ls = solve({column(points, one)}, y); break;
    case Model::kLinear: ls = solve({column(points, identity), column(points, one)}, y); break;
    case Model::kNLogN: ls = solve({column(points, nlogn_column), column(points, one)}, y); break;
    case Model::kQuadratic:
      ls = solve({column(points, square), column(points, identity), column(points, one)}, y);
      break;
    case Model::kPower: {
      const auto exponent = best_exponent([&](double e) { return power_at(points, e); });
      auto r = exponent ? power_at(points, *exponent) : std::nullopt;
      if (!r) return std::nullopt;
      fit.parameters = {r->coefficients[0], *exponent, r->coefficients[1]};
      fit.residual_sum_squares = r->residual_sum_squares;
      return fit;
    }
    case Model::kMonomial: {
      const auto exponent = best_exponent([&](double e) { return monomial_at(points, e); });
      auto r = exponent ? monomial_at(points, *exponent) : std::nullopt;
      if (!r) return std::nullopt;
      fit.parameters = {r->coefficients[0], *exponent};
      fit.residual_sum_squares = r->residual_sum_squares;
      return fit;
    }
  }
  if (!ls) return std::nullopt;
  fit.parameters = ls->coefficients;
  fit.residual_sum_squares = ls->residual_sum_squares;
  return fit;
}

Selection select_model(const std::vector<Point>& points) {
  Selection selection;
  const size_t sizes = distinct_sizes(points);
  double largest = 0;
  for (const auto& p : points) largest = std::max(largest, std::fabs(p.bytes));
  for (Model model : kAllModels) {
    auto fit = fit_model(model, points);
    if (!fit) continue;
    ModelScore score;
    score.fit = *fit;
    const size_t p = static_cast<size_t>(parameter_count(model));
    if (points.size() > p) score.residual_se_bytes = std::sqrt(fit->residual_sum_squares / double(points.size() - p));
    if (sizes >= p + 1) {
      double sum_squares = 0;
      bool complete = true;
      for (size_t i = 0; i < points.size(); ++i) {
        std::vector<Point> rest = points;
        rest.erase(rest.begin() + static_cast<long>(i));
        auto refit = fit_model(model, rest);
        if (!refit) {
          complete = false;
          break;
        }
        const double error = refit->evaluate(points[i].n) - points[i].bytes;
        sum_squares += error * error;
        score.loo_fits.push_back(*refit);
      }
      if (complete) score.loo_rms_bytes = std::sqrt(sum_squares / double(points.size()));
      else score.loo_fits.clear();
    }
    selection.scores.push_back(std::move(score));
  }
  if (selection.scores.empty()) return selection;

  double best_loo = std::numeric_limits<double>::infinity();
  for (const auto& s : selection.scores)
    if (s.loo_rms_bytes) best_loo = std::min(best_loo, *s.loo_rms_bytes);
  if (std::isfinite(best_loo)) {
    const double noise_floor_bytes = 1e-6 * largest;
    const double good_enough = best_loo * 2 + noise_floor_bytes;
    for (size_t i = 0; i < selection.scores.size(); ++i) {
      const auto& s = selection.scores[i];
      if (!s.loo_rms_bytes || *s.loo_rms_bytes > good_enough) continue;
      if (selection.chosen < 0 ||
          parameter_count(s.fit.model) < parameter_count(selection.scores[selection.chosen].fit.model)) {
        selection.chosen = static_cast<int>(i);
      }
    }
    selection.criterion =
        "leave-one-out RMS error; models within 2x of the best (+1e-6 of the peak) count as equal, "
        "and the one with fewest parameters wins";
    // Two sizes: only `constant` can be cross-checked (each point predicts the other), which
    // says nothing about growth. The line through both is the honest guess.
    if (sizes == 2) {
      for (size_t i = 0; i < selection.scores.size(); ++i) {
        if (selection.scores[i].fit.model == Model::kLinear &&
            *selection.scores[selection.chosen].loo_rms_bytes > noise_floor_bytes) {
          selection.chosen = static_cast<int>(i);
          selection.criterion = "two sizes only: the line through both (no cross-check possible)";
        }
      }
    }
  } else {
    selection.chosen = 0;  // one size: the constant through it
    selection.criterion = "one size only: constant";
  }
  return selection;
}

std::optional<double> crossing_n(const Fit& fit, double limit_bytes) {
  double lo = 1;
  if (fit.evaluate(lo) >= limit_bytes) return lo;
  double hi = 2;
  while (fit.evaluate(hi) < limit_bytes) {
    lo = hi;
    hi *= 2;
    if (hi > 1e15) return std::nullopt;
  }
  while ((hi - lo) > 1e-12 * hi) {
    const double mid = (lo + hi) / 2;
    if (fit.evaluate(mid) >= limit_bytes) hi = mid;
    else lo = mid;
  }
  return hi;
}

}  // namespace memstage::scale
