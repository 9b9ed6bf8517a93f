#include "gpuml/core/estimator.hpp"

#include <cstring>
#include <functional>
#include <utility>

#include "core/params.hpp"
#include "core/registry.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

Estimator::~Estimator() = default;

ArraySpec Estimator::output_spec(const std::string& method, int64_t) const {
  throw_error(ErrorCode::unsupported, std::string(kind()) + " has no method \"" + method + "\"");
}
void Estimator::predict(Context&, const ArrayView&, const ArrayView&) const {
  throw_error(ErrorCode::unsupported, std::string(kind()) + " has no predict");
}
void Estimator::transform(Context&, const ArrayView&, const ArrayView&) const {
  throw_error(ErrorCode::unsupported, std::string(kind()) + " has no transform");
}
void Estimator::predict_proba(Context&, const ArrayView&, const ArrayView&) const {
  throw_error(ErrorCode::unsupported, std::string(kind()) + " has no predict_proba");
}
bool Estimator::accepts_sparse() const { return false; }
namespace {
[[noreturn]] void no_sparse(const Estimator& e, const char* method) {
  throw_error(ErrorCode::unsupported, std::string(e.kind()) + "." + method +
                                          ": sparse input is not supported for it yet (pass a dense array)");
}
}  // namespace
void Estimator::fit_sparse(Context&, const SparseView&, const ArrayView*, const ArrayView*) { no_sparse(*this, "fit"); }
void Estimator::predict_sparse(Context&, const SparseView&, const ArrayView&) const { no_sparse(*this, "predict"); }
void Estimator::transform_sparse(Context&, const SparseView&, const ArrayView&) const { no_sparse(*this, "transform"); }
void Estimator::predict_proba_sparse(Context&, const SparseView&, const ArrayView&) const {
  no_sparse(*this, "predict_proba");
}
void Estimator::warm_start_from(const Estimator&) {
  throw_error(ErrorCode::unsupported, std::string(kind()) + " has no warm start from another estimator");
}
void Estimator::set_param_array(Context&, const std::string& name, const ArrayView&) {
  throw_error(ErrorCode::invalid_argument, std::string(kind()) + " has no array-valued parameter '" + name + "'");
}
void Estimator::require_fitted() const {
  if (!fitted())
    throw_error(ErrorCode::not_fitted,
                std::string("this ") + kind() + " estimator is not fitted yet: call fit before using it");
}

// ---- registry ------------------------------------------------------------------------------

namespace {
using Factory = std::function<std::unique_ptr<Estimator>(const nlohmann::json&)>;
using Schema = nlohmann::json (*)();
struct Kind {
  std::string name;
  Factory make;
  Schema params_schema;  // from the kind's parameter table
};
const std::vector<Kind>& factories() {
  static const std::vector<Kind> table = {
      {"kmeans", detail::kmeans_from_params, detail::kmeans_params_schema},
      {"linear_regression", detail::linear_regression_from_params, detail::linear_regression_params_schema},
      {"ridge", detail::ridge_from_params, detail::ridge_params_schema},
      {"elastic_net", detail::elastic_net_from_params, detail::elastic_net_params_schema},
      {"lasso", detail::lasso_from_params, detail::lasso_params_schema},
      {"logistic_regression", detail::logistic_regression_from_params, detail::logistic_regression_params_schema},
      {"pca", detail::pca_from_params, detail::pca_params_schema},
      {"truncated_svd", detail::truncated_svd_from_params, detail::truncated_svd_params_schema},
      {"random_forest_classifier", detail::random_forest_classifier_from_params,
       detail::random_forest_classifier_params_schema},
      {"random_forest_regressor", detail::random_forest_regressor_from_params,
       detail::random_forest_regressor_params_schema},
  };
  return table;
}
const Kind& find_kind(const std::string& kind) {
  for (const auto& entry : factories())
    if (entry.name == kind) return entry;
  std::string known;
  for (const auto& entry : factories()) known += (known.empty() ? "" : ", ") + entry.name;
  throw_error(ErrorCode::invalid_argument, "unknown estimator kind \"" + detail::excerpt(kind) + "\" (known: " + known + ")");
}
}  // namespace

std::unique_ptr<Estimator> make_estimator(const std::string& kind, const std::string& params_json) {
  return find_kind(kind).make(detail::parse_params(params_json, kind.c_str()));
}

std::vector<std::string> estimator_kinds() {
  std::vector<std::string> kinds;
  for (const auto& entry : factories()) kinds.push_back(entry.name);
  return kinds;
}

const std::string& estimator_params_schema(const std::string& kind) {
  // Rendered once per kind, then kept: the C ABI hands out pointers into these strings.
  static const std::vector<std::string> schemas = [] {
    std::vector<std::string> texts;
    for (const auto& entry : factories()) texts.push_back(entry.params_schema().dump());
    return texts;
  }();
  const Kind& entry = find_kind(kind);
  return schemas[static_cast<std::size_t>(&entry - factories().data())];
}

// ---- serialization -------------------------------------------------------------------------
// Layout (little-endian): "GPUMLMDL", u32 format version, u32 flags (0), u64 payload size,
// payload, u64 FNV-1a checksum of the payload. Payload: kind, params JSON, u32 array count, then
// per array: name, i32 dtype, i32 ndim, i64 shape[2], u64 byte count, bytes. Strings are a u32
// length and bytes.

