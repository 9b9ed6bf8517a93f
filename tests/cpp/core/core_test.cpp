// The core: contexts, errors, dtypes, views, staging of caller arrays (through KMeans) and
// serialization of a fitted model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "../../src/core/device_ops.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;

// ---- Context ------------------------------------------------------------------------------------

TEST(CoreContext, FromString) {
  EXPECT_EQ(Context::from_string("cpu").device().type, DeviceType::cpu);
  const DeviceType best = cuda_device_count() > 0 ? DeviceType::cuda : DeviceType::cpu;
  EXPECT_EQ(Context::from_string("auto").device().type, best);
  EXPECT_EQ(Context::from_string("").device().type, best);
  EXPECT_EQ(Context::best().device().type, best);
  for (const char* bad : {"gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:0 ", " cpu", "cuda:1x", "cuda0"})
    GPUML_EXPECT_ERROR(Context::from_string(bad), ErrorCode::invalid_argument);
  if (cuda_device_count() == 0) {
    // No device (or no CUDA in this build): a named error, never a crash.
    for (const char* gpu : {"cuda", "cuda:0", "cuda:3"}) {
      try {
        Context::from_string(gpu);
        ADD_FAILURE() << gpu << " gave a context without a device";
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == ErrorCode::unsupported || e.code() == ErrorCode::cuda) << error_code_name(e.code());
      }
    }
  } else {
    Context c = Context::from_string("cuda:0");
    EXPECT_TRUE(c.is_cuda());
    EXPECT_EQ(c.device().id, 0);
  }
}

TEST(CoreContext, ThreadsAndSeed) {
  EXPECT_EQ(Context::cpu(3).n_threads(), 3);
  EXPECT_GE(Context::cpu().n_threads(), 1);
  GPUML_EXPECT_ERROR(Context::cpu(-1), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(Context::cuda(-1), ErrorCode::invalid_argument);
  Context a = Context::cpu(2);
  Context b = a;  // a handle: copies share their state
  b.set_seed(424242);
  EXPECT_EQ(a.seed(), 424242u);
  EXPECT_FALSE(a.is_cuda());
  a.synchronize();  // a no-op on the CPU
  GPUML_EXPECT_ERROR(a.cuda_resources(), ErrorCode::internal);
  EXPECT_EQ(built_with_cuda() || cuda_device_count() == 0, true);
  EXPECT_EQ(device_name(Device{}), "cpu");
  EXPECT_EQ(device_name(Device{DeviceType::cuda, 2}), "cuda:2");
}

// ---- errors and dtypes ------------------------------------------------------------------------

TEST(CoreErrors, CodesAndMessages) {
  const ErrorCode codes[] = {ErrorCode::invalid_argument, ErrorCode::not_fitted, ErrorCode::out_of_memory, ErrorCode::cuda,
                             ErrorCode::unsupported,      ErrorCode::io,         ErrorCode::internal};
  std::set<std::string> names;
  for (ErrorCode c : codes) {
    names.insert(error_code_name(c));
    try {
      throw_error(c, "message for " + std::string(error_code_name(c)));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c);
      EXPECT_EQ(std::string(e.what()), "message for " + std::string(error_code_name(c)));
    }
  }
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_EQ(static_cast<int>(ErrorCode::invalid_argument), 1);  // matches the C ABI
  EXPECT_EQ(static_cast<int>(ErrorCode::internal), 7);
  // gpuml::Error is a std::runtime_error, so generic handlers see the message.
  try {
    throw_error(ErrorCode::io, "disk");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "disk");
  }
}

