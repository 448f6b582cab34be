// powercut_server MOUNTPOINT: serves a fresh PowerCutModel on MOUNTPOINT with FUSE and obeys the
// commands of powercut_protocol.h on stdin, until EOF. Started by PowerCutFs (powercut_fs.h); by hand
// it is a way to run any program on a filesystem whose power can be cut:
//
//   mkdir /tmp/m && build/tests/powercut/powercut_server /tmp/m     (then type: cut torn 1, restore)
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <string>

#include "tests/powercut/fuse_server.h"
#include "tests/powercut/powercut_protocol.h"

int main(int argc, char** argv) {
  using namespace streamd::powercut;
  if (argc != 2) {
    std::cerr << "usage: powercut_server MOUNTPOINT\n";
    return 2;
  }
  PowerCutModel model;
  std::string error;
  auto server = FuseServer::mount(argv[1], model, &error);
  if (!server) {
    std::cout << "error " << error << std::endl;
    return 1;
  }
  std::cout << "ready" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.rfind("cut ", 0) == 0) {
      char mode[16] = {};
      unsigned long long seed = 0;
      std::sscanf(line.c_str(), "cut %15s %llu", mode, &seed);
      const CutReport report = model.cut(std::string(mode) == "torn" ? CutMode::kTorn : CutMode::kDiscard, seed);
      for (const auto& l : report_lines(report)) std::cout << l << "\n";
      std::cout << "end" << std::endl;
    } else if (line == "restore") {
      if (server->remount([&model] { model.restore(); }, &error)) {
        std::cout << "ok" << std::endl;
      } else {
        std::cout << "error " << error << std::endl;
      }
    } else if (auto fault = parse_fault_command(line)) {
      model.add_fault(*fault);
      // A read a program makes through pages the kernel holds would never reach the fault.
      if (fault->op == FaultOp::kRead) server->drop_cached_pages(fault->path_contains);
      std::cout << "ok" << std::endl;
    } else if (line == "clear") {
      model.clear_faults();
      std::cout << "ok" << std::endl;
    } else if (line == "stats") {
      std::cout << "stats " << model.fsyncs() << " " << model.faults_injected() << std::endl;
    } else {
      std::cout << "error unknown command: " << line << std::endl;
    }
  }
  return 0;
}
