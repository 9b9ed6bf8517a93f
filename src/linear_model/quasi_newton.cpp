// L-BFGS and OWL-QN. References for the method (no code taken): Nocedal and Wright, Numerical
// Optimization, 2nd ed., algorithms 7.4 (two-loop recursion) and 3.5/3.6 (strong Wolfe line
// search with zoom); Andrew and Gao, "Scalable training of L1-regularized log-linear models"
// (ICML 2007) for the pseudo-gradient, the orthant projection and its backtracking search.
#include "linear_model/quasi_newton.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace gpuml::detail {

namespace {

using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double max_abs(const Vec& a) {
  double m = 0.0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

// An evaluated point: the smooth value f, its gradient g and the whole objective F = f + L1 term.
struct Point {
  Vec x, g;
  double f = 0.0, F = 0.0;
};

class Minimizer {
 public:
  Minimizer(const SmoothObjective& f, const Vec& l1, const QuasiNewtonOptions& options)
      : f_(f), l1_(l1), options_(options), has_l1_(std::any_of(l1.begin(), l1.end(), [](double v) { return v > 0; })) {}

  QuasiNewtonResult run(Vec& x) {
    QuasiNewtonResult result;
    Point current;
    current.x = x;
    evaluate(current);
    Vec pg = pseudo_gradient(current);
    const double gtol = options_.xtol > 0 ? 0.0 : options_.gtol;
    result.converged = max_abs(pg) <= gtol;
    for (int iter = 0; iter < options_.max_iter && !result.converged && std::isfinite(current.F); ++iter) {
      Point next;
      if (!step(current, pg, next)) break;  // no progress along any descent direction
      ++result.n_iter;
      remember(current, next);
      const double decrease = (current.F - next.F) / std::max({std::abs(current.F), std::abs(next.F), 1.0});
      bool small_step = false;
      if (options_.xtol > 0) {
        double change = 0.0;
        for (std::size_t i = 0; i < next.x.size(); ++i) change = std::max(change, std::abs(next.x[i] - current.x[i]));
        small_step = change <= options_.xtol * max_abs(next.x);
      }
      current = std::move(next);
      pg = pseudo_gradient(current);
      result.converged = max_abs(pg) <= gtol || decrease <= options_.ftol || small_step;
    }
    x = current.x;
    result.n_evaluations = evaluations_;
    result.objective = current.F;
    return result;
  }

 private:
  struct Pair {
    Vec s, y;
    double rho;
  };

  void evaluate(Point& p) {
    p.g.assign(p.x.size(), 0.0);
    p.f = f_(p.x, p.g);
    p.F = p.f;
    if (has_l1_)
      for (std::size_t i = 0; i < p.x.size(); ++i) p.F += l1_[i] * std::abs(p.x[i]);
    ++evaluations_;
  }

  double l1(std::size_t i) const { return has_l1_ ? l1_[i] : 0.0; }

  // The gradient of F where it exists; where x_i == 0 under an L1 weight, the one-sided
  // derivative that goes downhill, or 0 when neither side does (x_i = 0 is optimal there).
  Vec pseudo_gradient(const Point& p) const {
    Vec pg = p.g;
    if (!has_l1_) return pg;
    for (std::size_t i = 0; i < pg.size(); ++i) {
      const double w = l1_[i];
      if (w == 0) continue;
      if (p.x[i] > 0) pg[i] = p.g[i] + w;
      else if (p.x[i] < 0) pg[i] = p.g[i] - w;
      else if (p.g[i] + w < 0) pg[i] = p.g[i] + w;
      else if (p.g[i] - w > 0) pg[i] = p.g[i] - w;
      else pg[i] = 0.0;
    }
    return pg;
  }

  // d = −H pg by the two-loop recursion over the stored pairs (H0 = γ I, γ = sᵀy / yᵀy of the
  // newest pair).
  Vec direction(const Vec& pg) const {
    Vec q = pg;
    std::vector<double> alpha(history_.size());
    for (std::size_t k = history_.size(); k-- > 0;) {
      const Pair& p = history_[k];
      alpha[k] = p.rho * dot(p.s, q);
      for (std::size_t i = 0; i < q.size(); ++i) q[i] -= alpha[k] * p.y[i];
    }
    if (!history_.empty()) {
      const Pair& newest = history_.back();
      const double gamma = dot(newest.s, newest.y) / dot(newest.y, newest.y);
      for (double& v : q) v *= gamma;
    }
    for (std::size_t k = 0; k < history_.size(); ++k) {
      const Pair& p = history_[k];
      const double beta = p.rho * dot(p.y, q);
      for (std::size_t i = 0; i < q.size(); ++i) q[i] += p.s[i] * (alpha[k] - beta);
    }
    for (double& v : q) v = -v;
    if (has_l1_)  // OWL-QN: keep only the components that descend along −pg
      for (std::size_t i = 0; i < q.size(); ++i)
        if (l1(i) > 0 && q[i] * pg[i] >= 0) q[i] = 0.0;
    return q;
  }

  // One iteration's step from `from`: the quasi-Newton direction, or steepest descent with the
  // history dropped when that direction fails. False when neither makes progress.
  bool step(const Point& from, const Vec& pg, Point& to) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (attempt == 1) {
        if (history_.empty()) return false;
        history_.clear();
      }
      Vec d = direction(pg);
      const double slope = dot(pg, d);
      if (!(slope < 0)) {
        if (history_.empty()) return false;
        continue;
      }
      // Without curvature information, the first trial moves x by a unit length (as L-BFGS-B).
      const double a0 = history_.empty() ? std::min(1.0, 1.0 / std::sqrt(dot(d, d))) : 1.0;
      if (has_l1_ ? backtrack(from, pg, d, a0, to) : wolfe(from, d, slope, a0, to)) return true;
    }
    return false;
  }

