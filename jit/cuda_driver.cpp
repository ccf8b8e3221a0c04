#include "jit/cuda_driver.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "base/error.h"
#include "jit/shared_library.h"

namespace grape::jit {
namespace {

struct LoadedDriver {
  SharedLibrary library;
  Driver driver;
  std::string error;  // empty when loaded
};

// Resolves the first symbol of `names` that the library exports.
template <typename F, typename... Names>
bool resolve(const SharedLibrary& lib, F& out, Names... names) {
  for (const char* name : {names...}) {
    if (void* p = lib.symbol(name)) {
      out = reinterpret_cast<F>(p);
      return true;
    }
  }
  return false;
}

std::string join_symbols(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : " or ") + std::string(name);
  return out;
}

LoadedDriver load_driver() {
  LoadedDriver loaded;
  std::string why;
  loaded.library = SharedLibrary::open_first({"libcuda.so.1"}, &why);
  if (!loaded.library.loaded()) {
    loaded.error = "no CUDA driver found (" + why + ")";
    return loaded;
  }
  Driver& d = loaded.driver;
  d.library_path = loaded.library.path();
#define GRAPE_CUDA_DRIVER_RESOLVE(function, ...)                                                   \
  if (!resolve(loaded.library, d.function, __VA_ARGS__)) {                                         \
    loaded.error = "the CUDA driver " + d.library_path + " lacks " + join_symbols({__VA_ARGS__}) + \
                   "; it is too old for Grape";                                                    \
    return loaded;                                                                                 \
  }
  GRAPE_CUDA_DRIVER_FUNCTIONS(GRAPE_CUDA_DRIVER_RESOLVE)
#undef GRAPE_CUDA_DRIVER_RESOLVE
#define GRAPE_CUDA_DRIVER_RESOLVE_OPTIONAL(function, ...)                                  \
  if (!resolve(loaded.library, d.function, __VA_ARGS__) && d.missing_graph_symbol.empty()) \
    d.missing_graph_symbol = join_symbols({__VA_ARGS__});
  GRAPE_CUDA_DRIVER_GRAPH_FUNCTIONS(GRAPE_CUDA_DRIVER_RESOLVE_OPTIONAL)
#undef GRAPE_CUDA_DRIVER_RESOLVE_OPTIONAL
  resolve(loaded.library, d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  resolve(loaded.library, d.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");

  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    d.cuGetErrorName(r, &name);
    d.cuGetErrorString(r, &text);
    loaded.error = "the CUDA driver " + d.library_path +
                   " cannot be used: cuInit failed: " + (name ? name : "CUDA error " + std::to_string(r)) +
                   ": " + (text ? text : "");
    return loaded;
  }
  r = d.cuDriverGetVersion(&d.version);
  if (r != CUDA_SUCCESS) {
    loaded.error = "the CUDA driver " + d.library_path + " cannot report its version";
  }
  return loaded;
}

// Never unloaded: objects destroyed at exit (devices, buffers) still call into the driver, and
// dlclose would hide the driver's own allocations from LeakSanitizer.
const LoadedDriver& loaded_driver() {
  static const LoadedDriver* const loaded = new LoadedDriver(load_driver());
  return *loaded;
}

}  // namespace

const Driver& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.error.empty()) throw Error(ErrorCode::NoDevice, loaded.error);
  return loaded.driver;
}

