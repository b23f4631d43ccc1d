#include "qconform/exec_runner.hpp"

#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace qc::exec {
namespace {

using json = nlohmann::json;

// Every tensor reference {"tensor": i, "dtype": d, ...} in a wire op object: index -> dtype.
void collect_tensors(const json& j, std::map<std::int64_t, std::string>& out) {
  if (j.is_object()) {
    const auto t = j.find("tensor");
    const auto d = j.find("dtype");
    if (t != j.end() && t->is_number_integer() && d != j.end() && d->is_string()) {
      out[t->get<std::int64_t>()] = d->get<std::string>();
      return;
    }
    for (const auto& [k, v] : j.items()) collect_tensors(v, out);
  } else if (j.is_array()) {
    for (const auto& v : j) collect_tensors(v, out);
  }
}

void write_line(int fd, const json& j) {
  const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const char* p = s.data();
  std::size_t n = s.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return;  // the host is gone; the next read sees the end of stdin
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

json fault(const std::string& what) { return {{"ok", false}, {"error", what}}; }

}  // namespace

void write_tensors(const std::filesystem::path& dir, const std::vector<Tensor>& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) write_npy(dir / ("t" + std::to_string(i) + ".npy"), tensors[i]);
}

OpRequest read_op(const std::string& op_json, const std::filesystem::path& dir) {
  const json j = json::parse(op_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError("request: \"op\" is not a JSON object");
  std::map<std::int64_t, std::string> refs;
  collect_tensors(j, refs);
  std::vector<Tensor> tensors;
  for (const auto& [i, dtype] : refs) {
    if (i != static_cast<std::int64_t>(tensors.size()))
      throw InputError("request: tensor indices are not 0..n-1 (tensor " + std::to_string(tensors.size()) +
                       " is not referenced)");
    const std::optional<DType> as = parse_dtype(dtype);
    if (!as) throw InputError("request: tensor " + std::to_string(i) + ": unknown dtype '" + dtype + "'");
    tensors.push_back(read_npy(dir / ("t" + std::to_string(i) + ".npy"), *as));
  }
  return wire::decode_op(op_json, std::move(tensors));
}

int serve(Backend& backend) {
  // The protocol goes to a private copy of stdout; whatever the kernel prints goes to stderr.
  std::fflush(stdout);
  std::cout.flush();
  const int proto = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (proto < 0) return 3;
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json req = json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.is_object()) {
      write_line(proto, fault("request is not a JSON object"));
      continue;
    }
    const std::string type = req.value("type", "");
    try {
      if (type == "hello") {
        const Availability a = backend.availability();
        json facts = json::object();
        if (a.available)
          for (const auto& [k, v] : backend.facts()) facts[k] = v;
        write_line(proto, {{"version", kVersion},
                           {"name", backend.name()},
                           {"description", backend.description()},
                           {"claim", backend.claim()},
                           {"available", a.available},
                           {"reason", a.reason},
                           {"facts", facts}});
      } else if (type == "supports" || type == "run") {
        if (!req.contains("op") || !req["op"].is_object() || !req.contains("dir") || !req["dir"].is_string())
          throw InputError("request: \"" + type + "\" needs \"op\" (an object) and \"dir\" (a string)");
        const std::filesystem::path dir = req["dir"].get<std::string>();
        const OpRequest op = read_op(req["op"].dump(), dir);
        if (type == "supports") {
          const Availability a = backend.supports(op);
          write_line(proto, {{"available", a.available}, {"reason", a.reason}});
        } else {
          const Tensor out = backend.run(op);
          write_npy(dir / "out.npy", out);
          write_line(proto, {{"ok", true}, {"output", "out.npy"}});
        }
      } else if (type == "bye") {
        break;
      } else {
        write_line(proto, fault("unknown request type '" + type + "' (hello, supports, run, bye)"));
      }
    } catch (const std::exception& e) {
      write_line(proto, fault(e.what()));
    }
  }
  ::close(proto);
  return 0;
}

}  // namespace qc::exec
