// The collective checks shared by the distributed fits (see distributed.hpp).
#include "core/distributed.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

namespace gpuml::detail {

void throw_rank_failure(const std::vector<int64_t>& codes, int size, const std::string& estimator, const char* what) {
  for (int r = 0; r < size; ++r)
    if (codes[r] != 0)
      throw_error(static_cast<ErrorCode>(codes[r]), estimator + ": " + what + " failed on rank " + std::to_string(r) +
                                                         " of " + std::to_string(size) + " (that rank reports why)");
  throw_error(ErrorCode::internal, estimator + ": " + what + ": no rank failed");
}

RowCounts agree_on_every_rank(Comm& comm, const std::string& estimator, int64_t rows, const std::vector<RankField>& fields) {
  const int64_t n_fields = static_cast<int64_t>(fields.size()) + 1;  // + the number of rows
  std::vector<int64_t> mine(static_cast<std::size_t>(n_fields)), all(static_cast<std::size_t>(n_fields * comm.size()));
  mine[0] = rows;
  for (int64_t f = 1; f < n_fields; ++f) mine[f] = fields[f - 1].value;
  comm.allgather(mine.data(), n_fields, all.data(), DType::int64);
  RowCounts counts;
  for (int r = 0; r < comm.size(); ++r) {
    const int64_t* theirs = all.data() + r * n_fields;
    for (int64_t f = 1; f < n_fields; ++f)
      if (theirs[f] != all[f])
        throw_error(ErrorCode::invalid_argument,
                    estimator + ": the ranks disagree on " + fields[f - 1].name + ": rank 0 has " + std::to_string(all[f]) +
                        ", rank " + std::to_string(r) + " has " + std::to_string(theirs[f]) +
                        " (every rank must fit the same estimator on rows of the same width and dtype)");
    counts.rows.push_back(theirs[0]);
    counts.total += theirs[0];
  }
  return counts;
}

std::vector<double> union_over_ranks(Comm& comm, const std::vector<double>& sorted_values) {
  if (comm.size() == 1) return sorted_values;
  const std::vector<int64_t> counts = comm.allgather(static_cast<int64_t>(sorted_values.size()));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<double> all(static_cast<std::size_t>(total));
  comm.allgatherv(sorted_values.data(), static_cast<int64_t>(sorted_values.size()), all.data(), counts.data(),
                  DType::float64);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

int64_t bits_of(double v) {
  int64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

namespace {
constexpr uint64_t kFnvOffset = 1469598103934665603ull, kFnvPrime = 1099511628211ull;
}

int64_t hash_of(const std::vector<double>& values) {
  uint64_t h = kFnvOffset;
  for (double v : values) h = (h ^ static_cast<uint64_t>(bits_of(v))) * kFnvPrime;
  return static_cast<int64_t>(h);
}

int64_t hash_of(const std::string& text) {
  uint64_t h = kFnvOffset;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return static_cast<int64_t>(h);
}

namespace {
void mix(uint64_t& h, uint64_t v) { h = (h ^ v) * kFnvPrime; }
void hash_into(uint64_t& h, const nlohmann::json& value) {
  mix(h, static_cast<uint64_t>(value.type()));
  switch (value.type()) {
    case nlohmann::json::value_t::array:
      mix(h, value.size());
      for (const auto& item : value) hash_into(h, item);
      break;
    case nlohmann::json::value_t::object:
      mix(h, value.size());
      for (const auto& [key, item] : value.items()) {
        mix(h, static_cast<uint64_t>(hash_of(key)));
        hash_into(h, item);
      }
      break;
    case nlohmann::json::value_t::string: mix(h, static_cast<uint64_t>(hash_of(value.get_ref<const std::string&>()))); break;
    case nlohmann::json::value_t::boolean: mix(h, value.get<bool>() ? 1u : 0u); break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: mix(h, value.get<uint64_t>()); break;
    case nlohmann::json::value_t::number_float: mix(h, static_cast<uint64_t>(bits_of(value.get<double>()))); break;
    default: break;
  }
}
}  // namespace

int64_t hash_of(const nlohmann::json& value) {
  uint64_t h = kFnvOffset;
  hash_into(h, value);
  return static_cast<int64_t>(h);
}

}  // namespace gpuml::detail
