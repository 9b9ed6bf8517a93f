// The harness of the embedding examples' test (run_examples.cmake), built against the installed
// gpuml like the examples themselves:
//   examples_check make DIR          fits a random forest on fresh blobs (3 classes, 4 features)
//                                    and writes DIR/model.gpuml, DIR/rows.csv (good rows, a header,
//                                    a short row, a non-number, a blank line) and DIR/expected.csv
//                                    (line, class of each good row);
//   examples_check check DIR OUTPUT  checks a classifier's OUTPUT against them.
#include <gpuml/gpuml.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kFeatures = 4, kClasses = 3;

int make(const std::string& dir) {
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<double> noise(0.0, 0.3);
  auto center = [](int c, int j) { return 4.0 * ((c + j) % kClasses); };  // well apart
  std::vector<double> X, y;
  for (int i = 0; i < 600; ++i) {
    const int c = i % kClasses;
    for (int j = 0; j < kFeatures; ++j) X.push_back(center(c, j) + noise(rng));
    y.push_back(10.0 * c + 1);  // labels 1, 11, 21: the services must print labels, not indices
  }
  gpuml::RandomForestParams params;
  params.n_estimators = 20;
  params.random_state = 0;
  gpuml::RandomForestClassifier forest(params);
  gpuml::Context ctx = gpuml::Context::cpu();
  forest.fit(ctx, gpuml::host_view(X.data(), 600, kFeatures), gpuml::host_view(y.data(), 600), nullptr);
  const std::vector<uint8_t> bytes = gpuml::serialize(forest);
  std::ofstream(dir + "/model.gpuml", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::ofstream rows(dir + "/rows.csv"), expected(dir + "/expected.csv");
  rows << "f0,f1,f2,f3\n";  // line 1: a header, not numbers
  int line = 1;
  for (int i = 0; i < 1000; ++i) {
    const int c = i % kClasses;
    ++line;
    if (i == 10) { rows << "1.0,2.0,3.0\n"; continue; }                  // too short
    if (i == 20) { rows << "1.0,abc,3.0,4.0\n"; continue; }              // not a number
    if (i == 30) { rows << "\n"; continue; }                             // blank: ignored
    for (int j = 0; j < kFeatures; ++j) rows << (j ? "," : "") << center(c, j) + noise(rng);
    rows << "\n";
    expected << line << "," << 10 * c + 1 << "\n";
  }
  return 0;
}

int check(const std::string& dir, const std::string& output) {
  std::map<long, double> want;
  std::ifstream expected(dir + "/expected.csv");
  long line;
  double label;
  char comma;
  while (expected >> line >> comma >> label) want[line] = label;
  std::ifstream got(output);
  std::string text;
  std::getline(got, text);
  if (text != "line,class,probability") {
    std::fprintf(stderr, "check: header %s\n", text.c_str());
    return 1;
  }
  std::size_t rows = 0, right = 0;
  while (std::getline(got, text)) {
    std::istringstream s(text);
    double probability;
    char c1, c2;
    if (!(s >> line >> c1 >> label >> c2 >> probability) || !want.count(line) || probability < 0 || probability > 1) {
      std::fprintf(stderr, "check: unexpected output line: %s\n", text.c_str());
      return 1;
    }
    ++rows;
    right += want[line] == label;
  }
  // Blobs 4 apart with noise 0.3: every row is classified right.
  if (rows != want.size() || right != rows) {
    std::fprintf(stderr, "check: %zu rows out of %zu expected, %zu right\n", rows, want.size(), right);
    return 1;
  }
  std::printf("check: %zu rows, all right\n", rows);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "make" && argc == 3) return make(argv[2]);
  if (mode == "check" && argc == 4) return check(argv[2], argv[3]);
  std::fprintf(stderr, "usage: examples_check make DIR | check DIR OUTPUT\n");
  return 2;
}