TEST(CoreDtypes, SizesNamesAndCodes) {
  EXPECT_EQ(dtype_size(DType::float32), 4u);
  EXPECT_EQ(dtype_size(DType::float64), 8u);
  EXPECT_EQ(dtype_size(DType::int32), 4u);
  EXPECT_EQ(dtype_size(DType::int64), 8u);
  EXPECT_STREQ(dtype_name(DType::float32), "float32");
  EXPECT_STREQ(dtype_name(DType::int64), "int64");
  for (int32_t v = 0; v <= 3; ++v) EXPECT_TRUE(is_valid_dtype(v));
  EXPECT_FALSE(is_valid_dtype(-1));
  EXPECT_FALSE(is_valid_dtype(4));
  GPUML_EXPECT_ERROR(dtype_size(static_cast<DType>(17)), ErrorCode::invalid_argument);
  EXPECT_TRUE(is_floating(DType::float64));
  EXPECT_FALSE(is_floating(DType::int32));
  EXPECT_EQ(dtype_of<float>::value, DType::float32);
  EXPECT_EQ(dtype_of<int64_t>::value, DType::int64);
}

TEST(CoreArrays, ViewsAndHostArrays) {
  std::vector<double> data(12);
  ArrayView v = host_view(data.data(), 3, 4);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.rows(), 3);
  EXPECT_EQ(v.cols(), 4);
  EXPECT_EQ(v.size(), 12);
  ArrayView strided = v;
  strided.shape[1] = 2;  // the first two columns of a 3 x 4 array
  EXPECT_FALSE(strided.is_contiguous());
  ArrayView column_major = v;
  column_major.strides[0] = 1;
  column_major.strides[1] = 3;
  EXPECT_FALSE(column_major.is_contiguous());
  EXPECT_TRUE(host_view(data.data(), 12).is_contiguous());

  HostArray a(DType::float32, 5, 3), b(DType::int64, 7), s = HostArray::scalar(DType::float64), none;
  EXPECT_EQ(a.bytes(), 60u);
  EXPECT_EQ(b.bytes(), 56u);
  EXPECT_EQ(s.bytes(), 8u);
  EXPECT_EQ(s.spec().ndim, 0);
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(a.view().shape[1], 3);
  EXPECT_TRUE(a.view().is_contiguous());
  // Over memory of more bytes than its own (a written forest's arrays, sized for the most nodes).
  Buffer memory = Buffer::host(100);
  void* at = memory.data();
  HostArray over(ArraySpec{DType::int32, 2, {4, 3}}, std::move(memory));
  EXPECT_EQ(over.bytes(), 48u);
  EXPECT_EQ(over.as<void>(), at);
  EXPECT_EQ(over.view().shape[0], 4);
  EXPECT_THROW(HostArray(ArraySpec{DType::float64, 1, {20, 0}}, Buffer::host(100)), Error);  // 160 bytes > 100
}

// ---- staging caller arrays, through KMeans ----------------------------------------------------

class CoreStaging : public ::testing::Test {
 protected:
  // A fit with a fixed init, so that any two fits on the same values are bit-identical.
  KMeans fit(const ArrayView& X, const ArrayView* w = nullptr) {
    KMeansParams p;
    p.n_clusters = k;
    p.init = "array";
    p.init_array = init;
    p.max_iter = 50;
    KMeans km(p);
    km.fit(ctx, X, w);
    return km;
  }
  static std::vector<double> centers_of(const KMeans& km) {
    const HostArray& c = km.cluster_centers();
    const int64_t count = c.spec().shape[0] * c.spec().shape[1];
    if (c.dtype() == DType::float32) return std::vector<double>(c.as<float>(), c.as<float>() + count);
    return std::vector<double>(c.as<double>(), c.as<double>() + count);
  }
  void make_data(std::mt19937_64& rng) {
    n = uniform_int(rng, 30, 400);
    d = uniform_int(rng, 1, 7);
    k = uniform_int(rng, 1, 5);
    // Integer-valued data, so that int32/int64/float copies hold exactly the same values.
    X.resize(n * d);
    for (auto& v : X) v = static_cast<double>(uniform_int(rng, -50, 50));
    init.assign(X.begin(), X.begin() + k * d);
  }
  Context ctx = Context::cpu(2);
  int64_t n = 0, d = 0, k = 0;
  std::vector<double> X, init;
};

