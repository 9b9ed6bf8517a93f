// The CUDA sparse primitives (cuda/core/sparse.cu) against the CPU's (src/core/sparse_cpu.cpp),
// primitive by primitive, on fresh random matrices with duplicates, unsorted indices, explicit
// zeros and empty rows and columns (tests/cpp/random_sparse.hpp): CSR and CSC, int32 and int64
// indices, float and double, host and device input, values of the other float dtype (converted
// on the device). Also: the same errors as the CPU for a bad matrix, and the same bits from
// repeated calls. Skipped without a GPU.
//
// The backends are internal: this file reaches them through src/core/sparse_backend.hpp (the
// factories and detail::copy_bytes are exported for it). Both backends take the dense blocks in
// their own memory: host pointers for the CPU matrix, device pointers for the CUDA one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../backend_test_util.hpp"
#include "../../../src/core/sparse_backend.hpp"
#include "random_sparse.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::to_device;
using test::to_host;

// Relative to the sum of the absolute terms of each output: both backends sum at most ~80 terms
// (the sizes below) in T in different orders, so they differ by at most ~2 * 80 * eps(T) of it:
// 1e-5 for float (eps 6e-8), 1e-12 for double (eps 1.1e-16, a wide margin).
template <typename T>
constexpr double kRelTol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <typename T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

// A random matrix as given to both backends: host arrays with values of V, and their device copies.
template <typename I, typename V>
struct Input {
  test::RandomSparse<I> m;
  std::vector<V> values;
  Buffer indptr_dev, indices_dev, values_dev;

  Input(Context& gpu, test::RandomSparse<I> m_) : m(std::move(m_)), values(m.values.begin(), m.values.end()) {
    indptr_dev = to_device(gpu, m.indptr);
    indices_dev = to_device(gpu, m.indices);
    values_dev = to_device(gpu, values);
  }
  SparseView host_view() const {
    SparseView v = m.view();
    v.dtype = dtype_of<V>::value;
    v.values = values.data();
    return v;
  }
  SparseView device_view(const Context& gpu) const {
    SparseView v = host_view();
    v.device = gpu.device();
    v.indptr = indptr_dev.data();
    v.indices = indices_dev.data();
    v.values = values_dev.data();
    return v;
  }
  // The dense matrix as T (the values rounded to T one by one, then duplicates summed), for scales.
  double abs_at(int64_t i, int64_t j) const { return std::abs(m.dense[static_cast<std::size_t>(i * m.cols + j)]); }
};

std::vector<double> random_values(std::mt19937_64& rng, std::size_t count, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(count);
  for (auto& x : v) x = u(rng);
  return v;
}

// |a - b| <= tol * scale for every entry; reports the first 10 misses.
void expect_close(const std::vector<double>& gpu, const std::vector<double>& cpu, const std::vector<double>& scale, double tol,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  int reported = 0;
  for (std::size_t e = 0; e < cpu.size(); ++e)
    if (!(std::abs(gpu[e] - cpu[e]) <= tol * scale[e] + std::numeric_limits<double>::min()) && reported++ < 10)
      ADD_FAILURE() << what << " entry " << e << ": cuda " << gpu[e] << ", cpu " << cpu[e] << ", tolerance " << tol * scale[e];
}

