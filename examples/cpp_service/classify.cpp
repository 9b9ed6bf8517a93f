// Serving a saved gpuml classifier from C++: loads a model written by gpuml's serializer (Python's
// `estimator.save_model(path)`, the C ABI's gpuml_estimator_serialize, or gpuml::serialize), reads
// rows of comma-separated numbers from a CSV file or standard input, and classifies them with a
// pool of N threads that share the one model, each with its own context (predict_proba is const:
// safe from many threads at once). Prints, per row: its line number, class, and that class's
// probability; then a throughput line on standard error. Bad rows (wrong width, something that is
// not a number) are reported by line number and skipped; the program never stops on them.
//
//   classify MODEL [--threads N] [--device auto|cpu|cuda|cuda:N] [--batch ROWS] [CSV | -]
#include <gpuml/gpuml.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string model, input = "-", device = "auto";
  int threads = 4;
  int64_t batch = 4096;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "classify: %s\nusage: classify MODEL [--threads N] [--device auto|cpu|cuda|cuda:N] [--batch ROWS] [CSV | -]\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::atoi(value().c_str());
    else if (a == "--device") o.device = value();
    else if (a == "--batch") o.batch = std::atoll(value().c_str());
    else positional.push_back(a);
  }
  if (positional.empty() || positional.size() > 2) usage("give the model file and at most one CSV file");
  if (o.threads < 1 || o.batch < 1) usage("--threads and --batch must be positive");
  o.model = positional[0];
  if (positional.size() == 2) o.input = positional[1];
  return o;
}

gpuml::Context context_for(const std::string& device) {
  if (device == "auto") return gpuml::Context::best();
  if (device == "cpu") return gpuml::Context::cpu(1);  // one thread per worker: the pool is the parallelism
  if (device == "cuda") return gpuml::Context::cuda(0);
  if (device.rfind("cuda:", 0) == 0) return gpuml::Context::cuda(std::atoi(device.c_str() + 5));
  usage(("unknown device " + device).c_str());
}

// One CSV line as `width` doubles; false (with the reason) for a wrong width or a non-number.
bool parse_row(const std::string& line, int64_t width, std::vector<double>& row, std::string& why) {
  row.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(',', start);
    const std::string field = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const char* text = field.c_str();
    char* stop = nullptr;
    errno = 0;
    const double v = std::strtod(text, &stop);
    while (stop && (*stop == ' ' || *stop == '\t' || *stop == '\r')) ++stop;
    if (stop == text || *stop != '\0' || errno == ERANGE) {
      why = "field " + std::to_string(row.size() + 1) + " (\"" + field + "\") is not a number";
      return false;
    }
    row.push_back(v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (static_cast<int64_t>(row.size()) != width) {
    why = std::to_string(row.size()) + " values, the model takes " + std::to_string(width);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::unique_ptr<gpuml::Estimator> model;
  int64_t width = 0;
  std::vector<double> classes;
  try {
    std::ifstream file(options.model, std::ios::binary);
    if (!file) usage(("cannot open the model file " + options.model).c_str());
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    model = gpuml::deserialize(bytes.data(), bytes.size());
    width = *model->attribute("n_features_in_").as<int64_t>();
    const gpuml::HostArray& c = model->attribute("classes_");
    classes.assign(c.as<double>(), c.as<double>() + c.spec().shape[0]);
  } catch (const gpuml::Error& e) {
    std::fprintf(stderr, "classify: %s is not a gpuml classifier: %s\n", options.model.c_str(), e.what());
    return 1;
  }

  // Read and check every row first (line numbers from 1; a header line that is not numbers is
  // reported like any other bad row).
  std::ifstream file;
  if (options.input != "-") {
    file.open(options.input);
    if (!file) usage(("cannot open " + options.input).c_str());
  }
  std::istream& in = options.input == "-" ? std::cin : file;
  std::vector<double> rows;
  std::vector<int64_t> line_of;
  std::vector<double> row;
  std::string line, why;
  int64_t bad = 0;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    if (!parse_row(line, width, row, why)) {
      std::fprintf(stderr, "line %lld skipped: %s\n", static_cast<long long>(number), why.c_str());
      ++bad;
      continue;
    }
    rows.insert(rows.end(), row.begin(), row.end());
    line_of.push_back(number);
  }
  const int64_t n = static_cast<int64_t>(line_of.size());
  const int64_t k = static_cast<int64_t>(classes.size());

  // The pool: each worker takes every threads-th batch, with a context of its own.
  std::vector<double> proba(static_cast<std::size_t>(n * k));
  std::vector<std::string> errors(static_cast<std::size_t>(options.threads));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < options.threads; ++w) {
    workers.emplace_back([&, w] {
      try {
        gpuml::Context ctx = context_for(options.device);
        for (int64_t b = w * options.batch; b < n; b += options.threads * options.batch) {
          const int64_t count = std::min(options.batch, n - b);
          model->predict_proba(ctx, gpuml::host_view(rows.data() + b * width, count, width),
                               gpuml::host_view(proba.data() + b * k, count, k));
        }
      } catch (const gpuml::Error& e) {
        errors[w] = e.what();
      }
    });
  }
  for (std::thread& t : workers) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& e : errors)
    if (!e.empty()) {
      std::fprintf(stderr, "classify: %s\n", e.c_str());
      return 1;
    }

  std::printf("line,class,probability\n");
  for (int64_t i = 0; i < n; ++i) {
    const double* p = proba.data() + i * k;
    const int64_t best = std::max_element(p, p + k) - p;
    std::printf("%lld,%g,%.4f\n", static_cast<long long>(line_of[i]), classes[best], p[best]);
  }
  std::fprintf(stderr, "classified %lld rows (%lld skipped) with %d threads on %s in %.3f s: %.0f rows/s\n",
               static_cast<long long>(n), static_cast<long long>(bad), options.threads, options.device.c_str(), seconds,
               seconds > 0 ? n / seconds : 0.0);
  return 0;
}
