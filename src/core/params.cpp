#include "core/params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuml::detail {

nlohmann::json parse_params(const std::string& params_json, const char* kind) {
  if (params_json.empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  GPUML_EXPECT(!j.is_discarded(), std::string("params for \"") + kind + "\" are not valid JSON: " + params_json);
  if (j.is_null()) return nlohmann::json::object();
  GPUML_EXPECT(j.is_object(), std::string("params for \"") + kind + "\" must be a JSON object, got " + j.dump());
  return j;
}

void ParamReader::fail(const char* name, const std::string& expected) const {
  // The parameter may be absent (a value another one requires): say so rather than fail to look.
  const auto it = params_.is_object() ? params_.find(name) : params_.end();
  const std::string got = it != params_.end() ? it->dump() : std::string("nothing");
  throw_error(ErrorCode::invalid_argument, std::string(kind_) + " parameter '" + name + "' must be " + expected +
                                               ", got " + got);
}

bool ParamReader::has(const char* name) {
  known_.insert(name);
  auto it = params_.find(name);
  return it != params_.end() && !it->is_null();
}

const nlohmann::json& ParamReader::raw(const char* name) { return params_.at(name); }

int64_t ParamReader::get_int(const char* name, int64_t fallback) {
  if (!has(name)) return fallback;
  const auto& v = params_.at(name);
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(name, "an integer that fits in 64 bits");
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  fail(name, "an integer");
}

double ParamReader::get_double(const char* name, double fallback) {
  if (!has(name)) return fallback;
  const auto& v = params_.at(name);
  if (!v.is_number() || v.is_boolean()) fail(name, "a number");
  return v.get<double>();
}

bool ParamReader::get_bool(const char* name, bool fallback) {
  if (!has(name)) return fallback;
  const auto& v = params_.at(name);
  if (!v.is_boolean()) fail(name, "true or false");
  return v.get<bool>();
}

std::string ParamReader::get_string(const char* name, const std::string& fallback) {
  if (!has(name)) return fallback;
  const auto& v = params_.at(name);
  if (!v.is_string()) fail(name, "a string");
  return v.get<std::string>();
}

std::optional<uint64_t> ParamReader::get_seed(const char* name) {
  if (!has(name)) return std::nullopt;
  const auto& v = params_.at(name);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    fail(name, "null or a non-negative integer");
  return v.get<uint64_t>();
}

void ParamReader::finish() const {
  std::string unknown;
  for (auto it = params_.begin(); it != params_.end(); ++it)
    if (!known_.count(it.key())) unknown += (unknown.empty() ? "'" : ", '") + it.key() + "'";
  GPUML_EXPECT(unknown.empty(), std::string("unknown ") + kind_ + " parameter(s): " + unknown);
}

nlohmann::json class_weight_json(const std::string& preset, const std::vector<std::pair<double, double>>& pairs) {
  if (!preset.empty()) return preset;
  if (pairs.empty()) return nullptr;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [label, weight] : pairs) list.push_back({label, weight});
  return list;
}

void read_class_weight(ParamReader& reader, const std::vector<std::string>& presets, std::string& preset,
                       std::vector<std::pair<double, double>>& pairs) {
  if (!reader.has("class_weight")) return;
  std::string expected = "null, a list of [label, weight] pairs with weight >= 0";
  for (const std::string& p : presets) expected += ", \"" + p + "\"";
  const nlohmann::json& cw = reader.raw("class_weight");
  if (cw.is_string()) {
    preset = cw.get<std::string>();
    if (std::find(presets.begin(), presets.end(), preset) == presets.end()) reader.fail("class_weight", expected);
  } else if (cw.is_array()) {
    for (const auto& pair : cw) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number())
        reader.fail("class_weight", expected);
      const double label = pair[0].get<double>(), weight = pair[1].get<double>();
      if (!std::isfinite(label) || !(std::isfinite(weight) && weight >= 0)) reader.fail("class_weight", expected);
      pairs.emplace_back(label, weight);
    }
  } else {
    reader.fail("class_weight", expected);
  }
}

}  // namespace gpuml::detail