template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Every primitive of the CUDA matrix built from `X_gpu` against the CPU matrix of `X_cpu` (the
// same matrix with values of T in host memory).
template <typename T, typename I, typename V>
void compare(Context& gpu, std::mt19937_64& rng, const Input<I, V>& in, const SparseView& X_gpu) {
  const Context cpu = Context::cpu();
  const int64_t n = in.m.rows, d = in.m.cols;
  const std::vector<T> values_t(in.values.begin(), in.values.end());  // V, then T: what the GPU converts
  SparseView X_cpu = in.host_view();
  X_cpu.dtype = dtype_of<T>::value;
  X_cpu.values = values_t.data();
  auto host = detail::make_sparse_cpu_matrix<T>(cpu, X_cpu, "X");
  auto dev = detail::make_sparse_cuda_matrix<T>(gpu, X_gpu, "X");
  ASSERT_EQ(dev->rows(), n);
  ASSERT_EQ(dev->cols(), d);
  const double tol = kRelTol<T>;

  for (int64_t t : {1, 3})
    for (bool transpose : {false, true}) {
      // times: out (n x t) = X B with B d x t; transpose_times: out (d x t) = Xᵀ B with B n x t.
      SCOPED_TRACE(std::string(transpose ? "transpose_times" : "times") + ", t = " + std::to_string(t));
      const int64_t in_rows = transpose ? n : d, out_rows = transpose ? d : n;
      const std::vector<T> B = test::cast_vector<T>(random_values(rng, static_cast<std::size_t>(in_rows * t), -1.0, 1.0));
      std::vector<T> out_cpu(static_cast<std::size_t>(out_rows * t));
      Buffer B_dev = to_device(gpu, B), out_dev = to_device(gpu, std::vector<T>(out_cpu.size(), T(7)));
      if (transpose) {
        host->transpose_times(B.data(), t, out_cpu.data());
        dev->transpose_times(B_dev.as<T>(), t, out_dev.as<T>());
      } else {
        host->times(B.data(), t, out_cpu.data());
        dev->times(B_dev.as<T>(), t, out_dev.as<T>());
      }
      std::vector<double> scale(out_cpu.size(), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j)
          for (int64_t c = 0; c < t; ++c) {
            const int64_t from = transpose ? i : j, to = transpose ? j : i;
            scale[to * t + c] += in.abs_at(i, j) * std::abs(static_cast<double>(B[from * t + c]));
          }
      expect_close(widen(to_host<T>(gpu, out_dev, out_rows * t)), widen(out_cpu), scale, tol, "product");
    }

  {  // column_moments: sums relative to Σ|x|, squares (non-negative terms) relative to themselves.
    std::vector<double> s_cpu(d), q_cpu(d), s_gpu(d, -1.0), q_gpu(d, -1.0), abs_sum(d, 0.0);
    host->column_moments(s_cpu.data(), q_cpu.data());
    dev->column_moments(s_gpu.data(), q_gpu.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) abs_sum[j] += in.abs_at(i, j);
    expect_close(s_gpu, s_cpu, abs_sum, tol, "column sums");
    expect_close(q_gpu, q_cpu, q_cpu, tol, "column squares");
  }

  {  // row_squared_norms (non-negative terms): relative, in T.
    std::vector<T> r_cpu(n);
    host->row_squared_norms(r_cpu.data());
    Buffer r_dev = to_device(gpu, std::vector<T>(static_cast<std::size_t>(n), T(-1)));
    dev->row_squared_norms(r_dev.as<T>());
    const std::vector<double> r = widen(r_cpu);
    expect_close(widen(to_host<T>(gpu, r_dev, n)), r, r, tol, "row squared norms");
  }

  for (bool weighted : {false, true}) {  // weighted_gram: relative to Σ_i w_i |x_ij| |x_ik|; exactly symmetric.
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    const std::vector<T> w = test::cast_vector<T>(random_values(rng, static_cast<std::size_t>(n), 0.1, 2.0));
    const T* w_host = weighted ? w.data() : nullptr;
    std::vector<double> g_cpu(static_cast<std::size_t>(d * d)), g_gpu(static_cast<std::size_t>(d * d), -1.0);
    host->weighted_gram(w_host, g_cpu.data());
    dev->weighted_gram(w_host, g_gpu.data());
    std::vector<double> scale(static_cast<std::size_t>(d * d), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j)
        for (int64_t k = 0; k < d; ++k)
          scale[j * d + k] += (weighted ? static_cast<double>(w[i]) : 1.0) * in.abs_at(i, j) * in.abs_at(i, k);
    expect_close(g_gpu, g_cpu, scale, tol, "weighted gram");
    for (int64_t j = 0; j < d; ++j)
      for (int64_t k = 0; k < j; ++k) ASSERT_EQ(g_gpu[j * d + k], g_gpu[k * d + j]) << "gram not symmetric at " << j << ", " << k;
  }

  {  // dense_rows: exact (both backends hold the same canonical values: each duplicate pair
     // summed once in T, and addition of two values is commutative).
    std::vector<int64_t> rows = {n - 1, 0, 1, n / 2, 0};  // row 1 is empty; repeats allowed
    const int64_t m = static_cast<int64_t>(rows.size());
    std::vector<T> o_cpu(static_cast<std::size_t>(m * d)), o_gpu(static_cast<std::size_t>(m * d), T(7));
    host->dense_rows(rows.data(), m, o_cpu.data());
    dev->dense_rows(rows.data(), m, o_gpu.data());
    EXPECT_EQ(o_gpu, o_cpu);
    rows[2] = n;  // out of range: the CPU's error
    GPUML_EXPECT_ERROR(dev->dense_rows(rows.data(), m, o_gpu.data()), ErrorCode::invalid_argument);
  }

  for (bool weighted : {false, true}) {  // grouped_row_sums: relative to Σ_{i in g} w_i |x_ij|; weights relative.
    SCOPED_TRACE(weighted ? "weighted groups" : "unweighted groups");
    const int64_t k = 4;  // group 3 stays empty
    std::vector<int32_t> groups(static_cast<std::size_t>(n));
    for (auto& g : groups) g = static_cast<int32_t>(rng() % 3);
    const std::vector<T> w = test::cast_vector<T>(random_values(rng, static_cast<std::size_t>(n), 0.1, 2.0));
    std::vector<double> s_cpu(static_cast<std::size_t>(k * d)), gw_cpu(k), s_gpu(static_cast<std::size_t>(k * d), -1.0), gw_gpu(k, -1.0);
    host->grouped_row_sums(groups.data(), weighted ? w.data() : nullptr, k, s_cpu.data(), gw_cpu.data());
    Buffer groups_dev = to_device(gpu, groups), w_dev = to_device(gpu, w);
    dev->grouped_row_sums(groups_dev.as<int32_t>(), weighted ? w_dev.as<T>() : nullptr, k, s_gpu.data(), gw_gpu.data());
    std::vector<double> scale(static_cast<std::size_t>(k * d), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j)
        scale[groups[i] * d + j] += (weighted ? static_cast<double>(w[i]) : 1.0) * in.abs_at(i, j);
    expect_close(s_gpu, s_cpu, scale, tol, "grouped sums");
    expect_close(gw_gpu, gw_cpu, gw_cpu, tol, "group weights");
  }
}

// Every case of one T and I: both formats, several densities (0: no entries at all), host and
// device input, values of T and of the other float dtype.
template <typename T, typename I>
void check_all(Context& gpu, std::mt19937_64& rng) {
  for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc})
    for (double density : {0.0, 0.05, 0.3, 0.9}) {
      const int64_t rows = test::uniform_int(rng, 20, 80), cols = test::uniform_int(rng, 5, 40);
      SCOPED_TRACE(std::string(type_name<T>()) + (sizeof(I) == 4 ? " int32" : " int64") +
                   (format == SparseFormat::csr ? " CSR " : " CSC ") + std::to_string(rows) + " x " + std::to_string(cols) +
                   " density " + std::to_string(density));
      const test::RandomSparse<I> m = test::random_sparse<I>(rng, rows, cols, density, format, 0.1);
      {
        const Input<I, T> same(gpu, m);
        SCOPED_TRACE("host input");
        compare<T>(gpu, rng, same, same.host_view());
      }
      {
        const Input<I, T> same(gpu, m);
        SCOPED_TRACE("device input");
        compare<T>(gpu, rng, same, same.device_view(gpu));
      }
      {
        // Values of the other dtype, converted on the device; the CPU gets them rounded to T on the host.
        using Other = std::conditional_t<std::is_same_v<T, float>, double, float>;
        const Input<I, Other> other(gpu, m);
        SCOPED_TRACE(std::string("device input of ") + type_name<Other>());
        compare<T>(gpu, rng, other, other.device_view(gpu));
      }
    }
}