TEST_F(CoreStaging, StridedAndColumnMajorInputs) {
  GPUML_FRESH_RNG(rng);
  make_data(rng);
  const std::vector<double> reference = centers_of(fit(host_view(X.data(), n, d)));

  // A row-major array with padding at the end of every row.
  const int64_t pitch = d + 3;
  std::vector<double> padded(n * pitch, std::nan(""));  // padding must never be read
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) padded[i * pitch + j] = X[i * d + j];
  ArrayView pv = host_view(padded.data(), n, d);
  pv.strides[0] = pitch;
  EXPECT_EQ(centers_of(fit(pv)), reference);

  // Column-major (Fortran order).
  std::vector<double> fortran(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) fortran[j * n + i] = X[i * d + j];
  ArrayView fv = host_view(fortran.data(), n, d);
  fv.strides[0] = 1;
  fv.strides[1] = n;
  EXPECT_EQ(centers_of(fit(fv)), reference);

  // Strided sample weights: every other element of a longer array.
  std::vector<double> w(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    w[2 * i] = static_cast<double>(uniform_int(rng, 1, 3));
    w[2 * i + 1] = -1.0;  // would be rejected if read
  }
  std::vector<double> w_contiguous(n);
  for (int64_t i = 0; i < n; ++i) w_contiguous[i] = w[2 * i];
  ArrayView wv = host_view(w.data(), n);
  wv.strides[0] = 2;
  ArrayView wc = host_view(w_contiguous.data(), n);
  EXPECT_EQ(centers_of(fit(host_view(X.data(), n, d), &wv)), centers_of(fit(host_view(X.data(), n, d), &wc)));
}

TEST_F(CoreStaging, IntegerAndFloat32Inputs) {
  GPUML_FRESH_RNG(rng);
  make_data(rng);
  KMeans as_double = fit(host_view(X.data(), n, d));
  const std::vector<double> reference = centers_of(as_double);

  const std::vector<int32_t> X32 = test::cast_vector<int32_t>(X);
  const std::vector<int64_t> X64 = test::cast_vector<int64_t>(X);
  for (const ArrayView& v : {host_view(X32.data(), n, d), host_view(X64.data(), n, d)}) {
    KMeans km = fit(v);
    EXPECT_EQ(km.cluster_centers().dtype(), DType::float64) << "integers are computed in float64";
    EXPECT_EQ(centers_of(km), reference);
    // Integer rows at predict time too.
    std::vector<int32_t> labels(n);
    km.predict(ctx, v, host_view(labels.data(), n));
    EXPECT_EQ(labels, std::vector<int32_t>(km.labels().as<int32_t>(), km.labels().as<int32_t>() + n));
  }

  // float32 against float64 on the same values. Integer data is full of exact distance ties, which
  // float32 rounding (of the centering, of the means) may decide differently, so this part adds
  // continuous noise: then the two fits take the same path and differ only by rounding.
  std::uniform_real_distribution<double> noise(-0.25, 0.25);
  std::vector<float> Xf(X.size());
  std::vector<double> Xc(X.size());
  for (std::size_t e = 0; e < X.size(); ++e) Xc[e] = Xf[e] = static_cast<float>(X[e] + noise(rng));
  init.assign(Xc.begin(), Xc.begin() + k * d);
  const std::vector<double> reference_c = centers_of(fit(host_view(Xc.data(), n, d)));
  KMeans single = fit(host_view(Xf.data(), n, d));
  EXPECT_EQ(single.cluster_centers().dtype(), DType::float32);
  const std::vector<double> got = centers_of(single);
  for (std::size_t e = 0; e < got.size(); ++e)
    EXPECT_NEAR(got[e], reference_c[e], 1e-5 * std::max(1.0, std::fabs(reference_c[e])));  // float32 rounding of means

  // Outputs in other dtypes: labels as int64, distances as float32.
  std::vector<int64_t> labels64(n);
  as_double.predict(ctx, host_view(X.data(), n, d), host_view(labels64.data(), n));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(labels64[i], as_double.labels().as<int32_t>()[i]);
  std::vector<double> dist(n * k);
  std::vector<float> dist32(n * k);
  as_double.transform(ctx, host_view(X.data(), n, d), host_view(dist.data(), n, k));
  as_double.transform(ctx, host_view(X.data(), n, d), host_view(dist32.data(), n, k));
  for (int64_t e = 0; e < n * k; ++e) EXPECT_EQ(dist32[e], static_cast<float>(dist[e]));
}

