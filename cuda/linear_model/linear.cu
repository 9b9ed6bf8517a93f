// The CUDA backend of the least-squares family: the primitives of
// src/linear_model/linear_backend.hpp on the device (the algorithms live in src/linear_model).
//
// Layouts: every matrix the driver hands over is row-major. cuBLAS and cuSOLVER are
// column-major, so a row-major n x m matrix A is, as it sits in memory, the column-major m x n
// matrix A^T. The products below are written in those terms.
//
//  - weighted_means: fixed chunks of rows summed per column in double (rows ascending per lane,
//    then lanes ascending), then the chunks of each column added by a fixed-order tree. No
//    atomics: the same input gives the same bits on every run and device.
//  - gram: A is cut into P chunks of L rows; per chunk, cuBLAS forms the chunk's A_p^T A_p and
//    A_p^T B_p in T (pedantic math: no TF32) as strided-batched GEMMs, and a small kernel adds
//    the P partial products in double in chunk order. Chunking gives the GEMMs parallelism when
//    m is small and n large (a 256 x 256 result over a million rows), keeps float32 sums short
//    (L rows), and is deterministic. A^T A is symmetric: for m > kGramBlock only the blocks on
//    and above the block diagonal are multiplied (3/4 of the flops at m = 256).
//  - qr: cuSOLVER geqrf/ormqr need the column-major n x m matrix A, so A is first transposed
//    into a scratch buffer (and B likewise when t > 1; a single column is the same in both
//    layouts and is used in place). R is the upper triangle of the factored buffer's first m
//    rows, Q^T B the first m rows of the ormqr result. The transposed copy costs n * m
//    elements of scratch; cuSOLVER has no LQ factorization that would factor A^T in place.
//  - predict: out^T (column-major t x n) = coef (t x d) * X^T, one GEMM onto out pre-filled
//    with the intercept.
#include <algorithm>
#include <cstring>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/core/resources.cuh"
#include "cuda/core/kernel_util.cuh"
#include "cuda/linear_model/gram_tf32.cuh"
#include "cuda/linear_model/symmetric_eigen.cuh"
#include "gpuml/core/error.hpp"
#include "linear_model/linear_backend.hpp"

namespace gpuml::detail {
namespace {

// weighted_means: rows per chunk at least kMinChunkRows, and about kTargetChunks chunks.
constexpr int64_t kMinChunkRows = 512;
constexpr int64_t kTargetChunks = 1024;
// gram: about kGramChunks chunks of at least kMinGramRows rows, with the partial products
// (one m x m + m x t per chunk) kept under kGramPartialBytes where m allows.
constexpr int64_t kGramChunks = 256;
constexpr int64_t kMinGramRows = 1024;
constexpr std::size_t kGramPartialBytes = std::size_t(256) << 20;
// gram: above this many columns the product is formed in blocks of kGramBlock columns, the
// blocks below the diagonal skipped.
constexpr int64_t kGramBlock = 128;
constexpr int64_t kGramBlockedFrom = 192;
// cholesky: smaller matrices are factored on the host (the copies and the launch cost more).
constexpr int64_t kDeviceCholeskyFrom = 96;
// The largest symmetric eigenproblem for device_symmetric_eigen_top (its kernels keep 4 vectors
// of m doubles per block in shared memory).
constexpr int64_t kEigenTopMaxSize = 1024;
// right_triangular_solve: rows of A per GEMM into the scratch buffer (bounded in bytes; int rows).
constexpr int64_t kTriangularScratchBytes = int64_t(128) << 20;
// Transpose tiles.
constexpr int kTile = 32;


// ---- kernels -----------------------------------------------------------------------------

// Per chunk of rows [c * chunk_rows, min(n, (c + 1) * chunk_rows)) and column j < m:
// partials[j * n_chunks + c] = sum_i w_i A_ij, and partials[m * n_chunks + c] = sum_i w_i
// (w == nullptr: ones). Column-major partials so that the reduction reads them contiguously.
// Block: kWarp columns (a slab) x kRowLanes row lanes; grid: chunks x slabs (grid-stride).
// With `shift` (m doubles), the sums are of w_i (A_ij − shift_j); with `out`, the same pass also
// writes out_ij = sqrt(w_i) (A_ij − shift_j) rounded to T (out may alias A: same thread, same
// element, read then written; hence no __restrict__ on A and out).
template <typename T>
__global__ void __launch_bounds__(kWarp * kRowLanes) chunk_weighted_sums_kernel(const T* A, int64_t n, int64_t m,
                                                                               const T* __restrict__ w, int64_t chunk_rows,
                                                                               int64_t n_chunks, double* __restrict__ partials,
                                                                               const double* __restrict__ shift, T* out) {
  __shared__ double lane_sums[kRowLanes][kWarp];
  __shared__ double lane_weights[kRowLanes];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t n_slabs = ceil_div(m, kWarp);
  // Block-uniform loops: every thread reaches the same barriers.
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const int64_t begin = chunk * chunk_rows;
    const int64_t end = begin + chunk_rows < n ? begin + chunk_rows : n;
    for (int64_t slab = blockIdx.y; slab < n_slabs; slab += gridDim.y) {
      const int64_t col = slab * kWarp + tx;
      const bool in_range = col < m;
      const double c = shift && in_range ? shift[col] : 0.0;
      double acc = 0.0, acc_w = 0.0;
#pragma unroll 4
      for (int64_t row = begin + ty; row < end; row += kRowLanes) {
        const double wv = w ? static_cast<double>(w[row]) : 1.0;
        const double x = in_range ? static_cast<double>(A[row * m + col]) - c : 0.0;
        if (out && in_range) out[row * m + col] = static_cast<T>((w ? sqrt(wv) : 1.0) * x);
        acc += wv * x;
        acc_w += wv;
      }
      lane_sums[ty][tx] = acc;
      if (tx == 0) lane_weights[ty] = acc_w;
      __syncthreads();
      if (ty == 0 && in_range) {
        double total = lane_sums[0][tx];
        for (int y = 1; y < kRowLanes; ++y) total += lane_sums[y][tx];
        partials[col * n_chunks + chunk] = total;
      }
      if (slab == 0 && ty == 0 && tx == 0) {
        double total = lane_weights[0];
        for (int y = 1; y < kRowLanes; ++y) total += lane_weights[y];
        partials[m * n_chunks + chunk] = total;
      }
      __syncthreads();  // lane_sums is reused by the next slab
    }
  }
}

// The same sums (and optional shifted, scaled copy) for m <= kWarp * kCols, with the blocks
// striding over the rows together: block b takes rows b kRowLanes + y, then kInterleavedBlocks
// kRowLanes further on, and so on, so that at any moment the grid streams one contiguous stretch
// of A (as the plain centering kernel does: ~2.5 TB/s, where per-block chunks of rows reached
// half that). Each thread keeps the sums of its columns (x, x + 32, ...) in registers; the
// kRowLanes lanes of a block are added in a fixed order at the end. The grid is always
// kInterleavedBlocks blocks, so the partials, and the sums, do not depend on the device. `out`
// must not alias A (__restrict__ lets loads run ahead of the stores).
constexpr int kInterleavedBlocks = 1024;

template <typename T, int kCols>
__global__ void __launch_bounds__(kWarp * kRowLanes) interleaved_sums_kernel(const T* __restrict__ A, int64_t n, int64_t m,
                                                                            const T* __restrict__ w,
                                                                            double* __restrict__ partials,
                                                                            const double* __restrict__ shift,
                                                                            T* __restrict__ out) {
  __shared__ double lane_sums[kRowLanes][kWarp];
  __shared__ double lane_weights[kRowLanes];
  const int tx = threadIdx.x, ty = threadIdx.y;
  double acc[kCols], c[kCols];
#pragma unroll
  for (int k = 0; k < kCols; ++k) {
    const int64_t col = tx + int64_t(k) * kWarp;
    acc[k] = 0.0;
    c[k] = shift && col < m ? shift[col] : 0.0;
  }
  double acc_w = 0.0;
  for (int64_t row = int64_t(blockIdx.x) * kRowLanes + ty; row < n; row += int64_t(gridDim.x) * kRowLanes) {
    const double wv = w ? static_cast<double>(w[row]) : 1.0;
    const double scale = w ? sqrt(wv) : 1.0;
    const T* a = A + row * m;
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
      const int64_t col = tx + int64_t(k) * kWarp;
      if (col < m) {
        const double x = static_cast<double>(a[col]) - c[k];
        if (out) out[row * m + col] = static_cast<T>(scale * x);
        acc[k] += wv * x;
      }
    }
    acc_w += wv;
  }
  if (tx == 0) lane_weights[ty] = acc_w;
#pragma unroll
  for (int k = 0; k < kCols; ++k) {
    const int64_t col = tx + int64_t(k) * kWarp;
    lane_sums[ty][tx] = acc[k];
    __syncthreads();
    if (ty == 0 && col < m) {
      double total = lane_sums[0][tx];
      for (int y = 1; y < kRowLanes; ++y) total += lane_sums[y][tx];
      partials[col * gridDim.x + blockIdx.x] = total;
    }
    __syncthreads();  // lane_sums is reused by the next k
  }
  if (ty == 0 && tx == 0) {
    double total = lane_weights[0];
    for (int y = 1; y < kRowLanes; ++y) total += lane_weights[y];
    partials[m * gridDim.x + blockIdx.x] = total;
  }
}

