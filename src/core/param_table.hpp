#pragma once
// One table per estimator declares each of its parameters once: the name, the JSON forms a value
// may take (type, bounds, choices), the default (the Params struct's), whether every rank of a
// distributed fit must pass the same value, and a line of documentation. From the table come
//   - reading params JSON into the Params struct (unknown names and values of no declared form are
//     invalid_argument errors naming the parameter),
//   - checking a Params struct built in C++ (the estimator's constructor calls check),
//   - get_params JSON,
//   - the schema gpuml_estimator_params_schema returns: the Python bindings build their
//     constructors, defaults and scikit-learn constraints from it, and the params fuzzer its
//     dictionary.
// Rules that tie several parameters together stay hand-written, in the table's `relations`.
#include <nlohmann/json.hpp>

#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/distributed.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

// One JSON form of a parameter's value. Bounds and `closed` follow scikit-learn's Interval
// ("left", "right", "both", "neither": which finite bounds are allowed values); a missing bound is
// infinite, and numbers must be finite.
struct ParamForm {
  enum class Type {
    integer,  // a JSON integer (or a float without fraction) within the bounds
    number,   // a finite JSON number within the bounds
    boolean,
    string,   // one of `choices`
    null,     // null has a meaning of its own (else null means the default)
    seed,     // a non-negative integer or null (Python: scikit-learn's "random_state")
    verbose,  // an integer >= 0 (Python: scikit-learn's "verbose", which takes booleans too)
    matrix,   // a non-empty list of equally long, non-empty lists of finite numbers (Python: "array-like")
    numbers,  // a list of finite numbers, maybe empty (Python: "array-like")
    pairs,    // a list of [label, weight] pairs of finite numbers, weight >= 0 (Python: a dict)
    // A JSON float (never an integer) within the bounds: scikit-learn's RealNotInt, the fraction
    // form of a count-or-fraction parameter. In a row with this form a JSON float is the
    // fraction, never a count, even where an integer form would take a float without fraction.
    real_not_int,
  };
  Type type = Type::integer;
  std::optional<double> min, max;
  std::string closed = "both";
  std::vector<std::string> choices;
  bool hidden = false;  // accepted but not offered (scikit-learn's Hidden: deprecation sentinels)

  bool matches(const nlohmann::json& value) const;
  std::string describe() const;  // "an integer >= 1", "\"auto\"", ...
  nlohmann::json schema() const;
};

ParamForm integer_in(std::optional<double> min, std::optional<double> max = std::nullopt, const char* closed = "left");
ParamForm number_in(std::optional<double> min, std::optional<double> max = std::nullopt, const char* closed = "left");
ParamForm real_not_int_in(std::optional<double> min, std::optional<double> max = std::nullopt, const char* closed = "left");
ParamForm any_integer();
ParamForm any_number();
ParamForm boolean();
ParamForm one_of(std::vector<std::string> choices, bool hidden = false);
ParamForm null_form();
ParamForm seed();
ParamForm verbose();
ParamForm matrix();
ParamForm numbers();
ParamForm pairs();

// The values of a numbers or matrix form, row after row.
std::vector<double> flat_numbers(const nlohmann::json& value);

// The table-independent steps, in params.cpp.
[[noreturn]] void fail_param(const char* kind, const std::string& name, const std::vector<ParamForm>& forms,
                             const nlohmann::json& got);
void require_form(const char* kind, const std::string& name, const std::vector<ParamForm>& forms,
                  const nlohmann::json& value);
void refuse_unknown(const char* kind, const nlohmann::json& params, const std::vector<std::string>& names);
nlohmann::json param_schema(const std::string& name, const std::vector<ParamForm>& forms,
                            const nlohmann::json& default_value, bool ranks_agree, bool in_constructor,
                            const std::string& doc);
// A value every rank must agree on (`name` must outlive the field: the table's row name), as agree_on_every_rank compares it: integers and booleans as
// they are, numbers by their bits, anything else by a hash of its JSON text.
RankField rank_field(const std::string& name, const nlohmann::json& value);
[[noreturn]] void fail_narrow(const std::string& name, const nlohmann::json& got);  // past a 32-bit field

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// A Params field's value as JSON and back (after require_form accepted the value).
template <class F>
nlohmann::json field_to_json(const F& value) {
  if constexpr (is_optional<F>::value)
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  else
    return nlohmann::json(value);
}
template <class F>
F field_from_json(const nlohmann::json& value) {
  if constexpr (is_optional<F>::value) {
    if (value.is_null()) return std::nullopt;
    return field_from_json<typename F::value_type>(value);
  } else if constexpr (std::is_integral_v<F> && !std::is_same_v<F, bool>) {
    return static_cast<F>(value.is_number_integer() ? value.get<F>() : static_cast<F>(value.get<double>()));
  } else {
    return value.get<F>();
  }
}