  void remember(const Point& from, const Point& to) {
    Pair p;
    p.s.resize(from.x.size());
    p.y.resize(from.x.size());
    for (std::size_t i = 0; i < p.s.size(); ++i) {
      p.s[i] = to.x[i] - from.x[i];
      p.y[i] = to.g[i] - from.g[i];
    }
    const double sy = dot(p.s, p.y), yy = dot(p.y, p.y);
    // Skip pairs without positive curvature (they would make H indefinite).
    if (!(sy > std::numeric_limits<double>::epsilon() * yy) || yy == 0) return;
    p.rho = 1.0 / sy;
    history_.push_back(std::move(p));
    if (static_cast<int>(history_.size()) > options_.memory) history_.pop_front();
  }

  // Strong Wolfe conditions (c1 = 1e-4, c2 = 0.9): bracket by doubling, then zoom by safeguarded
  // cubic interpolation. Falls back to the best point with sufficient decrease when the budget
  // runs out.
  bool wolfe(const Point& p0, const Vec& d, double slope0, double a_init, Point& out) {
    constexpr double c1 = 1e-4, c2 = 0.9;
    struct Trial {
      double a, F, slope;
    };
    auto at = [&](double a, Point& p) {
      p.x.resize(p0.x.size());
      for (std::size_t i = 0; i < p.x.size(); ++i) p.x[i] = p0.x[i] + a * d[i];
      evaluate(p);
      return Trial{a, p.F, dot(p.g, d)};
    };
    auto sufficient = [&](const Trial& t) { return std::isfinite(t.F) && t.F <= p0.F + c1 * t.a * slope0; };
    auto curvature = [&](const Trial& t) { return std::abs(t.slope) <= -c2 * slope0; };

    Trial lo{0.0, p0.F, slope0}, hi{0.0, 0.0, 0.0};
    Point lo_point;  // the evaluated point at lo.a (when lo.a > 0)
    Point trial_point;
    int budget = options_.max_line_search;
    bool bracketed = false;
    double a = a_init;
    while (budget-- > 0 && !bracketed) {
      const Trial t = at(a, trial_point);
      if (!sufficient(t) || (lo.a > 0 && t.F >= lo.F)) {
        hi = t;
        bracketed = true;
      } else if (curvature(t)) {
        out = std::move(trial_point);
        return true;
      } else if (t.slope >= 0) {
        hi = lo;
        lo = t;
        lo_point = std::move(trial_point);
        bracketed = true;
      } else {
        lo = t;
        lo_point = trial_point;
        a *= 2.0;  // still descending steeply: extrapolate
      }
    }
    while (bracketed && budget-- > 0) {
      const double a_min = std::min(lo.a, hi.a), a_max = std::max(lo.a, hi.a), width = a_max - a_min;
      if (width <= std::numeric_limits<double>::epsilon() * a_max) break;
      double a_new = cubic_minimizer(lo, hi);
      if (!std::isfinite(hi.F) || !(a_new > a_min + 0.1 * width && a_new < a_max - 0.1 * width))
        a_new = 0.5 * (lo.a + hi.a);
      const Trial t = at(a_new, trial_point);
      if (!sufficient(t) || t.F >= lo.F) {
        hi = t;
      } else {
        if (curvature(t)) {
          out = std::move(trial_point);
          return true;
        }
        if (t.slope * (hi.a - lo.a) >= 0) hi = lo;
        lo = t;
        lo_point = trial_point;
      }
    }
    if (lo.a > 0 && lo.F < p0.F) {
      out = std::move(lo_point);
      return true;
    }
    return false;
  }