TEST(SparseGpu, PrimitivesMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  check_all<float, int32_t>(gpu, rng);
  check_all<float, int64_t>(gpu, rng);
  check_all<double, int32_t>(gpu, rng);
  check_all<double, int64_t>(gpu, rng);
}

// A larger matrix with long lines and many duplicates per line (the sort path with runs of more
// than two entries): the products against the CPU.
TEST(SparseGpu, ManyDuplicatesMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 300, d = 20, per_row = 60;
  test::RandomSparse<int64_t> m;
  m.rows = n;
  m.cols = d;
  m.dense.assign(static_cast<std::size_t>(n * d), 0.0);
  m.indptr.push_back(0);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = 0; e < (i % 7 == 3 ? 0 : per_row); ++e) {
      const int64_t j = static_cast<int64_t>(rng() % d);
      const double v = value(rng);
      m.indices.push_back(j);
      m.values.push_back(v);
      m.dense[static_cast<std::size_t>(i * d + j)] += v;
    }
    m.indptr.push_back(static_cast<int64_t>(m.indices.size()));
  }
  const Context cpu = Context::cpu();
  auto host = detail::make_sparse_cpu_matrix<double>(cpu, m.view(), "X");
  auto dev = detail::make_sparse_cuda_matrix<double>(gpu, m.view(), "X");
  // dense_rows of every row: the duplicates (about 3 per entry) summed in the caller's order in
  // double by both: equal within 1e-12 of the sum of their absolute values (at most 60 terms).
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i;
  std::vector<double> o_cpu(static_cast<std::size_t>(n * d)), o_gpu(static_cast<std::size_t>(n * d));
  host->dense_rows(rows.data(), n, o_cpu.data());
  dev->dense_rows(rows.data(), n, o_gpu.data());
  std::vector<double> scale(static_cast<std::size_t>(n * d), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = m.indptr[i]; k < m.indptr[i + 1]; ++k) scale[i * d + m.indices[k]] += std::abs(m.values[k]);
  expect_close(o_gpu, o_cpu, scale, 1e-12, "dense rows");
  const std::vector<double> B = random_values(rng, static_cast<std::size_t>(d * 2), -1.0, 1.0);
  std::vector<double> p_cpu(static_cast<std::size_t>(n * 2));
  host->times(B.data(), 2, p_cpu.data());
  Buffer B_dev = to_device(gpu, B), p_dev = to_device(gpu, std::vector<double>(static_cast<std::size_t>(n * 2)));
  dev->times(B_dev.as<double>(), 2, p_dev.as<double>());
  std::vector<double> p_scale(static_cast<std::size_t>(n * 2), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = m.indptr[i]; k < m.indptr[i + 1]; ++k)
      for (int64_t c = 0; c < 2; ++c) p_scale[i * 2 + c] += std::abs(m.values[k] * B[m.indices[k] * 2 + c]);
  expect_close(to_host<double>(gpu, p_dev, n * 2), p_cpu, p_scale, 1e-12, "times");
}

