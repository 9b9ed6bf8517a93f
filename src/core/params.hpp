#pragma once
// Reading estimator parameters from a JSON object: unknown names and wrong types are
// invalid_argument errors that name the parameter.
#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

// Parses params_json (empty or null means {}); throws invalid_argument on bad JSON or a non-object.
nlohmann::json parse_params(const std::string& params_json, const char* kind);

class ParamReader {
 public:
  ParamReader(const nlohmann::json& params, const char* kind) : params_(params), kind_(kind) {}

  // True when the parameter is present and not null. Marks it as known.
  bool has(const char* name);
  // The raw value (after has(name) returned true).
  const nlohmann::json& raw(const char* name);

  int64_t get_int(const char* name, int64_t fallback);       // JSON integer (or a float with no fraction)
  double get_double(const char* name, double fallback);      // JSON number
  bool get_bool(const char* name, bool fallback);
  std::string get_string(const char* name, const std::string& fallback);
  std::optional<uint64_t> get_seed(const char* name);        // null or a non-negative integer

  // Throws invalid_argument naming every parameter that was never asked for.
  void finish() const;

  [[noreturn]] void fail(const char* name, const std::string& expected) const;

 private:
  const nlohmann::json& params_;
  const char* kind_;
  std::set<std::string> known_;
};

}  // namespace gpuml::detail