bool driver_available(std::string* why) {
  try {
    const LoadedDriver& loaded = loaded_driver();
    if (why) *why = loaded.error;
    return loaded.error.empty();
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

int device_of_pointer(const void* p) {
  if (p == nullptr || !driver_available()) return -1;
  const Driver& d = driver();
  const auto at = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  // The plural query answers CUDA_SUCCESS with zeroed attributes for memory the driver does not
  // know (a plain host pointer); the singular one answers CUDA_ERROR_INVALID_VALUE, which
  // compute-sanitizer reports as an API error on every host input a session binds.
  unsigned int type = 0, managed = 0;
  int ordinal = -1;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* values[] = {&type, &managed, &ordinal};
  if (d.cuPointerGetAttributes(3, attributes, values, at) != CUDA_SUCCESS) return -1;
  if (managed || type != CU_MEMORYTYPE_DEVICE || ordinal < 0) return -1;
  return ordinal;
}

std::string cuda_error_text(CUresult result) {
  const LoadedDriver& loaded = loaded_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (loaded.driver.cuGetErrorName) loaded.driver.cuGetErrorName(result, &name);
  if (loaded.driver.cuGetErrorString) loaded.driver.cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (text) out += std::string(": ") + text;
  return out;
}

void throw_cuda_error(CUresult result, const char* call, std::string_view what) {
  std::string message = call;
  message += " failed";
  if (!what.empty()) {
    message += " for ";
    message += what;
  }
  message += ": " + cuda_error_text(result);
  ErrorCode code = ErrorCode::Device;
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY: code = ErrorCode::OutOfMemory; break;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_NOT_INITIALIZED: code = ErrorCode::NoDevice; break;
    default: break;
  }
  throw Error(code, message);
}

namespace {

// Sets `context` current for the destructors, which must not throw and run on any thread.
void set_current_quietly(CUcontext context) {
  if (context) driver().cuCtxSetCurrent(context);
}

}  // namespace

// ---- Device ----

int Device::count() {
  int n = 0;
  check(driver().cuDeviceGetCount(&n), "cuDeviceGetCount", "counting CUDA devices");
  return n;
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  const Driver& d = driver();
  int n = count();
  if (n == 0) throw Error(ErrorCode::NoDevice, "no CUDA device found (the driver reports none)");
  if (ordinal < 0 || ordinal >= n) {
    throw Error(ErrorCode::NoDevice, "CUDA device " + std::to_string(ordinal) + " does not exist (" +
                                         std::to_string(n) + " device" + (n == 1 ? "" : "s") + ")");
  }
  std::string what = "device " + std::to_string(ordinal);
  check(d.cuDeviceGet(&device_, ordinal), "cuDeviceGet", what);
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName", what);
  name_ = name;
  cc_major_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  cc_minor_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  sm_count_ = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain", label());
  try {
    make_current();
  } catch (...) {
    release();
    throw;
  }
}

Device::~Device() { release(); }

Device::Device(Device&& other) noexcept
    : ordinal_(other.ordinal_),
      device_(other.device_),
      context_(std::exchange(other.context_, nullptr)),
      name_(std::move(other.name_)),
      cc_major_(other.cc_major_),
      cc_minor_(other.cc_minor_),
      sm_count_(other.sm_count_) {}

Device& Device::operator=(Device&& other) noexcept {
  if (this != &other) {
    release();
    ordinal_ = other.ordinal_;
    device_ = other.device_;
    context_ = std::exchange(other.context_, nullptr);
    name_ = std::move(other.name_);
    cc_major_ = other.cc_major_;
    cc_minor_ = other.cc_minor_;
    sm_count_ = other.sm_count_;
  }
  return *this;
}

void Device::release() noexcept {
  if (context_) {
    driver().cuDevicePrimaryCtxRelease(device_);
    context_ = nullptr;
  }
}

std::string Device::label() const { return "device " + std::to_string(ordinal_) + " (" + name_ + ")"; }

std::string Device::arch() const { return "sm_" + std::to_string(cc_major_) + std::to_string(cc_minor_); }

int Device::attribute(CUdevice_attribute attribute) const {
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, device_), "cuDeviceGetAttribute",
        "device " + std::to_string(ordinal_));
  return value;
}

std::size_t Device::total_memory() const {
  make_current();
  std::size_t free = 0, total = 0;
  check(driver().cuMemGetInfo(&free, &total), "cuMemGetInfo", label());
  return total;
}

std::size_t Device::free_memory() const {
  make_current();
  std::size_t free = 0, total = 0;
  check(driver().cuMemGetInfo(&free, &total), "cuMemGetInfo", label());
  return free;
}