namespace {
constexpr char kMagic[8] = {'G', 'P', 'U', 'M', 'L', 'M', 'D', 'L'};
constexpr uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;

uint64_t fnv1a(const uint8_t* p, std::size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

class Writer {
 public:
  template <typename T> void put(const T& v) { raw(&v, sizeof(T)); }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  Reader(const uint8_t* p, std::size_t n) : p_(p), n_(n) {}
  template <typename T> T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const uint8_t* take(std::size_t n) {
    if (n > n_ - pos_) corrupt("truncated");
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  std::string str() {
    auto n = get<uint32_t>();
    const uint8_t* at = take(n);
    return std::string(reinterpret_cast<const char*>(at), n);
  }
  bool done() const { return pos_ == n_; }
  [[noreturn]] static void corrupt(const std::string& why) {
    throw_error(ErrorCode::io, "corrupt or unsupported model bytes: " + why);
  }

 private:
  const uint8_t* p_;
  std::size_t n_;
  std::size_t pos_ = 0;
};
}  // namespace

std::vector<uint8_t> serialize(const Estimator& est) {
  Writer payload;
  payload.str(est.kind());
  payload.str(est.get_params_json());
  std::vector<std::string> names = est.fitted() ? est.attribute_names() : std::vector<std::string>{};
  payload.put(static_cast<uint32_t>(names.size()));
  for (const auto& name : names) {
    const HostArray& a = est.attribute(name);
    payload.str(name);
    payload.put(static_cast<int32_t>(a.dtype()));
    payload.put(a.spec().ndim);
    payload.put(a.spec().shape[0]);
    payload.put(a.spec().shape[1]);
    payload.put(static_cast<uint64_t>(a.bytes()));
    payload.raw(a.view().data, a.bytes());
  }
  Writer out;
  out.raw(kMagic, sizeof kMagic);
  out.put(kFormatVersion);
  out.put(uint32_t{0});
  out.put(static_cast<uint64_t>(payload.bytes.size()));
  out.raw(payload.bytes.data(), payload.bytes.size());
  out.put(fnv1a(payload.bytes.data(), payload.bytes.size()));
  return std::move(out.bytes);
}

std::unique_ptr<Estimator> deserialize(const void* data, std::size_t size) {
  GPUML_EXPECT(data != nullptr || size == 0, "model buffer is NULL");
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < kHeaderBytes + 8) Reader::corrupt("too short (" + std::to_string(size) + " bytes)");
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) Reader::corrupt("not a gpuml model (bad magic)");
  Reader header(bytes + 8, kHeaderBytes - 8);
  auto version = header.get<uint32_t>();
  if (version != kFormatVersion)
    Reader::corrupt("format version " + std::to_string(version) + ", this library reads " + std::to_string(kFormatVersion));
  if (header.get<uint32_t>() != 0) Reader::corrupt("unknown flags");
  auto payload_size = header.get<uint64_t>();
  if (payload_size != size - kHeaderBytes - 8) Reader::corrupt("payload size does not match the buffer size");
  const uint8_t* payload = bytes + kHeaderBytes;
  uint64_t stored;
  std::memcpy(&stored, payload + payload_size, 8);
  if (stored != fnv1a(payload, payload_size)) Reader::corrupt("checksum mismatch");

  Reader r(payload, payload_size);
  std::string kind = r.str();
  std::string params = r.str();
  auto est = make_estimator(kind, params);
  auto count = r.get<uint32_t>();
  std::map<std::string, HostArray> attributes;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name = r.str();
    auto dtype = r.get<int32_t>();
    auto ndim = r.get<int32_t>();
    auto rows = r.get<int64_t>();
    auto cols = r.get<int64_t>();
    auto nbytes = r.get<uint64_t>();
    if (!is_valid_dtype(dtype) || ndim < 0 || ndim > 2 || rows < 0 || cols < 0)
      Reader::corrupt("bad array header for '" + name + "'");
    const auto dt = static_cast<DType>(dtype);
    // Check the sizes against the payload before allocating anything.
    const uint64_t elems_max = payload_size / dtype_size(dt) + 1;
    const uint64_t r64 = ndim >= 1 ? static_cast<uint64_t>(rows) : 1, c64 = ndim == 2 ? static_cast<uint64_t>(cols) : 1;
    if (r64 > elems_max || c64 > elems_max || (c64 > 0 && r64 > elems_max / c64) || nbytes > payload_size)
      Reader::corrupt("array '" + name + "' is larger than the model");
    HostArray a = ndim == 0 ? HostArray::scalar(dt) : ndim == 1 ? HostArray(dt, rows) : HostArray(dt, rows, cols);
    if (nbytes != a.bytes()) Reader::corrupt("array '" + name + "' has " + std::to_string(nbytes) + " bytes for its shape");
    if (nbytes) std::memcpy(a.view().data, r.take(nbytes), nbytes);
    attributes.emplace(std::move(name), std::move(a));
  }
  if (!r.done()) Reader::corrupt("trailing bytes");
  if (count > 0) est->restore(std::move(attributes));
  return est;
}

}  // namespace gpuml