TEST_F(CoreStaging, BadPointersAndShapes) {
  GPUML_FRESH_RNG(rng);
  make_data(rng);
  KMeans km = fit(host_view(X.data(), n, d));
  // Host memory declared as CUDA memory is caught, never dereferenced on the wrong side.
  ArrayView lie = host_view(X.data(), n, d);
  lie.device = Device{DeviceType::cuda, 0};
  try {
    fit(lie);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::invalid_argument || e.code() == ErrorCode::unsupported) << e.what();
  }
  ArrayView unknown_device = host_view(X.data(), n, d);
  unknown_device.device.type = static_cast<DeviceType>(7);
  GPUML_EXPECT_ERROR(fit(unknown_device), ErrorCode::invalid_argument);
  ArrayView overflow = host_view(X.data(), n, d);
  overflow.strides[0] = std::numeric_limits<int64_t>::max() / 2;
  GPUML_EXPECT_ERROR(fit(overflow), ErrorCode::invalid_argument);
  // A strided output is refused rather than written past.
  std::vector<int32_t> labels(2 * n);
  ArrayView out = host_view(labels.data(), n);
  out.strides[0] = 2;
  GPUML_EXPECT_ERROR(km.predict(ctx, host_view(X.data(), n, d), out), ErrorCode::invalid_argument);
  // A CPU-only build refuses a CUDA context with a named error.
  if (!built_with_cuda()) GPUML_EXPECT_ERROR(Context::cuda(0), ErrorCode::unsupported);
}

// ---- serialization ---------------------------------------------------------------------------

KMeans fitted_model(std::mt19937_64& rng, DType dtype, int64_t n, int64_t d, int64_t k, std::vector<double>& X) {
  test::Blobs b = test::make_blobs(rng, n, d, 3, 1.0, 5.0);
  X = b.X;
  KMeansParams p;
  p.n_clusters = k;
  p.random_state = rng() >> 1;
  p.tol = 1e-3;
  KMeans km(p);
  Context ctx = Context::cpu(2);
  if (dtype == DType::float32) {
    std::vector<float> Xf = test::cast_vector<float>(X);
    km.fit(ctx, host_view(Xf.data(), n, d));
  } else {
    km.fit(ctx, host_view(X.data(), n, d));
  }
  return km;
}

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.dtype() == b.dtype() && a.spec().ndim == b.spec().ndim && a.spec().shape[0] == b.spec().shape[0] &&
         a.spec().shape[1] == b.spec().shape[1] && a.bytes() == b.bytes() &&
         std::memcmp(a.view().data, b.view().data, a.bytes()) == 0;
}

// Host arrays of 64 KiB and more cross a context's pinned area in chunks, copied by its threads
// (parallel_copy): every byte arrives, on either side of one chunk and of the slices, read back
// through the pinned area and through a plain cudaMemcpy (a CPU context reading device memory).
TEST(CoreStagingGpu, LargeHostArraysCrossThePinnedAreaIntact) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu(1);
  const int64_t mib = int64_t{1} << 20;
  for (const int64_t bytes : {int64_t{64} * 1024, 8 * mib - 1, 8 * mib, 8 * mib + 1, 3 * mib + 17, uniform_int(rng, 17 * mib, 41 * mib)}) {
    std::vector<uint8_t> host(static_cast<std::size_t>(bytes));
    for (auto& b : host) b = static_cast<uint8_t>(rng());
    Buffer on_device(gpu, static_cast<std::size_t>(bytes));
    detail::copy_bytes(gpu, on_device.data(), gpu.device(), host.data(), Device{}, host.size());
    gpu.synchronize();  // the plain copy below is not ordered after the context's stream
    std::vector<uint8_t> direct(host.size()), back(host.size());
    detail::copy_bytes(cpu, direct.data(), Device{}, on_device.data(), gpu.device(), host.size());
    detail::copy_bytes(gpu, back.data(), Device{}, on_device.data(), gpu.device(), host.size());
    EXPECT_TRUE(direct == host) << bytes << " bytes to the device";
    EXPECT_TRUE(back == host) << bytes << " bytes back to the host";
  }
}

