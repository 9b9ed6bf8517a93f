// L-BFGS and OWL-QN. References for the method (no code taken): Nocedal and Wright, Numerical
// Optimization, 2nd ed., algorithms 7.4 (two-loop recursion) and 3.5/3.6 (strong Wolfe line
// search with zoom); Andrew and Gao, "Scalable training of L1-regularized log-linear models"
// (ICML 2007) for the pseudo-gradient, the orthant projection and its backtracking search.
#include "linear_model/quasi_newton.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <deque>

#include "core/parallel.hpp"

namespace gpuml::detail {

namespace {

using Vec = std::vector<double>;

// The vector work of an iteration (a dozen passes over the variables, and twice the memory
// pairs) dominates when there are many variables and the objective runs on a GPU: it is split
// over the threads. Sums go by fixed chunks of kChunk, each over four lanes, added in chunk
// order: the same bits whatever the thread count.
class VectorOps {
 public:
  explicit VectorOps(int threads) : threads_(std::max(threads, 1)) {}

  // Σ_i term(i) for i < n.
  template <typename F>
  double sum(std::size_t n, F&& term) const {
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks <= 1) return chunk_sum(0, n, term);
    partial_.resize(chunks);
#pragma omp parallel for num_threads(threads_for(threads_, static_cast<int64_t>(n))) schedule(static)
    for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
      const std::size_t first = static_cast<std::size_t>(c) * kChunk;
      partial_[c] = chunk_sum(first, std::min(first + kChunk, n), term);
    }
    double s = 0.0;
    for (double v : partial_) s += v;
    return s;
  }

  double dot(const Vec& a, const Vec& b) const {
    const double* pa = a.data();
    const double* pb = b.data();
    return sum(a.size(), [=](std::size_t i) { return pa[i] * pb[i]; });
  }

  // out[p * bases.size() + b] = probes[p] · bases[b], every dot in one pass over the vectors
  // (each of length n), with the chunks and lanes of sum().
  void dots(const std::vector<const double*>& probes, const std::vector<const double*>& bases, std::size_t n,
            double* out) const {
    const std::size_t np = probes.size(), nb = bases.size(), width = np * nb, chunks = (n + kChunk - 1) / kChunk;
    if (width == 0) return;
    partial_.assign(std::max<std::size_t>(chunks, 1) * width, 0.0);
    double* partial = partial_.data();
#pragma omp parallel for num_threads(threads_for(threads_, static_cast<int64_t>(n * nb))) schedule(static)
    for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
      const std::size_t first = static_cast<std::size_t>(c) * kChunk, last = std::min(first + kChunk, n);
      for (std::size_t b = 0; b < nb; ++b)
        for (std::size_t p = 0; p < np; ++p)
          partial[c * width + p * nb + b] = chunk_dot(probes[p] + first, bases[b] + first, last - first);
    }
    for (std::size_t k = 0; k < width; ++k) {
      double v = 0.0;
      for (std::size_t c = 0; c < chunks; ++c) v += partial[c * width + k];
      out[k] = v;
    }
  }

  // max_i |term(i)| (max is exact: any split gives the same value).
  template <typename F>
  double max_abs(std::size_t n, F&& term) const {
    double m = 0.0;
#pragma omp parallel for num_threads(threads_for(threads_, static_cast<int64_t>(n))) schedule(static) reduction(max : m)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) m = std::max(m, std::abs(term(static_cast<std::size_t>(i))));
    return m;
  }
  double max_abs(const Vec& a) const {
    const double* pa = a.data();
    return max_abs(a.size(), [=](std::size_t i) { return pa[i]; });
  }

  // f(i) for every i < n, split over the threads (elementwise: no order to keep).
  template <typename F>
  void each(std::size_t n, F&& f) const {
#pragma omp parallel for num_threads(threads_for(threads_, static_cast<int64_t>(n))) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) f(static_cast<std::size_t>(i));
  }

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 13;

  // chunk_sum's lanes and order for Σ a_i b_i, written out so that it vectorizes.
  static double chunk_dot(const double* __restrict a, const double* __restrict b, std::size_t n) {
    double l0 = 0.0, l1 = 0.0, l2 = 0.0, l3 = 0.0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      l0 += a[i] * b[i];
      l1 += a[i + 1] * b[i + 1];
      l2 += a[i + 2] * b[i + 2];
      l3 += a[i + 3] * b[i + 3];
    }
    double s = (l0 + l1) + (l2 + l3);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
  }

  template <typename F>
  static double chunk_sum(std::size_t first, std::size_t last, F& term) {
    double lane[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t i = first;
    for (; i + 4 <= last; i += 4)
      for (std::size_t l = 0; l < 4; ++l) lane[l] += term(i + l);
    double s = (lane[0] + lane[1]) + (lane[2] + lane[3]);
    for (; i < last; ++i) s += term(i);
    return s;
  }

  int threads_;
  mutable Vec partial_;
};