// The same sums (and optional copy) for a single column (y): the columns kernels above give a
// warp's 32 lanes to 32 columns, so one column left 31 of them idle (~0.1 ms at a million rows).
// Threads stride over the rows; each block adds its threads by a fixed-order tree into partials
// slot blockIdx.x (column 0, then the weights); the grid is always kInterleavedBlocks blocks.
template <typename T>
__global__ void __launch_bounds__(kBlock) vector_sums_kernel(const T* __restrict__ A, int64_t n, const T* __restrict__ w,
                                                             double* __restrict__ partials, const double* __restrict__ shift,
                                                             T* __restrict__ out) {
  __shared__ double shared[kBlock];
  const double c = shift ? shift[0] : 0.0;
  double acc = 0.0, acc_w = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const double wv = w ? static_cast<double>(w[i]) : 1.0;
    const double x = static_cast<double>(A[i]) - c;
    if (out) out[i] = static_cast<T>((w ? sqrt(wv) : 1.0) * x);
    acc += wv * x;
    acc_w += wv;
  }
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
  __syncthreads();  // `shared` is reused
  const double total_w = block_sum(acc_w, shared);
  if (threadIdx.x == 0) partials[gridDim.x + blockIdx.x] = total_w;
}

// out[c] = sum over chunks of partials[c * n_chunks + chunk] for c < ncols: a block per column,
// each thread summing chunks t, t + kBlock, ... in order, then a fixed-order tree.
__global__ void __launch_bounds__(kBlock) reduce_chunks_kernel(const double* __restrict__ partials, int64_t n_chunks, int64_t ncols,
                                                               double* __restrict__ out) {
  __shared__ double shared[kBlock];
  for (int64_t c = blockIdx.x; c < ncols; c += gridDim.x) {  // block-uniform
    double acc = 0.0;
    for (int64_t k = threadIdx.x; k < n_chunks; k += kBlock) acc += partials[c * n_chunks + k];
    const double total = block_sum(acc, shared);
    if (threadIdx.x == 0) out[c] = total;
    __syncthreads();  // `shared` is reused by the next column
  }
}

// out_i = sqrt(w_i) * (A_i - means) in double, rounded to T (means/w may be nullptr). out may
// alias A: every element is read and then written by the same thread, hence no __restrict__.
template <typename T>
__global__ void __launch_bounds__(kWarp * kRowLanes) center_scale_kernel(const T* A, int64_t n, int64_t m, const double* __restrict__ means,
                                                                        const T* __restrict__ w, T* out) {
  // Block: blockDim.x columns (kWarp, or 1 for a single column) x blockDim.y rows.
  for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < n; row += int64_t(gridDim.x) * blockDim.y) {
    const double scale = w ? sqrt(static_cast<double>(w[row])) : 1.0;
    const T* a = A + row * m;
    T* o = out + row * m;
    for (int64_t col = threadIdx.x; col < m; col += blockDim.x) {
      double v = static_cast<double>(a[col]);
      if (means) v -= means[col];
      o[col] = static_cast<T>(scale * v);
    }
  }
}