// Issue 22 item 7 on CUDA: device arrays one byte past an aligned address. A kernel loading
// through a misaligned pointer faults (cudaErrorMisalignedAddress, and the context is lost);
// staging copies such arrays bytewise first, and outputs are written into them bytewise. The
// results equal those from aligned device arrays (the same kernels on the same values), on a
// CUDA context and on a CPU context reading the device arrays.
TEST(CoreStagingGpu, MisalignedDeviceArrays) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 50, 600), d = uniform_int(rng, 1, 8);
  std::vector<double> X(static_cast<std::size_t>(n * d)), y(static_cast<std::size_t>(n));
  for (double& v : X) v = test::uniform_real(rng, -3.0, 3.0);
  for (double& v : y) v = test::uniform_real(rng, -3.0, 3.0);
  std::vector<int32_t> X_int(X.size());
  // Large integers: distance ties (which the GPU's sums could decide either way) are unlikely.
  for (std::size_t e = 0; e < X.size(); ++e) X_int[e] = static_cast<int32_t>(std::lround(X[e] * 1e6));
  Context cpu = Context::cpu(2);

  struct Results {
    std::vector<double> predictions, predictions_cpu;
    std::vector<int32_t> labels;
  };
  auto run = [&](std::size_t offset) {
    std::vector<Buffer> keep;
    // A device copy of `values` starting `offset` bytes into its buffer.
    auto on_device = [&](const auto& values) {
      const std::size_t bytes = values.size() * sizeof(values[0]);
      keep.emplace_back(gpu, bytes + 1);
      char* at = keep.back().template as<char>() + offset;
      detail::copy_bytes(gpu, at, gpu.device(), values.data(), Device{}, bytes);
      return at;
    };
    const ArrayView Xd = make_view(on_device(X), DType::float64, gpu.device(), n, d);
    const ArrayView yd = make_view(on_device(y), DType::float64, gpu.device(), n);
    const ArrayView Xi = make_view(on_device(X_int), DType::int32, gpu.device(), n, d);  // converted by a kernel
    Results r;
    LinearRegression lr;
    lr.fit(gpu, Xd, &yd, nullptr);
    const ArrayView out = make_view(on_device(std::vector<double>(static_cast<std::size_t>(n), 0.0)), DType::float64,
                                    gpu.device(), n);
    lr.predict(gpu, Xd, out);
    r.predictions.resize(static_cast<std::size_t>(n));
    detail::copy_bytes(gpu, r.predictions.data(), Device{}, out.data, gpu.device(), r.predictions.size() * sizeof(double));
    LinearRegression on_cpu;  // a CPU context copying the device arrays to the host
    on_cpu.fit(cpu, Xd, &yd, nullptr);
    r.predictions_cpu.resize(static_cast<std::size_t>(n));
    on_cpu.predict(cpu, host_view(X.data(), n, d), host_view(r.predictions_cpu.data(), n));
    KMeansParams p;
    p.n_clusters = 3;
    p.random_state = 5;
    KMeans km(p);
    km.fit(gpu, Xi, nullptr);
    r.labels.assign(km.labels().as<int32_t>(), km.labels().as<int32_t>() + n);
    return r;
  };
  const Results aligned = run(0);
  Results misaligned;
  ASSERT_NO_THROW(misaligned = run(1));
  for (int64_t i = 0; i < n; ++i)  // the same values; GPU sums may be ordered differently between runs
    EXPECT_NEAR(misaligned.predictions[i], aligned.predictions[i], 1e-12 * std::max(1.0, std::fabs(aligned.predictions[i])));
  EXPECT_EQ(std::memcmp(misaligned.predictions_cpu.data(), aligned.predictions_cpu.data(), n * sizeof(double)), 0);
  EXPECT_EQ(misaligned.labels, aligned.labels);
  // The context is still good.
  EXPECT_NO_THROW(gpu.synchronize());
}