void Device::make_current() const { check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent", label()); }

void Device::synchronize() const {
  make_current();
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize", label());
}

// ---- ContextHold ----

ContextHold::ContextHold(const Device& device) : device_(device.handle()) {
  CUcontext ctx = nullptr;
  check(driver().cuDevicePrimaryCtxRetain(&ctx, device_), "cuDevicePrimaryCtxRetain", device.label());
  held_ = true;
}

ContextHold::~ContextHold() {
  if (held_) driver().cuDevicePrimaryCtxRelease(device_);
}

ContextHold::ContextHold(ContextHold&& other) noexcept
    : device_(other.device_), held_(std::exchange(other.held_, false)) {}

ContextHold& ContextHold::operator=(ContextHold&& other) noexcept {
  if (this != &other) {
    if (held_) driver().cuDevicePrimaryCtxRelease(device_);
    device_ = other.device_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(const Device& device, std::size_t bytes, std::string_view what)
    : size_(bytes), context_(device.context()), what_(what) {
  if (bytes == 0) return;
  hold_ = ContextHold(device);
  device.make_current();
  CUresult r = driver().cuMemAlloc(&ptr_, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    throw Error(ErrorCode::OutOfMemory, "cuMemAlloc cannot allocate " + std::to_string(bytes) + " bytes on " +
                                            device.label() + " for " + what_ + ": " + cuda_error_text(r));
  }
  check(r, "cuMemAlloc", std::to_string(bytes) + " bytes on " + device.label() + " for " + what_);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : hold_(std::move(other.hold_)),
      ptr_(std::exchange(other.ptr_, 0)),
      size_(std::exchange(other.size_, 0)),
      context_(other.context_),
      what_(std::move(other.what_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    hold_ = std::move(other.hold_);
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
    context_ = other.context_;
    what_ = std::move(other.what_);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_) {
    set_current_quietly(context_);
    driver().cuMemFree(ptr_);
    ptr_ = 0;
  }
}

namespace {

void check_fits(std::size_t bytes, std::size_t size, const std::string& what) {
  if (bytes > size) {
    throw Error(ErrorCode::Internal, "copy of " + std::to_string(bytes) + " bytes overflows " + what + " (" +
                                         std::to_string(size) + " bytes)");
  }
}

}  // namespace

void DeviceBuffer::copy_from_host(const void* host, std::size_t bytes, CUstream stream) const {
  check_fits(bytes, size_, what_);
  if (bytes == 0) return;
  check(driver().cuMemcpyHtoDAsync(ptr_, host, bytes, stream), "cuMemcpyHtoDAsync", what_);
}

void DeviceBuffer::copy_to_host(void* host, std::size_t bytes, CUstream stream) const {
  check_fits(bytes, size_, what_);
  if (bytes == 0) return;
  check(driver().cuMemcpyDtoHAsync(host, ptr_, bytes, stream), "cuMemcpyDtoHAsync", what_);
}

void DeviceBuffer::fill_bytes(unsigned char value, CUstream stream) const {
  if (size_ == 0) return;
  check(driver().cuMemsetD8Async(ptr_, value, size_, stream), "cuMemsetD8Async", what_);
}

// ---- PinnedBuffer ----

PinnedBuffer::PinnedBuffer(const Device& device, std::size_t bytes, std::string_view what)
    : size_(bytes), context_(device.context()) {
  if (bytes == 0) return;
  hold_ = ContextHold(device);
  device.make_current();
  CUresult r = driver().cuMemAllocHost(&data_, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    throw Error(ErrorCode::OutOfMemory, "cuMemAllocHost cannot allocate " + std::to_string(bytes) +
                                            " bytes of pinned host memory for " + std::string(what) + ": " +
                                            cuda_error_text(r));
  }
  check(r, "cuMemAllocHost", std::to_string(bytes) + " bytes for " + std::string(what));
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : hold_(std::move(other.hold_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      context_(other.context_) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    hold_ = std::move(other.hold_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    context_ = other.context_;
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (data_) {
    set_current_quietly(context_);
    driver().cuMemFreeHost(data_);
    data_ = nullptr;
  }
}

// ---- Module ----

Module::Module(const Device& device, const void* image, std::string_view what)
    : context_(device.context()), what_(what) {
  device.make_current();
  check(driver().cuModuleLoadData(&module_, image), "cuModuleLoadData",
        what_ + " on " + device.label() + " (" + device.arch() + ")");
}

Module::~Module() { release(); }

Module::Module(Module&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)),
      context_(other.context_),
      what_(std::move(other.what_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    release();
    module_ = std::exchange(other.module_, nullptr);
    context_ = other.context_;
    what_ = std::move(other.what_);
  }
  return *this;
}

void Module::release() noexcept {
  if (module_) {
    set_current_quietly(context_);
    driver().cuModuleUnload(module_);
    module_ = nullptr;
  }
}

int parse_smem_carveout(const char* value) {
  if (!value || !*value) return -1;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value, &end, 10);
  if (*end != '\0' || errno != 0 || n < -1 || n > 100)
    throw Error(ErrorCode::InvalidArgument,
                std::string("GRAPE_SMEM_CARVEOUT must be an integer from -1 to 100, got '") + value + "'");
  return static_cast<int>(n);
}

namespace {
int smem_carveout() {
  static const int v = parse_smem_carveout(std::getenv("GRAPE_SMEM_CARVEOUT"));
  return v;
}
}  // namespace

CUfunction Module::function(const char* name) const {
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, module_, name), "cuModuleGetFunction",
        "kernel " + std::string(name) + " in " + what_);
  if (const int c = smem_carveout(); c >= 0)
    check(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, c),
          "cuFuncSetAttribute (carveout)", "kernel " + std::string(name) + " in " + what_);
  return f;
}

// ---- Stream ----

Stream::Stream(const Device& device) : context_(device.context()) {
  device.make_current();
  check(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate", device.label());
}

Stream::~Stream() { release(); }

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), context_(other.context_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    stream_ = std::exchange(other.stream_, nullptr);
    context_ = other.context_;
  }
  return *this;
}

void Stream::release() noexcept {
  if (stream_) {
    set_current_quietly(context_);
    driver().cuStreamDestroy(stream_);
    stream_ = nullptr;
  }
}

void Stream::synchronize() const {
  check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize", "a stream");
}

// ---- Event ----

Event::Event(const Device& device) : context_(device.context()) {
  device.make_current();
  check(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate", device.label());
}

Event::~Event() { release(); }

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), context_(other.context_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    event_ = std::exchange(other.event_, nullptr);
    context_ = other.context_;
  }
  return *this;
}