// Sum of the P partial Gram matrices (each column-major m x m, P = slots, in slot order) into
// the row-major double m x m `out`, both triangles. Only entries with i <= j are read: the
// blocked products fill every block on and above the block diagonal, which covers them.
template <typename T>
__global__ void reduce_gram_kernel(const T* __restrict__ partials, int64_t slots, int64_t m, double* __restrict__ out) {
  const int64_t mm = m * m;
  for (int64_t idx = global_thread(); idx < mm; idx += grid_threads()) {
    const int64_t i = idx % m, j = idx / m;  // column-major (i, j)
    if (i > j) continue;
    double s = 0.0;
#pragma unroll 8
    for (int64_t p = 0; p < slots; ++p) s += static_cast<double>(partials[p * mm + idx]);
    out[i * m + j] = s;
    out[j * m + i] = s;
  }
}

// Sum of the P partial cross products (each column-major m x t) into the row-major double m x t `out`.
template <typename T>
__global__ void reduce_cross_kernel(const T* __restrict__ partials, int64_t slots, int64_t m, int64_t t, double* __restrict__ out) {
  const int64_t mt = m * t;
  for (int64_t idx = global_thread(); idx < mt; idx += grid_threads()) {
    const int64_t i = idx % m, c = idx / m;
    double s = 0.0;
#pragma unroll 8
    for (int64_t p = 0; p < slots; ++p) s += static_cast<double>(partials[p * mt + idx]);
    out[i * t + c] = s;
  }
}

// dst (column-major rows x cols, leading dimension rows) = src (row-major rows x cols), through
// shared-memory tiles so that both the reads and the writes are coalesced. Block: kTile x kRowLanes.
template <typename T>
__global__ void __launch_bounds__(kTile * kRowLanes) transpose_kernel(const T* __restrict__ src, int64_t rows, int64_t cols,
                                                                     T* __restrict__ dst) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on the transposed read
  const int64_t row_tiles = ceil_div(rows, kTile), col_tiles = ceil_div(cols, kTile);
  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {     // block-uniform
    for (int64_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {   // block-uniform
      const int64_t r0 = rt * kTile, c0 = ct * kTile;
      for (int y = threadIdx.y; y < kTile; y += kRowLanes) {
        const int64_t r = r0 + y, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[y][threadIdx.x] = src[r * cols + c];
      }
      __syncthreads();
      for (int y = threadIdx.y; y < kTile; y += kRowLanes) {
        const int64_t c = c0 + y, r = r0 + threadIdx.x;
        if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][y];
      }
      __syncthreads();  // the tile is refilled next
    }
  }
}

// out (row-major double rows x cols) = the top `rows` rows of the column-major src (leading
// dimension ld); with upper_only, entries below the diagonal are 0 (R of a QR factorization).
template <typename T>
__global__ void top_rows_kernel(const T* __restrict__ src, int64_t ld, int64_t rows, int64_t cols, bool upper_only,
                                double* __restrict__ out) {
  for (int64_t idx = global_thread(); idx < rows * cols; idx += grid_threads()) {
    const int64_t i = idx / cols, j = idx % cols;
    out[idx] = (upper_only && j < i) ? 0.0 : static_cast<double>(src[i + j * ld]);
  }
}

// out[r * t + c] = intercept[c] (intercept == nullptr: 0).
template <typename T>
__global__ void fill_intercept_kernel(T* __restrict__ out, int64_t n, int64_t t, const T* __restrict__ intercept) {
  for (int64_t idx = global_thread(); idx < n * t; idx += grid_threads()) out[idx] = intercept ? intercept[idx % t] : T(0);
}

// ---- library wrappers (float / double) ----------------------------------------------------

// C[b] = op(A[b]) op(B[b]) for b < batch (alpha 1, beta as given), column-major.
template <typename T>
void gemm_strided_batched(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const T* A,
                          int lda, long long stride_a, const T* B, int ldb, long long stride_b, T beta, T* C, int ldc,
                          long long stride_c, int batch) {
  const T one = 1;
  if constexpr (std::is_same_v<T, float>) {
    GPUML_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_a, op_b, m, n, k, &one, A, lda, stride_a, B, ldb, stride_b, &beta, C, ldc,
                                                 stride_c, batch));
  } else {
    GPUML_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op_a, op_b, m, n, k, &one, A, lda, stride_a, B, ldb, stride_b, &beta, C, ldc,
                                                 stride_c, batch));
  }
}

// Solves op(A) X = alpha B in place of B (left side), column-major.
template <typename T>
void trsm_left(cublasHandle_t handle, cublasFillMode_t uplo, cublasOperation_t op, int m, int n, const T* A, int lda, T* B, int ldb) {
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    GPUML_CUBLAS_CHECK(cublasStrsm(handle, CUBLAS_SIDE_LEFT, uplo, op, CUBLAS_DIAG_NON_UNIT, m, n, &one, A, lda, B, ldb));
  else
    GPUML_CUBLAS_CHECK(cublasDtrsm(handle, CUBLAS_SIDE_LEFT, uplo, op, CUBLAS_DIAG_NON_UNIT, m, n, &one, A, lda, B, ldb));
}

template <typename T>
int geqrf_buffer_size(cusolverDnHandle_t h, int rows, int cols, T* A, int lda) {
  int lwork = 0;
  if constexpr (std::is_same_v<T, float>)
    GPUML_CUSOLVER_CHECK(cusolverDnSgeqrf_bufferSize(h, rows, cols, A, lda, &lwork));
  else
    GPUML_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(h, rows, cols, A, lda, &lwork));
  return lwork;
}