// An evaluated point: the smooth value f, its gradient g and the whole objective F = f + L1 term.
struct Point {
  Vec x, g;
  double f = 0.0, F = 0.0;
};

// A correction pair, and its dot products with the kept pairs: dots[j] (j indexing the history,
// oldest first, this pair included) = {s·s_j, s·y_j, y·s_j, y·y_j}.
struct Pair {
  Vec s, y;
  double rho = 0.0;
  std::vector<std::array<double, 4>> dots;
  // u·v_j for u = s (which 0) or y (1) of this pair, v = s (j_which 0) or y (1) of pair j.
  double dot(int which, int j_which, std::size_t j) const { return dots[j][2 * which + j_which]; }
};

class Minimizer {
 public:
  Minimizer(const SmoothObjective& f, const Vec& l1, const QuasiNewtonOptions& options)
      : f_(f), l1_(l1), options_(options), has_l1_(std::any_of(l1.begin(), l1.end(), [](double v) { return v > 0; })),
        ops_(options.threads) {}

  QuasiNewtonResult run(Vec& x) {
    QuasiNewtonResult result;
    Point current;
    current.x = x;
    evaluate(current);
    Vec pg = pseudo_gradient(current);
    const double gtol = options_.xtol > 0 ? 0.0 : options_.gtol;
    result.converged = ops_.max_abs(pg) <= gtol;
    for (int iter = 0; iter < options_.max_iter && !result.converged && std::isfinite(current.F); ++iter) {
      Point next;
      if (!step(current, pg, next)) break;  // no progress along any descent direction
      ++result.n_iter;
      Vec next_pg = pseudo_gradient(next);
      remember(current, next, next_pg);
      const double decrease = (current.F - next.F) / std::max({std::abs(current.F), std::abs(next.F), 1.0});
      bool small_step = false;
      if (options_.xtol > 0) {
        const double change = ops_.max_abs(next.x.size(), [&](std::size_t i) { return next.x[i] - current.x[i]; });
        small_step = change <= options_.xtol * ops_.max_abs(next.x);
      }
      current = std::move(next);
      pg = std::move(next_pg);
      result.converged = ops_.max_abs(pg) <= gtol || decrease <= options_.ftol || small_step;
    }
    x = current.x;
    result.n_evaluations = evaluations_;
    result.objective = current.F;
    return result;
  }

 private:
  void evaluate(Point& p) {
    p.g.assign(p.x.size(), 0.0);
    p.f = f_(p.x, p.g);
    p.F = p.f;
    if (has_l1_) p.F += ops_.sum(p.x.size(), [&](std::size_t i) { return l1_[i] * std::abs(p.x[i]); });
    ++evaluations_;
  }

  double l1(std::size_t i) const { return has_l1_ ? l1_[i] : 0.0; }

  // The gradient of F where it exists; where x_i == 0 under an L1 weight, the one-sided
  // derivative that goes downhill, or 0 when neither side does (x_i = 0 is optimal there).
  Vec pseudo_gradient(const Point& p) const {
    Vec pg = p.g;
    if (!has_l1_) return pg;
    ops_.each(pg.size(), [&](std::size_t i) {
      const double w = l1_[i];
      if (w == 0) return;
      if (p.x[i] > 0) pg[i] = p.g[i] + w;
      else if (p.x[i] < 0) pg[i] = p.g[i] - w;
      else if (p.g[i] + w < 0) pg[i] = p.g[i] + w;
      else if (p.g[i] - w > 0) pg[i] = p.g[i] - w;
      else pg[i] = 0.0;
    });
    return pg;
  }