TEST(CoreSerialize, FittedKMeansRoundTrips) {
  GPUML_FRESH_RNG(rng);
  for (DType dtype : {DType::float64, DType::float32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t n = uniform_int(rng, 10, 300), d = uniform_int(rng, 1, 6), k = uniform_int(rng, 1, 6);
    std::vector<double> X;
    KMeans km = fitted_model(rng, dtype, n, d, k, X);
    const std::vector<uint8_t> bytes = serialize(km);
    std::unique_ptr<Estimator> back = deserialize(bytes.data(), bytes.size());
    ASSERT_STREQ(back->kind(), "kmeans");
    EXPECT_EQ(back->get_params_json(), km.get_params_json());
    ASSERT_TRUE(back->fitted());
    for (const std::string& name : km.attribute_names())
      EXPECT_TRUE(same_bytes(back->attribute(name), km.attribute(name))) << name;
    // The restored model predicts as the original does, on new rows.
    Context ctx = Context::cpu(2);
    test::Blobs fresh = test::make_blobs(rng, 50, d, 2, 2.0, 6.0);
    std::vector<int32_t> a(50), b(50);
    km.predict(ctx, host_view(fresh.X.data(), 50, d), host_view(a.data(), 50));
    back->predict(ctx, host_view(fresh.X.data(), 50, d), host_view(b.data(), 50));
    EXPECT_EQ(a, b);
    // Serializing again gives the same bytes.
    EXPECT_EQ(serialize(*back), bytes);
  }
}

TEST(CoreSerialize, UnfittedModelRoundTrips) {
  auto est = make_estimator("kmeans", R"({"n_clusters": 4, "init": "random", "random_state": 9})");
  const std::vector<uint8_t> bytes = serialize(*est);
  auto back = deserialize(bytes.data(), bytes.size());
  EXPECT_FALSE(back->fitted());
  EXPECT_EQ(back->get_params_json(), est->get_params_json());
  Context ctx = Context::cpu();
  std::vector<double> X(8, 1.0);
  std::vector<int32_t> labels(2);
  GPUML_EXPECT_ERROR(back->predict(ctx, host_view(X.data(), 2, 4), host_view(labels.data(), 2)), ErrorCode::not_fitted);
}

void expect_rejected_bytes(const std::vector<uint8_t>& bytes, const std::string& what) {
  try {
    deserialize(bytes.data(), bytes.size());
    ADD_FAILURE() << what << ": corrupt bytes were accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::io || e.code() == ErrorCode::invalid_argument)
        << what << ": " << error_code_name(e.code()) << ": " << e.what();
  }
}

TEST(CoreSerialize, CorruptBytesGiveErrorsNotCrashes) {
  GPUML_FRESH_RNG(rng);
  std::vector<double> X;
  KMeans km = fitted_model(rng, DType::float64, 20, 3, 3, X);
  const std::vector<uint8_t> bytes = serialize(km);

  for (std::size_t len = 0; len < bytes.size(); ++len)
    expect_rejected_bytes(std::vector<uint8_t>(bytes.begin(), bytes.begin() + len), "truncated to " + std::to_string(len));
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  expect_rejected_bytes(longer, "one trailing byte");

  // Every byte changed (bytes 12..15 are the header's reserved flags, which format version 1
  // does not read, so a change there is not corruption of anything).
  for (std::size_t pos = 0; pos < bytes.size(); ++pos) {
    if (pos >= 12 && pos < 16) continue;
    std::vector<uint8_t> flipped = bytes;
    flipped[pos] ^= static_cast<uint8_t>(1 + rng() % 255);
    expect_rejected_bytes(flipped, "byte " + std::to_string(pos) + " changed");
  }
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> garbage(rng() % 512);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    if (trial % 2 == 0 && garbage.size() >= 8) std::memcpy(garbage.data(), "GPUMLMDL", 8);  // past the magic check
    expect_rejected_bytes(garbage, "random bytes");
  }
  GPUML_EXPECT_ERROR(deserialize(nullptr, 0), ErrorCode::io);
  GPUML_EXPECT_ERROR(deserialize(nullptr, 100), ErrorCode::invalid_argument);
}

