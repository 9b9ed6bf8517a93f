#pragma once
// What every distributed (SPMD) fit does before its first data collective, written once:
//  - check_on_every_rank: a rank's local checks (shapes, staging, NaN) either pass on every
//    rank or make every rank throw, instead of leaving the ranks that passed waiting forever in
//    a collective that the failing rank never reaches;
//  - agree_on_every_rank: the ranks fit the same thing (n_features, dtype, parameters), and
//    learn how many rows each holds.
// With one rank (the local communicator) both are just the local checks.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

// Throws, on every rank, the lowest failing rank's code (codes[r] != 0) with a message naming it
// and `what`, prefixed by `estimator`. Used by check_on_every_rank after the exchange.
[[noreturn]] void throw_rank_failure(const std::vector<int64_t>& codes, int size, const std::string& estimator,
                                    const char* what);

// Runs `check` on this rank, then every rank learns whether all ranks passed. A rank whose
// check threw rethrows its own error; the others throw the lowest failing rank's code with a
// message naming that rank ("<estimator>: <what> failed on rank r of N").
template <typename F>
void check_on_every_rank(Comm& comm, const std::string& estimator, const char* what, F&& check) {
  int64_t code = 0;
  std::exception_ptr error;
  try {
    check();
  } catch (const Error& e) {
    error = std::current_exception();
    code = static_cast<int64_t>(e.code());
  } catch (...) {
    error = std::current_exception();
    code = static_cast<int64_t>(ErrorCode::internal);
  }
  const std::vector<int64_t> codes = comm.allgather(code);
  if (error) std::rethrow_exception(error);
  for (int64_t c : codes)
    if (c != 0) throw_rank_failure(codes, comm.size(), estimator, what);
}

// A value every rank must hold the same, with its name for the error message.
struct RankField {
  const char* name;
  int64_t value;
};

// Every rank's row count (in rank order) and their sum.
struct RowCounts {
  std::vector<int64_t> rows;
  int64_t total = 0;
};

// Allgathers this rank's row count and `fields`; throws invalid_argument "<estimator>: the ranks
// disagree on <name>: rank 0 has a, rank r has b (...)" on every rank when a field differs.
// Collective: every rank must pass the same number of fields.
RowCounts agree_on_every_rank(Comm& comm, const std::string& estimator, int64_t rows,
                              const std::vector<RankField>& fields);

// Helpers for RankField values: a double's bits, and an FNV-1a hash of doubles, a string or JSON.
int64_t bits_of(double v);
int64_t hash_of(const std::vector<double>& values);
int64_t hash_of(const std::string& text);
// Of a JSON value, from its numbers' bits (no text: formatting a given init's thousands of
// doubles took ~3 ms a fit).
int64_t hash_of(const nlohmann::json& value);

// The union of every rank's sorted distinct values (a classifier's classes), sorted: the same on
// every rank. Collective.
std::vector<double> union_over_ranks(Comm& comm, const std::vector<double>& sorted_values);

// Rank 0's value of a branch decision, on every rank: the branches that lead to different
// collectives must be taken the same way everywhere even if some rank's arithmetic differed.
inline bool same_on_every_rank(Comm& comm, bool decision) {
  int64_t v = decision ? 1 : 0;
  comm.broadcast(&v, 1, 0);
  return v != 0;
}

}  // namespace gpuml::detail