void Event::release() noexcept {
  if (event_) {
    set_current_quietly(context_);
    driver().cuEventDestroy(event_);
    event_ = nullptr;
  }
}

void Event::record(CUstream stream) const {
  check(driver().cuEventRecord(event_, stream), "cuEventRecord", "a timing event");
}

void Event::synchronize() const {
  check(driver().cuEventSynchronize(event_), "cuEventSynchronize", "a timing event");
}

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check(driver().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime", "a timing event");
  return ms;
}

// ---- launches ----

CUresult try_launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                    void** params, bool programmatic, unsigned cluster) {
  const Driver& d = driver();
  programmatic = programmatic && d.cuLaunchKernelEx;
  if (!programmatic && cluster <= 1)
    return d.cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream,
                            params, nullptr);
  if (!d.cuLaunchKernelEx) return CUDA_ERROR_NOT_SUPPORTED;
  CUlaunchAttribute attrs[2];
  std::memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (programmatic) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = cluster;
    attrs[n].value.clusterDim.y = 1;
    attrs[n++].value.clusterDim.z = 1;
  }
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof config);
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return d.cuLaunchKernelEx(&config, function, params, nullptr);
}

void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream, void** params,
            std::string_view what, bool programmatic, unsigned cluster) {
  const bool ex = (programmatic && driver().cuLaunchKernelEx) || cluster > 1;
  check(try_launch(function, grid, block, shared_bytes, stream, params, programmatic, cluster),
        ex ? "cuLaunchKernelEx" : "cuLaunchKernel", what);
}

}  // namespace grape::jit