TEST(CoreSerialize, RestoreRejectsInconsistentAttributes) {
  GPUML_FRESH_RNG(rng);
  std::vector<double> X;
  const int64_t n = 30, d = 4, k = 3;
  KMeans km = fitted_model(rng, DType::float64, n, d, k, X);
  // A copy of the fitted attributes, for one change at a time.
  auto attributes = [&km]() {
    std::map<std::string, HostArray> out;
    for (const std::string& name : km.attribute_names()) {
      const HostArray& a = km.attribute(name);
      HostArray copy = a.spec().ndim == 0   ? HostArray::scalar(a.dtype())
                       : a.spec().ndim == 1 ? HostArray(a.dtype(), a.spec().shape[0])
                                            : HostArray(a.dtype(), a.spec().shape[0], a.spec().shape[1]);
      std::memcpy(copy.view().data, a.view().data, a.bytes());
      out.emplace(name, std::move(copy));
    }
    return out;
  };
  KMeans target(km.params());
  {
    auto ok = attributes();
    target.restore(std::move(ok));
    EXPECT_TRUE(target.fitted());
  }
  auto expect_rejected = [&](std::map<std::string, HostArray> a, const char* what) {
    KMeans fresh(km.params());
    try {
      fresh.restore(std::move(a));
      ADD_FAILURE() << what << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::invalid_argument || e.code() == ErrorCode::io) << what << ": " << e.what();
    }
    EXPECT_FALSE(fresh.fitted()) << what;
  };
  {
    auto a = attributes();
    a.erase("inertia_");
    expect_rejected(std::move(a), "a missing attribute");
  }
  {
    auto a = attributes();
    a.emplace("coef_", HostArray(DType::float64, 3));
    expect_rejected(std::move(a), "an unknown attribute");
  }
  {
    auto a = attributes();
    a["cluster_centers_"] = HostArray(DType::float64, k + 1, d);
    expect_rejected(std::move(a), "centers with too many rows");
  }
  {
    auto a = attributes();
    a["cluster_centers_"] = HostArray(DType::int32, k, d);
    expect_rejected(std::move(a), "integer centers");
  }
  {
    auto a = attributes();
    a["cluster_centers_"].as<double>()[1] = std::nan("");
    expect_rejected(std::move(a), "NaN in the centers");
  }
  {
    auto a = attributes();
    *a["n_features_in_"].as<int64_t>() = d + 1;
    expect_rejected(std::move(a), "n_features_in_ unlike the centers");
  }
  {
    auto a = attributes();
    a["labels_"].as<int32_t>()[0] = static_cast<int32_t>(k);
    expect_rejected(std::move(a), "a label out of range");
  }
  {
    auto a = attributes();
    a["labels_"] = HostArray(DType::int64, n);
    expect_rejected(std::move(a), "int64 labels");
  }
  {
    auto a = attributes();
    *a["inertia_"].as<double>() = -1.0;
    expect_rejected(std::move(a), "negative inertia");
  }
  {
    auto a = attributes();
    a["n_iter_"] = HostArray(DType::int64, 1);
    expect_rejected(std::move(a), "a 1-d n_iter_");
  }
  {
    auto a = attributes();
    a["inertia_"] = HostArray();
    expect_rejected(std::move(a), "an empty inertia_");
  }
}

}  // namespace
}  // namespace gpuml
