#pragma once
// Reading estimator parameters from a JSON object: unknown names and wrong types are
// invalid_argument errors that name the parameter.
#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

// The deepest nesting parse_params accepts (the top-level object is level 1). Real params need 3
// (class_weight pairs, KMeans init rows); the cap keeps every later walk over the value (copies,
// comparisons, dump) from recursing deeper than this, whatever the caller sends.
constexpr int kMaxParamsDepth = 32;

// Parses params_json (empty or null means {}); throws invalid_argument on bad JSON, a non-object,
// or nesting deeper than kMaxParamsDepth.
nlohmann::json parse_params(const std::string& params_json, const char* kind);

// A caller's text or JSON value as it goes into an error message: at most kExcerptChars
// characters (cut at a UTF-8 character boundary), with the full length when cut. json_excerpt
// renders the value as dump() does, but iteratively and only as far as the excerpt needs, so a
// huge or deeply nested value costs neither time nor stack.
constexpr std::size_t kExcerptChars = 80;
std::string excerpt(const std::string& text);
std::string json_excerpt(const nlohmann::json& value);

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

// A classifier's class_weight in the C ABI's JSON: one of the presets (a string), or a list of
// [label, weight] pairs (JSON object keys would have to be strings, and labels are numbers), or
// null. Empty preset and no pairs: null.
nlohmann::json class_weight_json(const std::string& preset, const std::vector<std::pair<double, double>>& pairs);
// Reads it (absent or null: nothing), checking the preset is one of `presets`, labels finite
// and weights finite and >= 0.
void read_class_weight(ParamReader& reader, const std::vector<std::string>& presets, std::string& preset,
                       std::vector<std::pair<double, double>>& pairs);

}  // namespace gpuml::detail