  // d = −H pg (pg: the one remember() was given last) by the two-loop recursion over the stored pairs (H0 = γ I, γ = sᵀy / yᵀy of the
  // newest pair), carried out on coefficients: every vector the recursion forms is a combination
  // of the pairs' s and y and of pg, so it runs on their dot products (kept for the pairs, one
  // pass for pg's) and d is formed in one last pass, instead of two passes per pair.
  Vec direction(const Vec& pg) const {
    const std::size_t m = history_.size(), n = pg.size();
    // Basis: s_0..s_{m-1}, y_0..y_{m-1} (oldest first), then pg; c: q's coefficients on it.
    std::vector<double> c(2 * m + 1, 0.0);
    c[2 * m] = 1.0;
    const std::vector<double>& with_pg = pg_dots_;  // remember() left pg's products with the pairs
    // u · q for u = s_k (which = 0) or y_k (which = 1).
    auto dot_q = [&](std::size_t k, int which) {
      double v = c[2 * m] * with_pg[which * m + k];
      for (std::size_t j = 0; j < m; ++j) v += c[j] * history_[k].dot(which, 0, j) + c[m + j] * history_[k].dot(which, 1, j);
      return v;
    };
    std::vector<double> alpha(m);
    for (std::size_t k = m; k-- > 0;) {
      alpha[k] = history_[k].rho * dot_q(k, 0);
      c[m + k] -= alpha[k];
    }
    if (m > 0) {
      const Pair& newest = history_.back();
      const double gamma = newest.dot(0, 1, m - 1) / newest.dot(1, 1, m - 1);
      for (double& v : c) v *= gamma;
    }
    for (std::size_t k = 0; k < m; ++k) c[k] += alpha[k] - history_[k].rho * dot_q(k, 1);
    // d = −q; OWL-QN keeps only the components that descend along −pg.
    std::vector<const double*> S, Y;
    for (const Pair& p : history_) S.push_back(p.s.data()), Y.push_back(p.y.data());
    Vec d(n);
    ops_.each(n, [&](std::size_t i) {
      double q = c[2 * m] * pg[i];
      for (std::size_t j = 0; j < m; ++j) q += c[j] * S[j][i] + c[m + j] * Y[j][i];
      d[i] = has_l1_ && l1(i) > 0 && -q * pg[i] >= 0 ? 0.0 : -q;
    });
    return d;
  }