// A bad matrix gets the CPU's error, word for word, from host and from device input.
template <typename I>
void expect_same_error(Context& gpu, const std::vector<I>& indptr, const std::vector<I>& indices,
                       const std::vector<double>& values, int64_t rows, int64_t cols, SparseFormat format, const std::string& label) {
  SCOPED_TRACE(label + (sizeof(I) == 4 ? " int32" : " int64") + (format == SparseFormat::csr ? " CSR" : " CSC"));
  test::RandomSparse<I> bad;
  bad.rows = rows;
  bad.cols = cols;
  bad.format = format;
  bad.indptr = indptr;
  bad.indices = indices;
  bad.values = values;
  const SparseView X = bad.view();
  std::string expected;
  try {
    detail::make_sparse_cpu_matrix<double>(Context::cpu(), X, "X");
    FAIL() << "the CPU accepted the matrix";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    expected = e.what();
  }
  Buffer p = to_device(gpu, indptr), i = to_device(gpu, indices), v = to_device(gpu, values);
  SparseView on_device = X;
  on_device.device = gpu.device();
  on_device.indptr = p.data();
  on_device.indices = i.data();
  on_device.values = v.data();
  for (const SparseView& given : {X, on_device}) {
    try {
      detail::make_sparse_cuda_matrix<double>(gpu, given, "X");
      ADD_FAILURE() << "CUDA accepted the matrix (" << (given.device.is_cuda() ? "device" : "host") << " input)";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_EQ(std::string(e.what()), expected) << (given.device.is_cuda() ? "device" : "host") << " input";
    }
  }
}