  // The minimizer of the cubic through two trials' values and slopes (NaN when it has none).
  template <typename Trial>
  static double cubic_minimizer(const Trial& p, const Trial& q) {
    const double d1 = p.slope + q.slope - 3.0 * (p.F - q.F) / (p.a - q.a);
    const double disc = d1 * d1 - p.slope * q.slope;
    if (!(disc >= 0)) return std::nan("");
    const double d2 = std::copysign(std::sqrt(disc), q.a - p.a);
    return q.a - (q.a - p.a) * (q.slope + d2 - d1) / (q.slope - p.slope + 2.0 * d2);
  }

  // OWL-QN's search: x + a d projected onto the orthant of the start (or of −pg where x_i = 0),
  // halving a until F decreases enough relative to the pseudo-gradient.
  bool backtrack(const Point& p0, const Vec& pg, const Vec& d, double a_init, Point& out) {
    constexpr double c1 = 1e-4;
    const std::size_t n = p0.x.size();
    Vec orthant(n);
    for (std::size_t i = 0; i < n; ++i)
      orthant[i] = p0.x[i] != 0 ? std::copysign(1.0, p0.x[i]) : (pg[i] != 0 ? std::copysign(1.0, -pg[i]) : 0.0);
    double a = a_init;
    for (int tries = 0; tries < options_.max_line_search; ++tries, a *= 0.5) {
      out.x.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        double v = p0.x[i] + a * d[i];
        if (l1(i) > 0 && v * orthant[i] <= 0) v = 0.0;  // crossing zero stops at zero
        out.x[i] = v;
      }
      evaluate(out);
      double predicted = 0.0;
      for (std::size_t i = 0; i < n; ++i) predicted += pg[i] * (out.x[i] - p0.x[i]);
      if (std::isfinite(out.F) && out.F <= p0.F + c1 * predicted && out.F < p0.F) return true;
    }
    return false;
  }

  const SmoothObjective& f_;
  const Vec& l1_;
  const QuasiNewtonOptions& options_;
  const bool has_l1_;
  std::deque<Pair> history_;
  int evaluations_ = 0;
};

}  // namespace

QuasiNewtonResult minimize_quasi_newton(const SmoothObjective& f, std::vector<double>& x, const std::vector<double>& l1,
                                        const QuasiNewtonOptions& options) {
  return Minimizer(f, l1, options).run(x);
}

}  // namespace gpuml::detail