  // One iteration's step from `from`: the quasi-Newton direction, or steepest descent with the
  // history dropped when that direction fails. False when neither makes progress.
  bool step(const Point& from, const Vec& pg, Point& to) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (attempt == 1) {
        if (history_.empty()) return false;
        history_.clear();
        pg_dots_.clear();
      }
      Vec d = direction(pg);
      const double slope = ops_.dot(pg, d);
      if (!(slope < 0)) {
        if (history_.empty()) return false;
        continue;
      }
      // Without curvature information, the first trial moves x by a unit length (as L-BFGS-B).
      const double a0 = history_.empty() ? std::min(1.0, 1.0 / std::sqrt(ops_.dot(d, d))) : 1.0;
      if (has_l1_ ? backtrack(from, pg, d, a0, to) : wolfe(from, d, slope, a0, to)) return true;
    }
    return false;
  }

  // Keeps the pair (to.x − from.x, to.g − from.g) unless its curvature is not positive, and the
  // dot products the next direction needs: the new pair's with every kept pair, and those of pg
  // (the pseudo-gradient at `to`) with every kept pair, all in one pass over the pairs.
  void remember(const Point& from, const Point& to, const Vec& pg) {
    const std::size_t n = pg.size(), m = history_.size() + 1;  // the pairs, the new one last
    Pair p;
    p.s.resize(n);
    p.y.resize(n);
    ops_.each(n, [&](std::size_t i) {
      p.s[i] = to.x[i] - from.x[i];
      p.y[i] = to.g[i] - from.g[i];
    });
    std::vector<const double*> bases;  // every pair's s, then every pair's y
    for (const Pair& q : history_) bases.push_back(q.s.data());
    bases.push_back(p.s.data());
    for (const Pair& q : history_) bases.push_back(q.y.data());
    bases.push_back(p.y.data());
    std::vector<double> out(3 * 2 * m);
    ops_.dots({p.s.data(), p.y.data(), pg.data()}, bases, n, out.data());
    // probe 0 s, 1 y (of the new pair), 2 pg; base_which 0 s, 1 y; k the pair.
    auto product = [&](int probe, int base_which, std::size_t k) { return out[probe * 2 * m + base_which * m + k]; };
    const double sy = product(0, 1, m - 1), yy = product(1, 1, m - 1);
    // Skip pairs without positive curvature (they would make H indefinite), and pairs when none are kept.
    const bool keep = options_.memory > 0 && sy > std::numeric_limits<double>::epsilon() * yy && yy != 0;
    if (keep) {
      p.rho = 1.0 / sy;
      for (std::size_t k = 0; k < m; ++k) {
        const std::array<double, 4> seen{product(0, 0, k), product(0, 1, k), product(1, 0, k), product(1, 1, k)};
        p.dots.push_back(seen);
        // The same products seen from pair k: s_k·s, s_k·y, y_k·s, y_k·y.
        if (k + 1 < m) history_[k].dots.push_back({seen[0], seen[2], seen[1], seen[3]});
      }
      history_.push_back(std::move(p));
    }
    const std::size_t first = keep && static_cast<int>(history_.size()) > options_.memory ? 1 : 0;
    if (first) {
      history_.pop_front();
      for (Pair& q : history_) q.dots.erase(q.dots.begin());
    }
    pg_dots_.clear();  // pg·s_k for the kept pairs, then pg·y_k
    const std::size_t last = keep ? m : m - 1;
    for (int which = 0; which < 2; ++which)
      for (std::size_t k = first; k < last; ++k) pg_dots_.push_back(product(2, which, k));
  }

  // Strong Wolfe conditions (c1 = 1e-4, c2 = 0.9): bracket by doubling, then zoom by safeguarded
  // cubic interpolation. Falls back to the best point with sufficient decrease when the budget
  // runs out: the lowest, or, where no trial went below p0.F, one at p0.F exactly that passed the
  // test (see `level` below).
  bool wolfe(const Point& p0, const Vec& d, double slope0, double a_init, Point& out) {
    constexpr double c1 = 1e-4, c2 = 0.9;
    struct Trial {
      double a, F, slope;
    };
    auto at = [&](double a, Point& p) {
      p.x.resize(p0.x.size());
      ops_.each(p.x.size(), [&](std::size_t i) { p.x[i] = p0.x[i] + a * d[i]; });
      evaluate(p);
      return Trial{a, p.F, ops_.dot(p.g, d)};
    };
    auto sufficient = [&](const Trial& t) { return std::isfinite(t.F) && t.F <= p0.F + c1 * t.a * slope0; };
    auto curvature = [&](const Trial& t) { return std::abs(t.slope) <= -c2 * slope0; };

    Trial lo{0.0, p0.F, slope0}, hi{0.0, 0.0, 0.0};
    Point lo_point;  // the evaluated point at lo.a (when lo.a > 0)
    Point trial_point;
    // At the objective's rounding floor (the decrease d can still give is below F's rounding
    // error), no trial goes below p0.F, but some land on it exactly and pass the sufficient
    // decrease test, c1 a slope0 being lost in p0.F's rounding. L-BFGS-B (scipy's, scikit-learn's
    // lbfgs) accepts such a step, whose zero reduction then meets its ftol rule: converged. The
    // zoom keeps them as hi (not below lo = p0); the farthest is kept here, for the fallback.
    Point level_point;
    double level_a = 0.0;
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
        if (lo.a == 0 && sufficient(t) && t.a > level_a) {  // then t.F == p0.F
          level_a = t.a;
          level_point = trial_point;
        }
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
    // lo passed the sufficient decrease test when lo.a > 0: below p0.F, or at it exactly (as
    // level_point) when c1 a slope0 is lost in the rounding. Either is a step; one of zero
    // reduction makes run() stop on ftol, converged.
    if (lo.a > 0) {
      out = std::move(lo_point);
      return true;
    }
    if (level_a > 0) {
      out = std::move(level_point);
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
  // halving a until F decreases enough relative to the pseudo-gradient; an accepted trial that went
  // far past the minimum along the step is pulled back inside (inside_overshoot).
  bool backtrack(const Point& p0, const Vec& pg, const Vec& d, double a_init, Point& out) {
    constexpr double c1 = 1e-4;
    const std::size_t n = p0.x.size();
    Vec orthant(n);
    ops_.each(n, [&](std::size_t i) {
      orthant[i] = p0.x[i] != 0 ? std::copysign(1.0, p0.x[i]) : (pg[i] != 0 ? std::copysign(1.0, -pg[i]) : 0.0);
    });
    double a = a_init;
    Point level;  // the first trial that passed the test at F == p0.F exactly (as in wolfe())
    bool has_level = false;
    for (int tries = 0; tries < options_.max_line_search; ++tries, a *= 0.5) {
      out.x.resize(n);
      ops_.each(n, [&](std::size_t i) {
        const double v = p0.x[i] + a * d[i];
        out.x[i] = l1(i) > 0 && v * orthant[i] <= 0 ? 0.0 : v;  // crossing zero stops at zero
      });
      evaluate(out);
      const double predicted = ops_.sum(n, [&](std::size_t i) { return pg[i] * (out.x[i] - p0.x[i]); });
      const bool sufficient = std::isfinite(out.F) && out.F <= p0.F + c1 * predicted;
      if (sufficient && out.F < p0.F) {
        inside_overshoot(p0, orthant, predicted, out);
        return true;
      }
      if (sufficient && out.F == p0.F && !has_level) {
        level = out;
        has_level = true;
      }
    }
    if (has_level) {  // no trial went below p0.F: a step of zero reduction, which run() counts as converged (ftol)
      out = std::move(level);
      return true;
    }
    return false;
  }

  // The sufficient decrease test alone accepts a trial up to ~2x past the minimum of F along the
  // step, where F is back near p0.F: a step of almost no decrease, which the ftol rule then takes
  // for convergence however far the minimum is (L-BFGS's strong Wolfe search, as L-BFGS-B's,
  // rejects those by its curvature condition). On the segment p0.x -> out.x, which stays in the
  // closed orthant, F is smooth: f plus Σ l1_i orthant_i x_i. Where its slope at out.x is
  // positive beyond c2 = 0.9 of its slope at p0.x (slope0 = pg · s = `predicted`), the minimum
  // lies inside: one cubic interpolation step there, kept if it is lower than out.
  void inside_overshoot(const Point& p0, const Vec& orthant, double slope0, Point& out) {
    constexpr double c2 = 0.9;
    const std::size_t n = p0.x.size();
    const double slope1 = ops_.sum(n, [&](std::size_t i) {
      return (out.g[i] + l1(i) * orthant[i]) * (out.x[i] - p0.x[i]);
    });
    if (!(slope0 < 0) || !(slope1 > -c2 * slope0) || !std::isfinite(out.F)) return;
    struct Trial {
      double a, F, slope;
    };
    double t = cubic_minimizer(Trial{0.0, p0.F, slope0}, Trial{1.0, out.F, slope1});
    if (!(t > 0.1 && t < 0.9)) t = std::clamp(slope0 / (slope0 - slope1), 0.1, 0.9);  // the secant's zero
    Point inside;
    inside.x.resize(n);
    ops_.each(n, [&](std::size_t i) { inside.x[i] = p0.x[i] + t * (out.x[i] - p0.x[i]); });
    evaluate(inside);
    if (inside.F < out.F) out = std::move(inside);
  }

  const SmoothObjective& f_;
  const Vec& l1_;
  const QuasiNewtonOptions& options_;
  const bool has_l1_;
  const VectorOps ops_;
  std::deque<Pair> history_;
  std::vector<double> pg_dots_;  // the last pg's dot products with the pairs' s, then their y
  int evaluations_ = 0;
};

}  // namespace

QuasiNewtonResult minimize_quasi_newton(const SmoothObjective& f, std::vector<double>& x, const std::vector<double>& l1,
                                        const QuasiNewtonOptions& options) {
  return Minimizer(f, l1, options).run(x);
}

}  // namespace gpuml::detail
