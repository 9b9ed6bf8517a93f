#include "test_util.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpuml::test {

uint64_t fresh_seed() {
  if (const char* replay = std::getenv("GPUML_TEST_SEED"); replay && *replay)
    return std::stoull(replay);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

bool cuda_required() {
  const char* v = std::getenv("GPUML_REQUIRE_CUDA");
  return v && std::string(v) == "1";
}

int64_t uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

double uniform_real(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

Blobs make_blobs(std::mt19937_64& rng, int64_t n, int64_t d, int64_t k, double spread, double center_box,
                 double min_center_distance) {
  Blobs b;
  b.n = n;
  b.d = d;
  b.k = k;
  b.centers.resize(static_cast<std::size_t>(k * d));
  for (int64_t c = 0; c < k; ++c) {
    for (int attempt = 0;; ++attempt) {
      if (attempt == 100000) throw std::runtime_error("make_blobs: cannot place the centers that far apart");
      for (int64_t j = 0; j < d; ++j) b.centers[c * d + j] = uniform_real(rng, -center_box, center_box);
      bool far_enough = true;
      for (int64_t o = 0; o < c && far_enough; ++o) {
        double s = 0;
        for (int64_t j = 0; j < d; ++j) s += (b.centers[c * d + j] - b.centers[o * d + j]) * (b.centers[c * d + j] - b.centers[o * d + j]);
        far_enough = s >= min_center_distance * min_center_distance;
      }
      if (far_enough) break;
    }
  }
  std::normal_distribution<double> noise(0.0, spread);
  b.X.resize(static_cast<std::size_t>(n * d));
  b.labels.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i % k;
    b.labels[i] = static_cast<int32_t>(c);
    for (int64_t j = 0; j < d; ++j) b.X[i * d + j] = b.centers[c * d + j] + noise(rng);
  }
  return b;
}

int64_t Table::column_index(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int64_t>(i);
  return -1;
}

Table read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  Table t;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + " is empty");
  {
    std::stringstream header(line);
    std::string cell;
    while (std::getline(header, cell, ',')) {
      if (!cell.empty() && cell.back() == '\r') cell.pop_back();
      t.columns.push_back(cell);
    }
  }
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::stringstream row(line);
    std::string cell;
    std::size_t count = 0;
    while (std::getline(row, cell, ',')) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(cell, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != cell.size())
        throw std::runtime_error(path + ": line " + std::to_string(t.rows + 2) + ": not a number: '" + cell + "'");
      t.values.push_back(v);
      ++count;
    }
    if (count != t.columns.size())
      throw std::runtime_error(path + ": line " + std::to_string(t.rows + 2) + " has " + std::to_string(count) +
                               " cells, the header has " + std::to_string(t.columns.size()));
    ++t.rows;
  }
  return t;
}

std::string datasets_dir() {
  // GPUML_DATASETS overrides the build-time path (the GPU machine has no ../shared beside the checkout).
  const char* env = std::getenv("GPUML_DATASETS");
  return env && *env ? env : GPUML_DATASETS_DIR;
}

}  // namespace gpuml::test