template <typename T>
int ormqr_buffer_size(cusolverDnHandle_t h, int rows, int cols, int k, const T* A, int lda, const T* tau, const T* C, int ldc) {
  int lwork = 0;
  if constexpr (std::is_same_v<T, float>)
    GPUML_CUSOLVER_CHECK(cusolverDnSormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, rows, cols, k, A, lda, tau, C, ldc, &lwork));
  else
    GPUML_CUSOLVER_CHECK(cusolverDnDormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, rows, cols, k, A, lda, tau, C, ldc, &lwork));
  return lwork;
}

template <typename T>
void geqrf(cusolverDnHandle_t h, int rows, int cols, T* A, int lda, T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    GPUML_CUSOLVER_CHECK(cusolverDnSgeqrf(h, rows, cols, A, lda, tau, work, lwork, info));
  else
    GPUML_CUSOLVER_CHECK(cusolverDnDgeqrf(h, rows, cols, A, lda, tau, work, lwork, info));
}

// C = Q^T C, Q from geqrf's reflectors.
template <typename T>
void ormqr_qt(cusolverDnHandle_t h, int rows, int cols, int k, const T* A, int lda, const T* tau, T* C, int ldc, T* work, int lwork,
              int* info) {
  if constexpr (std::is_same_v<T, float>)
    GPUML_CUSOLVER_CHECK(cusolverDnSormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, rows, cols, k, A, lda, tau, C, ldc, work, lwork, info));
  else
    GPUML_CUSOLVER_CHECK(cusolverDnDormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, rows, cols, k, A, lda, tau, C, ldc, work, lwork, info));
}

// ---- the backend ---------------------------------------------------------------------------

template <typename T>
class CudaLinearBackend final : public LinearBackend<T> {
 public:
  explicit CudaLinearBackend(const Context& ctx) : ctx_(ctx) {}

  void weighted_means(const T* A, int64_t n, int64_t m, const T* w, double* means_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    if (n <= 0) {
      std::fill(means_host, means_host + m, 0.0);
      return;
    }
    std::vector<double> sums(m + 1);
    column_sums(res, A, n, m, w, nullptr, nullptr, sums.data());
    const double total_weight = w ? sums[m] : static_cast<double>(n);
    for (int64_t j = 0; j < m; ++j) means_host[j] = sums[j] / total_weight;
  }

  void center_scale(const T* A, int64_t n, int64_t m, const double* means_host, const T* w, T* out,
                    double* sums_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    if (n <= 0) {
      if (sums_host) std::fill(sums_host, sums_host + m + 1, 0.0);
      return;
    }
    Buffer means;
    if (means_host) means = to_device(res, means_host, m);
    const double* shift = means_host ? means.as<double>() : nullptr;
    if (sums_host) {
      // One pass: the centered, scaled copy and its weighted column sums (as weighted_means).
      column_sums(res, A, n, m, w, shift, out, sums_host);
      return;
    }
    if (m == 1) {  // one column: a thread per row (the kernel below would idle 31 of 32 lanes)
      center_scale_kernel<T><<<blocks_for_threads(n), dim3(1, kBlock), 0, res.stream>>>(A, n, m, shift, w, out);
    } else {
      center_scale_kernel<T><<<static_cast<unsigned>(std::min(ceil_div(n, kRowLanes), kMaxBlocks)), dim3(kWarp, kRowLanes), 0,
                               res.stream>>>(A, n, m, shift, w, out);
    }
    GPUML_CUDA_CHECK_LAUNCH();
  }

