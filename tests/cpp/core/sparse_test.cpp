// SparseView's checks and canonical form (gpuml/core/sparse.hpp) against a dense reference, on
// fresh random matrices with duplicates, unsorted indices, explicit zeros and empty lines, in both
// formats and both index widths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gpuml/gpuml.hpp"
#include "random_sparse.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

// A messy CSR / CSC matrix (5 to 24 rows and columns, 10% of the entries explicit zeros) and the
// dense matrix it stands for.
template <typename I>
using Messy = test::RandomSparse<I>;

template <typename I>
Messy<I> make_messy(std::mt19937_64& rng, SparseFormat format) {
  const int64_t rows = 5 + static_cast<int64_t>(rng() % 20), cols = 5 + static_cast<int64_t>(rng() % 20);
  return test::random_sparse<I>(rng, rows, cols, 0.3, format, 0.1);
}

template <typename I>
void check_canonical(const Messy<I>& m) {
  const Context ctx = Context::cpu();
  const SparseHostMatrix c = canonicalize(ctx, m.view());
  const SparseView v = c.view();
  ASSERT_EQ(v.format, m.format);
  ASSERT_EQ(v.index_dtype, dtype_of<I>::value);
  const bool csr = m.format == SparseFormat::csr;
  const auto* indptr = static_cast<const I*>(v.indptr);
  const auto* indices = static_cast<const I*>(v.indices);
  const auto* values = static_cast<const double*>(v.values);
  std::vector<double> rebuilt(m.dense.size(), 0.0);
  EXPECT_EQ(indptr[0], 0);
  EXPECT_EQ(static_cast<int64_t>(indptr[v.major()]), v.nnz);
  for (int64_t i = 0; i < v.major(); ++i)
    for (I k = indptr[i]; k < indptr[i + 1]; ++k) {
      if (k > indptr[i]) EXPECT_LT(indices[k - 1], indices[k]) << "line " << i;  // sorted, no duplicates
      rebuilt[static_cast<std::size_t>(csr ? i * m.cols + indices[k] : indices[k] * m.cols + i)] = values[k];
    }
  // Duplicates are summed in their order of appearance, as the reference adds them: the same
  // bits up to the order of two additions (1 ulp of the larger terms, 3 is the bound's margin).
  for (std::size_t e = 0; e < rebuilt.size(); ++e)
    EXPECT_NEAR(rebuilt[e], m.dense[e], 1e-15 * 3 * 3.0) << "entry " << e;
  // Explicit zeros are kept: nnz counts every distinct stored position.
  std::vector<char> stored(m.dense.size(), 0);
  const int64_t minor = csr ? m.cols : m.rows;
  for (int64_t i = 0; i < v.major(); ++i)
    for (I k = m.indptr[i]; k < m.indptr[i + 1]; ++k)
      stored[static_cast<std::size_t>(i * minor + m.indices[k])] = 1;
  EXPECT_EQ(v.nnz, std::count(stored.begin(), stored.end(), 1));
}

TEST(Sparse, CanonicalFormMatchesDenseReference) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 5; ++trial) {
    for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
      check_canonical(make_messy<int32_t>(rng, format));
      check_canonical(make_messy<int64_t>(rng, format));
    }
  }
}

template <typename F>
void expect_invalid(F&& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Sparse, ValidationNamesTheProblem) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Messy<int64_t> m = make_messy<int64_t>(rng, SparseFormat::csr);
  ASSERT_GT(m.values.size(), 3u);
  validate_sparse(m.view());  // the good one passes
  {
    Messy<int64_t> bad = m;
    bad.indptr[0] = 1;
    expect_invalid([&] { validate_sparse(bad.view()); }, "indptr[0]");
  }
  {
    Messy<int64_t> bad = m;
    bad.indptr[3] = bad.indptr[4] + 1;
    expect_invalid([&] { validate_sparse(bad.view()); }, "non-decreasing");
  }
  {
    Messy<int64_t> bad = m;
    bad.indptr.back() += 1;  // (-1 would break monotonicity first when the last row is empty)
    expect_invalid([&] { validate_sparse(bad.view()); }, "does not match nnz");
  }
  {
    Messy<int64_t> bad = m;
    bad.indices[2] = bad.cols;
    expect_invalid([&] { validate_sparse(bad.view()); }, "out of range");
    bad.indices[2] = -1;
    expect_invalid([&] { validate_sparse(bad.view()); }, "out of range");
  }
  {
    Messy<int64_t> bad = m;
    bad.values[1] = std::numeric_limits<double>::quiet_NaN();
    expect_invalid([&] { validate_sparse(bad.view()); }, "NaN");
    bad.values[1] = std::numeric_limits<double>::infinity();
    expect_invalid([&] { validate_sparse(bad.view()); }, "infinite");
  }
  {
    SparseView v = m.view();
    v.indptr = nullptr;
    expect_invalid([&] { validate_sparse(v); }, "indptr is NULL");
    v = m.view();
    v.dtype = DType::int32;
    expect_invalid([&] { validate_sparse(v); }, "float32 or float64");
    v = m.view();
    v.index_dtype = DType::float64;
    expect_invalid([&] { validate_sparse(v); }, "int32 or int64");
  }
}

// Every registered estimator takes sparse X now; what stays refused is a method an estimator
// does not offer at all, sparse as dense: the Estimator defaults say unsupported, naming it.
TEST(Sparse, EstimatorsWithoutSparseSupportSayUnsupported) {
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const Messy<int32_t> m = make_messy<int32_t>(rng, SparseFormat::csr);
  Context ctx = Context::cpu();
  auto forest = make_estimator("random_forest_regressor", "{\"n_estimators\": 2}");
  EXPECT_TRUE(forest->accepts_sparse());
  std::vector<double> out(64);
  try {
    forest->transform_sparse(ctx, m.view(), make_view(out.data(), DType::float64, Device{}, 1));
    ADD_FAILURE() << "random_forest_regressor transformed sparse X";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("random_forest_regressor"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(make_estimator("truncated_svd", "{}")->accepts_sparse());
  EXPECT_TRUE(make_estimator("kmeans", "{}")->accepts_sparse());
}

}  // namespace
}  // namespace gpuml
