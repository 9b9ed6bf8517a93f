#pragma once
// A saved model taken apart into its kind, params string and attribute arrays, edited, and put
// back together with the payload size and checksum repaired: how the C ABI tests build hostile
// model files that get past the header checks to the params parser and each kind's restore.
// The format (src/core/estimator.cpp): "GPUMLMDL", u32 version, u32 flags, u64 payload size,
// payload, u64 FNV-1a of the payload; payload: kind, params, u32 array count, then per array its
// name, i32 dtype, i32 ndim, i64 rows, i64 cols, u64 byte count and bytes (strings: u32 length
// and bytes). Little-endian, as the library writes it on every supported host.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuml::test::capi {

struct ModelArray {
  std::string name;
  int32_t dtype = 0, ndim = 0;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> bytes;

  template <typename T> T* values() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T> int64_t size() const { return static_cast<int64_t>(bytes.size() / sizeof(T)); }
};

struct ModelParts {
  std::vector<uint8_t> header;  // magic, version, flags (the size is rewritten)
  std::string kind, params;
  std::vector<ModelArray> arrays;

  ModelArray& array(const std::string& name) {
    for (ModelArray& a : arrays)
      if (a.name == name) return a;
    throw std::runtime_error("the model has no array " + name);
  }
};

constexpr std::size_t kModelHeaderBytes = 24;

inline ModelParts split_model(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < kModelHeaderBytes + 8) throw std::runtime_error("not a model");
  std::size_t at = kModelHeaderBytes;
  const std::size_t end = bytes.size() - 8;
  auto take = [&](void* out, std::size_t n) {
    if (n > end - at) throw std::runtime_error("truncated model");
    std::memcpy(out, bytes.data() + at, n);
    at += n;
  };
  auto str = [&] {
    uint32_t n = 0;
    take(&n, 4);
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  };
  ModelParts parts;
  parts.header.assign(bytes.begin(), bytes.begin() + 16);
  parts.kind = str();
  parts.params = str();
  uint32_t count = 0;
  take(&count, 4);
  for (uint32_t i = 0; i < count; ++i) {
    ModelArray a;
    a.name = str();
    take(&a.dtype, 4);
    take(&a.ndim, 4);
    take(&a.rows, 8);
    take(&a.cols, 8);
    uint64_t n = 0;
    take(&n, 8);
    if (n > end - at) throw std::runtime_error("truncated model");
    a.bytes.resize(n);
    take(a.bytes.data(), n);
    parts.arrays.push_back(std::move(a));
  }
  return parts;
}

inline std::vector<uint8_t> join_model(const ModelParts& parts) {
  std::vector<uint8_t> payload;
  auto put = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    payload.insert(payload.end(), b, b + n);
  };
  auto str = [&](const std::string& s) {
    const auto n = static_cast<uint32_t>(s.size());
    put(&n, 4);
    put(s.data(), s.size());
  };
  str(parts.kind);
  str(parts.params);
  const auto count = static_cast<uint32_t>(parts.arrays.size());
  put(&count, 4);
  for (const ModelArray& a : parts.arrays) {
    str(a.name);
    put(&a.dtype, 4);
    put(&a.ndim, 4);
    put(&a.rows, 8);
    put(&a.cols, 8);
    const auto n = static_cast<uint64_t>(a.bytes.size());
    put(&n, 8);
    put(a.bytes.data(), a.bytes.size());
  }
  std::vector<uint8_t> out(parts.header);
  const auto size = static_cast<uint64_t>(payload.size());
  out.resize(16 + 8);
  std::memcpy(out.data() + 16, &size, 8);
  out.insert(out.end(), payload.begin(), payload.end());
  uint64_t h = 0xcbf29ce484222325ull;  // 64-bit FNV-1a
  for (uint8_t b : payload) h = (h ^ b) * 0x100000001b3ull;
  const auto* sum = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), sum, sum + 8);
  return out;
}

}  // namespace gpuml::test::capi
