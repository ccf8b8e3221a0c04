// A compile worker for tests/jit_runtime/compile_workers_test.cpp: the jit library's worker body
// and nothing else (the grape command serves workers the same way, through the C API).
#include <cstring>

#include "jit/compile_workers.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], grape::jit::kCompileWorkerArg) == 0)
    return grape::jit::compile_worker_main(argc, argv);
  return 2;
}