  void gram(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* gram_host, double* cross_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    const bool with_cross = B != nullptr && t > 0 && cross_host != nullptr;
    if (!with_cross) t = 0;
    if (n <= 0) {
      std::fill(gram_host, gram_host + m * m, 0.0);
      if (with_cross) std::fill(cross_host, cross_host + m * t, 0.0);
      return;
    }
    // Chunks: about kGramChunks, at least kMinGramRows rows each, partials within the budget.
    const int64_t per_chunk_bytes = (m * m + m * t) * static_cast<int64_t>(sizeof(T));
    int64_t chunks = std::min(kGramChunks, ceil_div(n, kMinGramRows));
    chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, static_cast<int64_t>(kGramPartialBytes) / per_chunk_bytes));
    const int64_t chunk_rows = ceil_div(n, chunks);
    const int64_t full_chunks = n / chunk_rows;
    const int64_t rest_rows = n - full_chunks * chunk_rows;
    const int64_t slots = full_chunks + (rest_rows > 0 ? 1 : 0);

    const int m_ = checked_int(m, "n_features"), t_ = checked_int(std::max<int64_t>(t, 1), "n_targets");
    const int rows_ = checked_int(chunk_rows, "rows per chunk");
    checked_int(slots, "chunks");
    Buffer gram_partials = device(slots * m * m * sizeof(T));
    Buffer cross_partials;
    if (with_cross) cross_partials = device(slots * m * t * sizeof(T));

    cublasHandle_t handle = res.cublas();  // pedantic math mode: exact FP32/FP64, no TF32
    // Column blocks [b * block, min(m, (b + 1) * block)); products only for block pairs I <= J.
    const int64_t block = m >= kGramBlockedFrom ? kGramBlock : m;
    const int64_t n_blocks = ceil_div(m, block);
    // One chunk set: `count` chunks of `rows` rows from row `row0`, into slots from `slot0`.
    auto multiply = [&](int64_t row0, int rows, int count, int64_t slot0) {
      const T* M = A + row0 * m;  // chunk p: column-major m x rows (ld m) = A_p^T
      const long long stride_a = static_cast<long long>(rows) * m;
      T* G = gram_partials.as<T>() + slot0 * m * m;
      for (int64_t bi = 0; bi < n_blocks; ++bi) {
        for (int64_t bj = bi; bj < n_blocks; ++bj) {
          const int64_t i0 = bi * block, j0 = bj * block;
          const int mi = static_cast<int>(std::min(block, m - i0)), mj = static_cast<int>(std::min(block, m - j0));
          // G_p[i0.., j0..] = A_p^T[i0.., :] (A_p^T[j0.., :])^T
          gemm_strided_batched<T>(handle, CUBLAS_OP_N, CUBLAS_OP_T, mi, mj, rows, M + i0, m_, stride_a, M + j0, m_, stride_a, T(0),
                                  G + i0 + j0 * m, m_, static_cast<long long>(m) * m, count);
        }
      }
      if (with_cross) {
        // C_p (column-major m x t) = A_p^T (B_p^T)^T, B_p^T being B's rows as column-major t x rows.
        gemm_strided_batched<T>(handle, CUBLAS_OP_N, CUBLAS_OP_T, m_, t_, rows, M, m_, stride_a, B + row0 * t, t_,
                                static_cast<long long>(rows) * t, T(0), cross_partials.as<T>() + slot0 * m * t, m_,
                                static_cast<long long>(m) * t, count);
      }
    };
    if (full_chunks > 0) multiply(0, rows_, static_cast<int>(full_chunks), 0);
    if (rest_rows > 0) multiply(full_chunks * chunk_rows, static_cast<int>(rest_rows), 1, full_chunks);

    Buffer gram_out = device(m * m * sizeof(double));
    reduce_gram_kernel<T><<<blocks_for_threads(m * m), kBlock, 0, res.stream>>>(gram_partials.as<T>(), slots, m, gram_out.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    Buffer cross_out;
    if (with_cross) {
      cross_out = device(m * t * sizeof(double));
      reduce_cross_kernel<T><<<blocks_for_threads(m * t), kBlock, 0, res.stream>>>(cross_partials.as<T>(), slots, m, t,
                                                                                 cross_out.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      copy_to_host_async(res, cross_host, cross_out.data(), m * t * sizeof(double));
    }
    copy_to_host(res, gram_host, gram_out.data(), m * m * sizeof(double));
  }

  void shifted_gram(const T* X, int64_t n, int64_t m, const double* shift_host, const T* w, const T* B, int64_t t,
                    double* gram_host, double* cross_host, double* sums_host) override {
    if (m <= 0) return;
    const bool with_cross = B != nullptr && t > 0 && cross_host != nullptr;
    if (!with_cross) t = 0;
    if constexpr (std::is_same_v<T, float>) {
      if (n > 0 && m >= kFusedGramMinFeatures && t <= kFusedGramMaxTargets) {  // one pass on tensor cores (gram_tf32.cu)
        std::vector<float> shift;
        if (shift_host) shift.assign(shift_host, shift_host + m);
        fused_gram_tf32(ctx_, X, n, m, shift_host ? shift.data() : nullptr, w, with_cross ? B : nullptr, t, gram_host,
                        cross_host, sums_host);
        return;
      }
    }
    Buffer A = device(std::max<int64_t>(n * m, 1) * sizeof(T));  // (n == 0: both give zeros)
    center_scale(X, n, m, shift_host, w, A.as<T>(), sums_host);
    gram(A.as<const T>(), with_cross ? B : nullptr, n, m, t, gram_host, cross_host);
  }

  bool cholesky(const double* M_host, int64_t m, double* U_host) override {
    if (m < kDeviceCholeskyFrom) return host_cholesky(M_host, m, U_host);
    cuda::Resources& res = cuda::activate(ctx_);
    const int m_ = checked_int(m, "matrix size");
    const std::size_t bytes = static_cast<std::size_t>(m * m) * sizeof(double);
    Buffer A = device(bytes + sizeof(double));  // the matrix, then potrf's info
    int* info = reinterpret_cast<int*>(A.as<char>() + bytes);
    res.copy_to_device(A.data(), M_host, bytes);  // symmetric: row-major and column-major agree
    cusolverDnHandle_t handle = res.cusolver();
    int lwork = 0;
    GPUML_CUSOLVER_CHECK(cusolverDnDpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, m_, A.as<double>(), m_, &lwork));
    const std::size_t work_bytes = static_cast<std::size_t>(std::max(1, lwork)) * sizeof(double);
    if (potrf_work_.bytes() < work_bytes) potrf_work_ = device(work_bytes);  // kept: one allocation per backend
    GPUML_CUSOLVER_CHECK(cusolverDnDpotrf(handle, CUBLAS_FILL_MODE_LOWER, m_, A.as<double>(), m_, potrf_work_.as<double>(),
                                          lwork, info));
    // The factor and info come back in one copy. The column-major lower factor, read row-major,
    // is U = Lᵀ: no transpose (below its diagonal: M's untouched entries, unspecified).
    const double* staging = static_cast<const double*>(res.pinned(bytes + sizeof(double)));
    // (bytes + one int: the rest of info's slot is never written, and initcheck reports copying it.)
    GPUML_CUDA_CHECK(cudaMemcpyAsync(const_cast<double*>(staging), A.data(), bytes + sizeof(int), cudaMemcpyDeviceToHost,
                                     res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
    int status = 0;
    std::memcpy(&status, staging + m * m, sizeof(int));
    if (status < 0) throw Error(ErrorCode::cuda, "cuSOLVER potrf: bad argument " + std::to_string(-status));
    if (status > 0) return false;  // the leading minor of that order is not positive definite
    std::memcpy(U_host, staging, bytes);
    return true;
  }

  bool cholesky_solve(const double* M_host, int64_t m, const double* R_host, int64_t t, double* Z_host,
                      double* diagonal_host) override {
    if (m < kDeviceCholeskyFrom) return host_cholesky_solve(M_host, m, R_host, t, Z_host, diagonal_host);
    cuda::Resources& res = cuda::activate(ctx_);
    const int m_ = checked_int(m, "matrix size"), t_ = checked_int(t, "right-hand sides");
    // One device buffer: [M | Z (column-major m x t) | potrf's and potrs's info | U's diagonal].
    // M and R go in with one copy; Z, the infos and the diagonal come back with one copy.
    const int64_t mm = m * m, mt = m * t, back = mt + 1 + m;
    Buffer A = device(static_cast<std::size_t>(mm + back) * sizeof(double));
    double* M = A.as<double>();
    double* Z = M + mm;
    int* info = reinterpret_cast<int*>(Z + mt);  // two ints in one double's slot
    double* diagonal = Z + mt + 1;
    double* staging = static_cast<double*>(res.pinned(static_cast<std::size_t>(std::max(mm + mt, back)) * sizeof(double)));
    std::memcpy(staging, M_host, static_cast<std::size_t>(mm) * sizeof(double));  // symmetric: column-major as it is
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < t; ++k) staging[mm + k * m + i] = R_host[i * t + k];
    GPUML_CUDA_CHECK(cudaMemcpyAsync(M, staging, static_cast<std::size_t>(mm + mt) * sizeof(double), cudaMemcpyHostToDevice,
                                     res.stream));
    cusolverDnHandle_t handle = res.cusolver();
    int lwork = 0;
    GPUML_CUSOLVER_CHECK(cusolverDnDpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, m_, M, m_, &lwork));
    const std::size_t work_bytes = static_cast<std::size_t>(std::max(1, lwork)) * sizeof(double);
    if (potrf_work_.bytes() < work_bytes) potrf_work_ = device(work_bytes);
    GPUML_CUSOLVER_CHECK(cusolverDnDpotrf(handle, CUBLAS_FILL_MODE_LOWER, m_, M, m_, potrf_work_.as<double>(), lwork, info));
    GPUML_CUDA_CHECK(cudaMemsetAsync(info + 1, 0, sizeof(int), res.stream));
    if (t > 0) GPUML_CUSOLVER_CHECK(cusolverDnDpotrs(handle, CUBLAS_FILL_MODE_LOWER, m_, t_, M, m_, Z, m_, info + 1));
    GPUML_CUDA_CHECK(cudaMemcpy2DAsync(diagonal, sizeof(double), M, static_cast<std::size_t>(m + 1) * sizeof(double),
                                       sizeof(double), static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice, res.stream));
    GPUML_CUDA_CHECK(cudaMemcpyAsync(staging, Z, static_cast<std::size_t>(back) * sizeof(double), cudaMemcpyDeviceToHost,
                                     res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
    int status[2] = {0, 0};
    std::memcpy(status, staging + mt, sizeof(status));
    if (status[0] < 0) throw Error(ErrorCode::cuda, "cuSOLVER potrf: bad argument " + std::to_string(-status[0]));
    if (status[0] > 0) return false;  // the leading minor of that order is not positive definite
    if (status[1] != 0) throw Error(ErrorCode::cuda, "cuSOLVER potrs: bad argument " + std::to_string(-status[1]));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < t; ++k) Z_host[i * t + k] = staging[k * m + i];
    std::memcpy(diagonal_host, staging + mt + 1, static_cast<std::size_t>(m) * sizeof(double));
    return true;
  }

  void qr(T* A, T* B, int64_t n, int64_t m, int64_t t, double* R_host, double* QtB_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    if (n < m)
      throw_error(ErrorCode::internal, "linear qr: needs n_samples >= n_features, got " + std::to_string(n) + " < " + std::to_string(m));
    const bool with_b = B != nullptr && t > 0 && QtB_host != nullptr;
    const int n_ = checked_int(n, "n_samples"), m_ = checked_int(m, "n_features");
    const int t_ = with_b ? checked_int(t, "n_targets") : 0;
    cusolverDnHandle_t handle = res.cusolver();

    // Column-major copies: A (n x m, ld n); B (n x t, ld n) unless t == 1 (then B as it is).
    Buffer A_col = device(n * m * sizeof(T));
    launch_transpose(res, A, n, m, A_col.as<T>());
    Buffer B_col;
    T* QtB = nullptr;
    if (with_b) {
      if (t == 1) {
        QtB = B;
      } else {
        B_col = device(n * t * sizeof(T));
        launch_transpose(res, B, n, t, B_col.as<T>());
        QtB = B_col.as<T>();
      }
    }

    // Zeroed, as the workspace: geqrf's kernels read tau entries before writing them (initcheck).
    Buffer tau = cuda::solver_workspace(ctx_, res, m * sizeof(T));
    Buffer info = device(sizeof(int));
    int lwork = geqrf_buffer_size<T>(handle, n_, m_, A_col.as<T>(), n_);
    if (with_b)
      lwork = std::max(lwork, ormqr_buffer_size<T>(handle, n_, t_, m_, A_col.as<T>(), n_, tau.as<T>(), QtB, n_));
    Buffer work = cuda::solver_workspace(ctx_, res, std::max(lwork, 1) * sizeof(T));

    geqrf<T>(handle, n_, m_, A_col.as<T>(), n_, tau.as<T>(), work.as<T>(), lwork, info.as<int>());
    check_info(res, info, "geqrf");
    if (with_b) {
      ormqr_qt<T>(handle, n_, t_, m_, A_col.as<T>(), n_, tau.as<T>(), QtB, n_, work.as<T>(), lwork, info.as<int>());
      check_info(res, info, "ormqr");
    }

    Buffer R = device(m * m * sizeof(double));
    top_rows_kernel<T><<<blocks_for_threads(m * m), kBlock, 0, res.stream>>>(A_col.as<T>(), n, m, m, true, R.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    Buffer QtB_out;
    if (with_b) {
      QtB_out = device(m * t * sizeof(double));
      top_rows_kernel<T><<<blocks_for_threads(m * t), kBlock, 0, res.stream>>>(QtB, n, m, t, false, QtB_out.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      copy_to_host_async(res, QtB_host, QtB_out.data(), m * t * sizeof(double));
    }
    copy_to_host(res, R_host, R.data(), m * m * sizeof(double));
  }

  void right_triangular_solve(T* A, int64_t n, int64_t m, const double* R_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || m <= 0) return;
    const int m_ = checked_int(m, "n_features");
    // R's row-major memory is, column-major, the lower-triangular Rᵀ; A's row-major rows are the
    // columns of Aᵀ (column-major m x n, ld m). A R⁻¹ = X  <=>  Xᵀ = R⁻ᵀ Aᵀ. cuBLAS's trsm over a
    // million columns runs far below GEMM speed (20 ms at 1M x 256), so R⁻ᵀ is formed once by a
    // small trsm on the identity and applied by GEMMs, chunk by chunk, through a scratch buffer
    // (GEMM cannot work in place). Forming the inverse costs accuracy only ~ eps cond(R), as the
    // solve does; Cholesky QR's next pass checks orthogonality anyway.
    std::vector<T> R_t(static_cast<std::size_t>(m * m)), identity(static_cast<std::size_t>(m * m), T(0));
    for (int64_t i = 0; i < m * m; ++i) R_t[i] = static_cast<T>(R_host[i]);
    for (int64_t i = 0; i < m; ++i) identity[i * m + i] = T(1);
    Buffer R = to_device(res, R_t.data(), m * m);
    Buffer inverse = to_device(res, identity.data(), m * m);
    cublasHandle_t handle = res.cublas();
    trsm_left<T>(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, m_, m_, R.as<T>(), m_, inverse.as<T>(), m_);
    const int64_t chunk_rows = std::max<int64_t>(1, std::min<int64_t>(n, kTriangularScratchBytes / (m * sizeof(T))));
    Buffer scratch = device(static_cast<std::size_t>(chunk_rows * m) * sizeof(T));
    for (int64_t row0 = 0; row0 < n; row0 += chunk_rows) {
      const int rows = static_cast<int>(std::min(chunk_rows, n - row0));
      gemm_strided_batched<T>(handle, CUBLAS_OP_N, CUBLAS_OP_N, m_, rows, m_, inverse.as<T>(), m_, 0, A + row0 * m, m_, 0, T(0),
                              scratch.as<T>(), m_, 0, 1);
      GPUML_CUDA_CHECK(cudaMemcpyAsync(A + row0 * m, scratch.data(), static_cast<std::size_t>(rows) * m * sizeof(T),
                                       cudaMemcpyDeviceToDevice, res.stream));
    }
    // R_t and identity (host) were read by the uploads before they returned (pageable memory);
    // the device buffers are freed stream-ordered.
  }

  void predict(const T* X, int64_t n, int64_t d, const T* coef_host, const T* intercept_host, int64_t t, T* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || t <= 0) return;
    Buffer intercept;
    if (intercept_host) intercept = to_device(res, intercept_host, t);
    fill_intercept_kernel<T><<<blocks_for_threads(n * t), kBlock, 0, res.stream>>>(out, n, t,
                                                                                 intercept_host ? intercept.as<T>() : nullptr);
    GPUML_CUDA_CHECK_LAUNCH();
    if (d > 0) {
      Buffer coef = to_device(res, coef_host, t * d);
      const int d_ = checked_int(d, "n_features"), t_ = checked_int(t, "n_targets");
      cublasHandle_t handle = res.cublas();
      // out^T (column-major t x rows, ld t) += coef (= (coef memory as column-major d x t)^T) * X_rows^T.
      constexpr int64_t kMaxRows = int64_t(1) << 30;  // cuBLAS dimensions are int
      for (int64_t row0 = 0; row0 < n; row0 += kMaxRows) {
        const int rows = static_cast<int>(std::min(kMaxRows, n - row0));
        gemm_strided_batched<T>(handle, CUBLAS_OP_T, CUBLAS_OP_N, t_, rows, d_, coef.as<T>(), d_, 0, X + row0 * d, d_, 0, T(1),
                                out + row0 * t, t_, 0, 1);
      }
    }
    // The caller may read `out` on another stream or the host: finish here, as the other
    // primitives do when they copy their results back.
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  // AᵀB as the cross half of gram: the rows cut into chunks, one strided-batched GEMM forming each
  // chunk's A_pᵀB_p in T (pedantic math), the partials summed in double in chunk order by
  // reduce_cross_kernel. Same chunking constants as gram.
  void symmetric_eigen(const double* M_host, int64_t m, int64_t k, double* values_host, double* vectors_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    k = std::clamp<int64_t>(k, 0, m);
    if (m <= kEigenTopMaxSize && 4 * k <= m) {  // few vectors: back-transform only those
      device_symmetric_eigen_top(ctx_, M_host, m, k, values_host, vectors_host);
      return;
    }
    const int m_ = checked_int(m, "matrix size");
    Buffer A = to_device(res, M_host, m * m);  // symmetric: the column-major matrix cuSOLVER wants
    Buffer values = device(static_cast<std::size_t>(m) * sizeof(double));
    Buffer info = device(sizeof(int));
    cusolverDnHandle_t handle = res.cusolver();
    int lwork = 0;
    GPUML_CUSOLVER_CHECK(cusolverDnDsyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, m_, A.as<double>(),
                                                     m_, values.as<double>(), &lwork));
    Buffer work = cuda::solver_workspace(ctx_, res, static_cast<std::size_t>(std::max(1, lwork)) * sizeof(double));
    GPUML_CUSOLVER_CHECK(cusolverDnDsyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, m_, A.as<double>(), m_,
                                          values.as<double>(), work.as<double>(), lwork, info.as<int>()));
    check_info(res, info, "syevd");
    copy_to_host(res, values_host, values.data(), static_cast<std::size_t>(m) * sizeof(double));
    // Vector i of the ascending decomposition is column i: the k largest are the last k columns.
    const double* last = A.as<double>() + (m - k) * m;
    std::vector<double> columns(static_cast<std::size_t>(k * m));
    copy_to_host(res, columns.data(), last, columns.size() * sizeof(double));
    for (int64_t i = 0; i < k; ++i) std::memcpy(vectors_host + i * m, columns.data() + (k - 1 - i) * m, m * sizeof(double));
  }

  void cross(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* cross_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0 || t <= 0) return;
    if (n <= 0) {
      std::fill(cross_host, cross_host + m * t, 0.0);
      return;
    }
    const int64_t per_chunk_bytes = m * t * static_cast<int64_t>(sizeof(T));
    int64_t chunks = std::min(kGramChunks, ceil_div(n, kMinGramRows));
    chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, static_cast<int64_t>(kGramPartialBytes) / per_chunk_bytes));
    const int64_t chunk_rows = ceil_div(n, chunks);
    const int64_t full_chunks = n / chunk_rows;
    const int64_t rest_rows = n - full_chunks * chunk_rows;
    const int64_t slots = full_chunks + (rest_rows > 0 ? 1 : 0);
    const int m_ = checked_int(m, "n_features"), t_ = checked_int(t, "n_columns of B");
    checked_int(chunk_rows, "rows per chunk");
    checked_int(slots, "chunks");
    Buffer partials = device(slots * m * t * sizeof(T));
    cublasHandle_t handle = res.cublas();
    // Chunk p: A_pᵀ is column-major m x rows (ld m), B_pᵀ column-major t x rows (ld t); C_p = A_pᵀ (B_pᵀ)ᵀ.
    auto multiply = [&](int64_t row0, int rows, int count, int64_t slot0) {
      gemm_strided_batched<T>(handle, CUBLAS_OP_N, CUBLAS_OP_T, m_, t_, rows, A + row0 * m, m_, static_cast<long long>(rows) * m,
                              B + row0 * t, t_, static_cast<long long>(rows) * t, T(0), partials.as<T>() + slot0 * m * t, m_,
                              static_cast<long long>(m) * t, count);
    };
    if (full_chunks > 0) multiply(0, static_cast<int>(chunk_rows), static_cast<int>(full_chunks), 0);
    if (rest_rows > 0) multiply(full_chunks * chunk_rows, static_cast<int>(rest_rows), 1, full_chunks);
    Buffer out = device(m * t * sizeof(double));
    reduce_cross_kernel<T><<<blocks_for_threads(m * t), kBlock, 0, res.stream>>>(partials.as<T>(), slots, m, t, out.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    copy_to_host(res, cross_host, out.data(), m * t * sizeof(double));
  }

 private:
  static unsigned blocks_for_threads(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }

  // sums_host[j] = Σ_i w_i (A_ij − shift_j) for j < m and sums_host[m] = Σ_i w_i, in fixed chunks
  // summed in double (the same bits on every run); with `out`, also the centered, scaled copy.
  void column_sums(cuda::Resources& res, const T* A, int64_t n, int64_t m, const T* w, const double* shift, T* out,
                   double* sums_host) {
    const int64_t ncols = m + 1;  // the columns, then the weight total
    const bool vector = m == 1 && static_cast<const void*>(out) != static_cast<const void*>(A);
    const bool interleaved = m <= int64_t(kWarp) * 16 && static_cast<const void*>(out) != static_cast<const void*>(A);
    const int64_t chunk_rows = std::max(kMinChunkRows, ceil_div(n, kTargetChunks));
    const int64_t n_chunks = interleaved ? kInterleavedBlocks : ceil_div(n, chunk_rows);
    Buffer partials = device(ncols * n_chunks * sizeof(double));
    Buffer sums = device(ncols * sizeof(double));
    const dim3 lanes(kWarp, kRowLanes);
    if (vector) {
      vector_sums_kernel<T><<<kInterleavedBlocks, kBlock, 0, res.stream>>>(A, n, w, partials.as<double>(), shift, out);
    } else if (interleaved && m <= int64_t(kWarp) * 8) {
      interleaved_sums_kernel<T, 8><<<kInterleavedBlocks, lanes, 0, res.stream>>>(A, n, m, w, partials.as<double>(), shift, out);
    } else if (interleaved) {
      interleaved_sums_kernel<T, 16><<<kInterleavedBlocks, lanes, 0, res.stream>>>(A, n, m, w, partials.as<double>(), shift, out);
    } else {
      const dim3 grid(static_cast<unsigned>(std::min<int64_t>(n_chunks, INT_MAX)),
                      static_cast<unsigned>(std::min<int64_t>(ceil_div(m, kWarp), 65535)));
      chunk_weighted_sums_kernel<T><<<grid, lanes, 0, res.stream>>>(A, n, m, w, chunk_rows, n_chunks, partials.as<double>(),
                                                                     shift, out);
    }
    GPUML_CUDA_CHECK_LAUNCH();
    reduce_chunks_kernel<<<static_cast<unsigned>(std::min(ncols, kMaxBlocks)), kBlock, 0, res.stream>>>(partials.as<double>(), n_chunks,
                                                                                                     ncols, sums.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    copy_to_host(res, sums_host, sums.data(), ncols * sizeof(double));
  }

  Buffer device(std::size_t bytes) { return Buffer(ctx_, bytes); }
  Buffer potrf_work_;  // cholesky's workspace, kept across calls

  template <typename U>
  Buffer to_device(cuda::Resources& res, const U* host, int64_t count) {
    Buffer b = device(count * sizeof(U));
    if (count > 0) GPUML_CUDA_CHECK(cudaMemcpyAsync(b.data(), host, count * sizeof(U), cudaMemcpyHostToDevice, res.stream));
    // Pageable host memory: cudaMemcpyAsync returns once the source has been read, so the
    // caller's host array may go away right after.
    return b;
  }

  static void copy_to_host_async(cuda::Resources& res, void* host, const void* dev, std::size_t bytes) {
    if (bytes > 0) GPUML_CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, res.stream));
  }

  static void copy_to_host(cuda::Resources& res, void* host, const void* dev, std::size_t bytes) {
    copy_to_host_async(res, host, dev, bytes);
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  // cuSOLVER reports bad arguments through devInfo (negative: the position of the bad one).
  static void check_info(cuda::Resources& res, const Buffer& info, const char* routine) {
    int host = 0;
    copy_to_host(res, &host, info.data(), sizeof(int));
    if (host != 0)
      throw Error(ErrorCode::cuda, std::string("cuSOLVER ") + routine + " failed with devInfo = " + std::to_string(host));
  }

  static void launch_transpose(cuda::Resources& res, const T* src, int64_t rows, int64_t cols, T* dst) {
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(ceil_div(cols, kTile), 65535)),
                    static_cast<unsigned>(std::min<int64_t>(ceil_div(rows, kTile), 65535)));
    transpose_kernel<T><<<grid, dim3(kTile, kRowLanes), 0, res.stream>>>(src, rows, cols, dst);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  Context ctx_;
};

}  // namespace

template <typename T>
std::unique_ptr<LinearBackend<T>> make_linear_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaLinearBackend<T>>(ctx);
}

template std::unique_ptr<LinearBackend<float>> make_linear_cuda_backend<float>(const Context&);
template std::unique_ptr<LinearBackend<double>> make_linear_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail
