#include "core/params.hpp"
#include "core/param_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace gpuml::detail {

std::string excerpt(const std::string& text) {
  if (text.size() <= kExcerptChars) return text;
  std::size_t cut = kExcerptChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " characters)";
}

std::string json_excerpt(const nlohmann::json& value) {
  // dump()'s compact format, written with an explicit stack that stops growing once the text is
  // longer than the excerpt: each container opened adds a character, so the stack stays short.
  struct Open {
    const nlohmann::json* container;
    nlohmann::json::const_iterator next;
  };
  std::vector<Open> stack;
  std::string text;
  const auto scalar = [](const nlohmann::json& v) -> std::string {
    if (v.is_number_float() && !std::isfinite(v.get<double>()))  // dump() would say null
      return std::isnan(v.get<double>()) ? "NaN" : v.get<double>() > 0 ? "Infinity" : "-Infinity";
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  const auto write = [&](const nlohmann::json& v) {
    if (!v.is_structured()) {
      text += scalar(v);
      return;
    }
    text += v.is_object() ? '{' : '[';
    stack.push_back({&v, v.cbegin()});
  };
  write(value);
  while (!stack.empty() && text.size() <= kExcerptChars) {
    Open& open = stack.back();
    if (open.next == open.container->cend()) {
      text += open.container->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (open.next != open.container->cbegin()) text += ',';
    const auto item = open.next++;
    if (open.container->is_object()) text += scalar(item.key()) + ':';
    write(*item);  // may grow the stack: `open` is not used after this
  }
  if (text.size() <= kExcerptChars && stack.empty()) return text;
  std::size_t cut = std::min(text.size(), kExcerptChars);
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

nlohmann::json parse_params(const std::string& params_json, const char* kind) {
  if (params_json.empty()) return nlohmann::json::object();
  // The parser itself keeps its own stack on the heap; the callback refuses containers past the
  // cap (their contents are discarded as they are read, so nothing deep is ever built).
  bool too_deep = false;
  const auto depth_guard = [&too_deep](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= kMaxParamsDepth) too_deep = true;  // depth: the containers around this one
    return !(opens && depth >= kMaxParamsDepth);
  };
  nlohmann::json j = nlohmann::json::parse(params_json, depth_guard, /*allow_exceptions=*/false);
  GPUML_EXPECT(!j.is_discarded(), std::string("params for \"") + kind + "\" are not valid JSON: " + excerpt(params_json));
  GPUML_EXPECT(!too_deep, std::string("params for \"") + kind + "\" are nested more than " +
                              std::to_string(kMaxParamsDepth) + " levels deep (the limit): " + excerpt(params_json));
  if (j.is_null()) return nlohmann::json::object();
  GPUML_EXPECT(j.is_object(), std::string("params for \"") + kind + "\" must be a JSON object, got " + json_excerpt(j));
  return j;
}

void ParamReader::fail(const char* name, const std::string& expected) const {
  // The parameter may be absent (a value another one requires): say so rather than fail to look.
  const auto it = params_.is_object() ? params_.find(name) : params_.end();
  const std::string got = it != params_.end() ? json_excerpt(*it) : std::string("nothing");
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
  constexpr int kNamesShown = 8;  // a message, not a listing of every key a caller sent
  std::string unknown;
  int n_unknown = 0;
  for (auto it = params_.begin(); it != params_.end(); ++it) {
    if (known_.count(it.key())) continue;
    if (++n_unknown <= kNamesShown) unknown += (unknown.empty() ? "'" : ", '") + excerpt(it.key()) + "'";
  }
  if (n_unknown > kNamesShown) unknown += " and " + std::to_string(n_unknown - kNamesShown) + " more";
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

// ---- parameter tables (param_table.hpp) ------------------------------------------------------

namespace gpuml::detail {

namespace {

bool is_integer_value(const nlohmann::json& v) {
  if (v.is_number_integer())
    return !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18;
}

bool within(const ParamForm& f, double x) {
  const bool closed_low = f.closed == "left" || f.closed == "both", closed_high = f.closed == "right" || f.closed == "both";
  if (f.min && (closed_low ? x < *f.min : x <= *f.min)) return false;
  if (f.max && (closed_high ? x > *f.max : x >= *f.max)) return false;
  return true;
}

std::string number_text(double x, bool integer) {
  if (integer || (x == std::floor(x) && std::fabs(x) < 1e15)) return std::to_string(static_cast<int64_t>(x));
  return nlohmann::json(x).dump();
}

std::string bounds_text(const ParamForm& f, bool integer) {
  const bool closed_low = f.closed == "left" || f.closed == "both", closed_high = f.closed == "right" || f.closed == "both";
  if (f.min && f.max)
    return std::string(" in ") + (closed_low ? "[" : "(") + number_text(*f.min, integer) + ", " +
           number_text(*f.max, integer) + (closed_high ? "]" : ")");
  if (f.min) return std::string(closed_low ? " >= " : " > ") + number_text(*f.min, integer);
  if (f.max) return std::string(closed_high ? " <= " : " < ") + number_text(*f.max, integer);
  return "";
}

bool finite_number(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

}  // namespace

static ParamForm form_of(ParamForm::Type type) {
  ParamForm f;
  f.type = type;
  return f;
}
static ParamForm interval(ParamForm::Type type, std::optional<double> min, std::optional<double> max, const char* closed) {
  ParamForm f = form_of(type);
  f.min = min;
  f.max = max;
  f.closed = closed;
  return f;
}

ParamForm integer_in(std::optional<double> min, std::optional<double> max, const char* closed) {
  return interval(ParamForm::Type::integer, min, max, closed);
}
ParamForm number_in(std::optional<double> min, std::optional<double> max, const char* closed) {
  return interval(ParamForm::Type::number, min, max, closed);
}
ParamForm real_not_int_in(std::optional<double> min, std::optional<double> max, const char* closed) {
  return interval(ParamForm::Type::real_not_int, min, max, closed);
}
ParamForm any_integer() { return form_of(ParamForm::Type::integer); }
ParamForm any_number() { return form_of(ParamForm::Type::number); }
ParamForm boolean() { return form_of(ParamForm::Type::boolean); }
ParamForm one_of(std::vector<std::string> choices, bool hidden) {
  ParamForm f = form_of(ParamForm::Type::string);
  f.choices = std::move(choices);
  f.hidden = hidden;
  return f;
}
ParamForm null_form() { return form_of(ParamForm::Type::null); }
ParamForm seed() { return form_of(ParamForm::Type::seed); }
ParamForm verbose() { return form_of(ParamForm::Type::verbose); }
ParamForm matrix() { return form_of(ParamForm::Type::matrix); }
ParamForm numbers() { return form_of(ParamForm::Type::numbers); }
ParamForm pairs() { return form_of(ParamForm::Type::pairs); }

bool ParamForm::matches(const nlohmann::json& v) const {
  switch (type) {
    case Type::integer: return is_integer_value(v) && within(*this, v.get<double>());
    case Type::number: return finite_number(v) && within(*this, v.get<double>());
    case Type::real_not_int: return v.is_number_float() && finite_number(v) && within(*this, v.get<double>());
    case Type::boolean: return v.is_boolean();
    case Type::string:
      return v.is_string() && std::find(choices.begin(), choices.end(), v.get<std::string>()) != choices.end();
    case Type::null: return v.is_null();
    case Type::seed: return v.is_null() || (v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() >= 0));
    case Type::verbose: return v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() >= 0);
    case Type::matrix: {
      if (!v.is_array() || v.empty() || !v[0].is_array() || v[0].empty()) return false;
      for (const auto& row : v) {
        if (!row.is_array() || row.size() != v[0].size()) return false;
        for (const auto& x : row)
          if (!finite_number(x)) return false;
      }
      return true;
    }
    case Type::numbers: {
      if (!v.is_array()) return false;
      for (const auto& x : v)
        if (!finite_number(x)) return false;
      return true;
    }
    case Type::pairs: {
      if (!v.is_array()) return false;
      for (const auto& pair : v)
        if (!pair.is_array() || pair.size() != 2 || !finite_number(pair[0]) || !finite_number(pair[1]) ||
            pair[1].get<double>() < 0)
          return false;
      return true;
    }
  }
  return false;
}

std::string ParamForm::describe() const {
  switch (type) {
    case Type::integer: return "an integer" + bounds_text(*this, true);
    case Type::number: return "a finite number" + bounds_text(*this, false);
    case Type::real_not_int: return "a float" + bounds_text(*this, false);
    case Type::boolean: return "true or false";
    case Type::string: {
      std::string text;
      for (std::size_t i = 0; i < choices.size(); ++i)
        text += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + nlohmann::json(choices[i]).dump();
      return text;
    }
    case Type::null: return "null";
    case Type::seed: return "null or an integer >= 0";
    case Type::verbose: return "an integer >= 0";
    case Type::matrix: return "a list of equally long lists of finite numbers";
    case Type::numbers: return "a list of finite numbers";
    case Type::pairs: return "a list of [label, weight] pairs of finite numbers with weight >= 0";
  }
  return "";
}

nlohmann::json ParamForm::schema() const {
  static const char* const names[] = {"integer", "number", "boolean", "string", "null",
                                      "seed",    "verbose", "matrix",  "numbers", "pairs", "real_not_int"};
  nlohmann::json j = {{"type", names[static_cast<int>(type)]}};
  if (type == Type::integer || type == Type::number || type == Type::real_not_int) {
    const auto bound = [&](double x) { return type == Type::integer ? nlohmann::json(static_cast<int64_t>(x)) : nlohmann::json(x); };
    j["min"] = min ? bound(*min) : nlohmann::json(nullptr);
    j["max"] = max ? bound(*max) : nlohmann::json(nullptr);
    j["closed"] = closed;
  }
  if (type == Type::string) j["choices"] = choices;
  if (hidden) j["hidden"] = true;
  return j;
}

void fail_param(const char* kind, const std::string& name, const std::vector<ParamForm>& forms, const nlohmann::json& got) {
  std::vector<std::string> shown;  // one item per choice, so the list reads "a, b or c"
  for (const auto& f : forms) {
    if (f.hidden) continue;
    if (f.type == ParamForm::Type::string)
      for (const auto& choice : f.choices) shown.push_back(nlohmann::json(choice).dump());
    else
      shown.push_back(f.describe());
  }
  std::string expected;
  for (std::size_t i = 0; i < shown.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == shown.size() ? " or " : ", ") + shown[i];
  throw_error(ErrorCode::invalid_argument,
              std::string(kind) + " parameter '" + name + "' must be " + expected + ", got " + json_excerpt(got));
}

void require_form(const char* kind, const std::string& name, const std::vector<ParamForm>& forms,
                  const nlohmann::json& value) {
  // A JSON float is a count-or-fraction parameter's fraction, as scikit-learn's Integral refuses floats.
  const bool float_is_fraction =
      value.is_number_float() &&
      std::any_of(forms.begin(), forms.end(), [](const ParamForm& f) { return f.type == ParamForm::Type::real_not_int; });
  for (const auto& f : forms)
    if (f.matches(value) && !(float_is_fraction && f.type == ParamForm::Type::integer)) return;
  fail_param(kind, name, forms, value);
}

void refuse_unknown(const char* kind, const nlohmann::json& params, const std::vector<std::string>& names) {
  ParamReader reader(params, kind);
  for (const auto& name : names) reader.has(name.c_str());
  reader.finish();
}

RankField rank_field(const std::string& name, const nlohmann::json& value) {
  if (value.is_boolean()) return {name.c_str(), value.get<bool>() ? 1 : 0};
  if (value.is_number_integer()) return {name.c_str(), value.get<int64_t>()};
  if (value.is_number_float()) return {name.c_str(), bits_of(value.get<double>())};
  return {name.c_str(), hash_of(value)};
}

void fail_narrow(const std::string& name, const nlohmann::json& got) {
  throw_error(ErrorCode::invalid_argument,
              "parameter '" + name + "' must be an integer that fits in 32 bits, got " + json_excerpt(got));
}

nlohmann::json param_schema(const std::string& name, const std::vector<ParamForm>& forms,
                            const nlohmann::json& default_value, bool ranks_agree, bool in_constructor,
                            const std::string& doc) {
  nlohmann::json form_list = nlohmann::json::array();
  for (const auto& f : forms) form_list.push_back(f.schema());
  return {{"name", name},         {"forms", std::move(form_list)},  {"default", default_value},
          {"ranks_agree", ranks_agree}, {"constructor", in_constructor}, {"doc", doc}};
}

std::vector<double> flat_numbers(const nlohmann::json& value) {
  std::vector<double> values;
  for (const auto& item : value) {
    if (item.is_array())
      for (const auto& x : item) values.push_back(x.get<double>());
    else
      values.push_back(item.get<double>());
  }
  return values;
}

}  // namespace gpuml::detail