template <typename I>
void check_errors(Context& gpu) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
    // 4 lines over 5: a valid base to spoil.
    const std::vector<I> indptr = {0, 2, 2, 5, 6}, indices = {1, 0, 4, 4, 2, 3};
    const std::vector<double> values = {1, 2, 3, 4, 5, 6};
    const int64_t rows = format == SparseFormat::csr ? 4 : 5, cols = format == SparseFormat::csr ? 5 : 4;
    expect_same_error<I>(gpu, {1, 2, 2, 5, 6}, indices, values, rows, cols, format, "indptr[0] != 0");
    expect_same_error<I>(gpu, {0, 3, 2, 5, 4}, indices, values, rows, cols, format, "indptr decreasing twice");
    expect_same_error<I>(gpu, {0, 2, 2, 5, 5}, indices, values, rows, cols, format, "indptr[last] != nnz");
    expect_same_error<I>(gpu, indptr, {1, 0, 5, 4, -1, 3}, values, rows, cols, format, "indices out of range");
    expect_same_error<I>(gpu, indptr, indices, {1, 2, inf, nan, 5, nan}, rows, cols, format, "infinite first");
    expect_same_error<I>(gpu, indptr, indices, {1, nan, inf, 4, 5, 6}, rows, cols, format, "NaN first");
    // Several problems at once: the first in the order of the checks (indices before values).
    expect_same_error<I>(gpu, indptr, {1, 0, 4, 9, 2, 3}, {nan, 2, 3, 4, 5, 6}, rows, cols, format, "index and value");
  }
}

TEST(SparseGpu, BadMatrixGetsTheCpuError) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  check_errors<int32_t>(gpu);
  check_errors<int64_t>(gpu);
}

// The same inputs give the same bits: twice from one matrix, and from a second matrix built
// from the same input.
template <typename T, typename I>
void check_deterministic(Context& gpu, std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(type_name<T>()) + (sizeof(I) == 4 ? " int32" : " int64"));
  const int64_t n = 500, d = 60, t = 4, k = 5;
  const Input<I, T> in(gpu, test::random_sparse<I>(rng, n, d, 0.2, SparseFormat::csr, 0.1));
  const std::vector<T> B = test::cast_vector<T>(random_values(rng, static_cast<std::size_t>(std::max(n, d) * t), -1.0, 1.0));
  const std::vector<T> w = test::cast_vector<T>(random_values(rng, static_cast<std::size_t>(n), 0.1, 2.0));
  std::vector<int32_t> groups(n);
  for (auto& g : groups) g = static_cast<int32_t>(rng() % k);
  Buffer B_dev = to_device(gpu, B), w_dev = to_device(gpu, w), groups_dev = to_device(gpu, groups);
  // Everything one matrix returns, as bytes.
  auto run = [&](detail::SparseMatrix<T>& X) {
    std::vector<unsigned char> bytes;
    auto add = [&](const void* p, std::size_t count) {
      bytes.insert(bytes.end(), static_cast<const unsigned char*>(p), static_cast<const unsigned char*>(p) + count);
    };
    Buffer out = to_device(gpu, std::vector<T>(static_cast<std::size_t>(std::max(n, d) * t)));
    X.times(B_dev.as<T>(), t, out.as<T>());
    const std::vector<T> a = to_host<T>(gpu, out, n * t);
    add(a.data(), a.size() * sizeof(T));
    X.transpose_times(B_dev.as<T>(), t, out.as<T>());
    const std::vector<T> b = to_host<T>(gpu, out, d * t);
    add(b.data(), b.size() * sizeof(T));
    std::vector<double> s(d), q(d), g(static_cast<std::size_t>(d * d)), sums(static_cast<std::size_t>(k * d)), gw(k);
    X.column_moments(s.data(), q.data());
    X.weighted_gram(w.data(), g.data());
    X.grouped_row_sums(groups_dev.as<int32_t>(), w_dev.as<T>(), k, sums.data(), gw.data());
    for (const auto* v : {&s, &q, &g, &sums, &gw}) add(v->data(), v->size() * sizeof(double));
    X.row_squared_norms(out.as<T>());
    const std::vector<T> r = to_host<T>(gpu, out, n);
    add(r.data(), r.size() * sizeof(T));
    return bytes;
  };
  auto first = detail::make_sparse_cuda_matrix<T>(gpu, in.device_view(gpu), "X");
  auto second = detail::make_sparse_cuda_matrix<T>(gpu, in.host_view(), "X");
  const std::vector<unsigned char> one = run(*first), two = run(*first), three = run(*second);
  EXPECT_TRUE(one == two) << "two calls on one matrix differ";
  EXPECT_TRUE(one == three) << "a second matrix from the same input differs";
}

TEST(SparseGpu, SameInputsSameBits) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  check_deterministic<float, int32_t>(gpu, rng);
  check_deterministic<double, int64_t>(gpu, rng);
}

}  // namespace
}  // namespace gpuml