template <class P>
struct ParamRow {
  std::string name;
  std::vector<ParamForm> forms;
  std::string doc;
  std::function<void(P&, const nlohmann::json&)> set;  // the value matches one of forms (or is null)
  std::function<nlohmann::json(const P&)> get;
  bool ranks_agree = true;
  bool in_constructor = true;  // false: gpuml's own, set by the bindings (e.g. a warm start's coefficients)

  ParamRow&& per_rank() && {  // may differ between the ranks of a distributed fit
    ranks_agree = false;
    return std::move(*this);
  }
  ParamRow&& not_in_constructor() && {
    in_constructor = false;
    return std::move(*this);
  }
};

// A row stored in a Params field of a plain type (integers, double, bool, string, std::optional of
// one of them); custom rows give their own set and get.
template <class P, class F>
ParamRow<P> field(const char* name, F P::*member, std::vector<ParamForm> forms, const char* doc) {
  return ParamRow<P>{name, std::move(forms), doc,
                     [member, name](P& p, const nlohmann::json& v) {
                       (void)name;  // read by 32-bit integer fields only
                       if constexpr (std::is_integral_v<F> && !std::is_same_v<F, bool> && sizeof(F) < sizeof(int64_t)) {
                         const int64_t wide = field_from_json<int64_t>(v);  // narrower fields must not wrap
                         if (wide < std::numeric_limits<F>::min() || wide > std::numeric_limits<F>::max())
                           fail_narrow(name, v);
                       }
                       p.*member = field_from_json<F>(v);
                     },
                     [member](const P& p) { return field_to_json(p.*member); }};
}

// Rows from several lists, in order (rows shared by two tables, say).
template <class P>
std::vector<ParamRow<P>> joined(std::initializer_list<std::vector<ParamRow<P>>> parts) {
  std::vector<ParamRow<P>> rows;
  for (const auto& part : parts) rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

template <class P>
class ParamTable {
 public:
  using Relations = std::function<void(const P&)>;  // throws invalid_argument naming the parameters

  ParamTable(const char* kind, std::vector<ParamRow<P>> rows, Relations relations = {})
      : kind_(kind), rows_(std::move(rows)), relations_(std::move(relations)) {}

  // Params from JSON (each value's form checked): absent names keep the struct's defaults; null is the default too unless the
  // parameter declares a null form.
  P read(const nlohmann::json& params) const {
    std::vector<std::string> names;
    for (const auto& row : rows_) names.push_back(row.name);
    refuse_unknown(kind_, params, names);
    P p{};
    for (const auto& row : rows_) {
      const auto it = params.find(row.name);
      if (it == params.end() || (it->is_null() && !accepts_null(row))) continue;
      require_form(kind_, row.name, row.forms, *it);
      row.set(p, *it);
    }
    return p;  // the estimator's constructor checks it whole (check)
  }

  void check(const P& p) const {
    for (const auto& row : rows_) {
      const nlohmann::json value = row.get(p);
      if (!(value.is_null() && !accepts_null(row))) require_form(kind_, row.name, row.forms, value);
    }
    if (relations_) relations_(p);
  }

  // Only the relations between fields: for a setter that checked its own field (an array
  // parameter, whose JSON form would cost ~0.3 ms at 256 x 64).
  void check_relations(const P& p) const {
    if (relations_) relations_(p);
  }

  nlohmann::json write(const P& p) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& row : rows_) j[row.name] = row.get(p);
    return j;
  }

  // The parameters every rank of a distributed fit must pass alike (agree_on_every_rank's fields).
  std::vector<RankField> rank_fields(const P& p) const {
    std::vector<RankField> fields;
    for (const auto& row : rows_)
      if (row.ranks_agree) fields.push_back(rank_field(row.name, row.get(p)));
    return fields;
  }

  nlohmann::json schema() const {
    nlohmann::json parameters = nlohmann::json::array();
    const P defaults{};
    for (const auto& row : rows_)
      parameters.push_back(
          param_schema(row.name, row.forms, row.get(defaults), row.ranks_agree, row.in_constructor, row.doc));
    return {{"kind", kind_}, {"parameters", std::move(parameters)}};
  }

  const char* kind() const { return kind_; }

 private:
  static bool accepts_null(const ParamRow<P>& row) {
    for (const auto& f : row.forms)
      if (f.type == ParamForm::Type::null || f.type == ParamForm::Type::seed) return true;
    return false;
  }

  const char* kind_;
  std::vector<ParamRow<P>> rows_;
  Relations relations_;
};

}  // namespace gpuml::detail
