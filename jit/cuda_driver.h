// The CUDA driver API, loaded with dlopen at run time (libcuda.so.1 is never linked), so one binary
// runs on machines with and without a GPU. <cuda.h> is used for types, enums and prototypes only.
//
// Every call goes through driver(), whose members carry the names of the functions they point to:
// `driver().cuMemAlloc(&p, n)`. <cuda.h> maps some names to versioned entry points (cuMemAlloc ->
// cuMemAlloc_v2); the members are renamed the same way, and the loader resolves those versioned
// symbols, so a call means exactly what it would mean when linked against libcuda.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace grape::jit {

// X(function, symbol tried first, fallback symbols...). The loader needs every one of them.
#define GRAPE_CUDA_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit, "cuInit")                                                                           \
  X(cuDriverGetVersion, "cuDriverGetVersion")                                                   \
  X(cuGetErrorName, "cuGetErrorName")                                                           \
  X(cuGetErrorString, "cuGetErrorString")                                                       \
  X(cuDeviceGet, "cuDeviceGet")                                                                 \
  X(cuDeviceGetCount, "cuDeviceGetCount")                                                       \
  X(cuDeviceGetName, "cuDeviceGetName")                                                         \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")                                               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                                       \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")                                  \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                                                         \
  X(cuCtxSynchronize, "cuCtxSynchronize")                                                       \
  X(cuModuleLoadData, "cuModuleLoadData")                                                       \
  X(cuModuleUnload, "cuModuleUnload")                                                           \
  X(cuModuleGetFunction, "cuModuleGetFunction")                                                 \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")                                                   \
  X(cuFuncGetAttribute, "cuFuncGetAttribute")                                                   \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor") \
  X(cuLaunchKernel, "cuLaunchKernel")                                                           \
  X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel")                                     \
  X(cuMemAlloc, "cuMemAlloc_v2")                                                                \
  X(cuMemFree, "cuMemFree_v2")                                                                  \
  X(cuMemAllocHost, "cuMemAllocHost_v2")                                                        \
  X(cuMemFreeHost, "cuMemFreeHost")                                                             \
  X(cuMemGetInfo, "cuMemGetInfo_v2")                                                            \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                                                  \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                                                  \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")                                                  \
  X(cuMemsetD8Async, "cuMemsetD8Async")                                                         \
  X(cuMemsetD32Async, "cuMemsetD32Async")                                                       \
  X(cuPointerGetAttributes, "cuPointerGetAttributes")                                           \
  X(cuStreamCreate, "cuStreamCreate")                                                           \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                                                      \
  X(cuStreamSynchronize, "cuStreamSynchronize")                                                 \
  X(cuEventCreate, "cuEventCreate")                                                             \
  X(cuEventRecord, "cuEventRecord")                                                             \
  X(cuEventSynchronize, "cuEventSynchronize")                                                   \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")                          \
  X(cuEventDestroy, "cuEventDestroy_v2")                                                        \
  X(cuStreamWaitValue32, "cuStreamWaitValue32_v2", "cuStreamWaitValue32")

// The graph API (runtime/cuda/graph_executor.cpp). Optional: a driver without them still runs the
// eager executor; the graph executor checks `has_graphs()` and says which symbol is missing.
#define GRAPE_CUDA_DRIVER_GRAPH_FUNCTIONS(X)                             \
  X(cuGraphCreate, "cuGraphCreate")                                      \
  X(cuGraphDestroy, "cuGraphDestroy")                                    \
  X(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2")                     \
  X(cuGraphAddNode, "cuGraphAddNode_v2")                                 \
  X(cuGraphConditionalHandleCreate, "cuGraphConditionalHandleCreate")    \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags")                   \
  X(cuGraphLaunch, "cuGraphLaunch")                                      \
  X(cuGraphUpload, "cuGraphUpload")                                      \
  X(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2") \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")                            \
  X(cuGraphKernelNodeSetAttribute, "cuGraphKernelNodeSetAttribute")      \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")

struct Driver {
#define GRAPE_CUDA_DRIVER_MEMBER(function, ...) decltype(&::function) function = nullptr;
  GRAPE_CUDA_DRIVER_FUNCTIONS(GRAPE_CUDA_DRIVER_MEMBER)
  GRAPE_CUDA_DRIVER_GRAPH_FUNCTIONS(GRAPE_CUDA_DRIVER_MEMBER)
#undef GRAPE_CUDA_DRIVER_MEMBER
  // The copy engine's tensor maps (gemv_mma.cuh's weight tiles); null with a driver without it.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  // How many thread-block clusters of a kernel fit at once (the decoder plan); null with a driver
  // without it.
  decltype(&::cuOccupancyMaxActiveClusters) cuOccupancyMaxActiveClusters = nullptr;
  std::string missing_graph_symbol;  // empty when every graph function resolved
  bool has_graphs() const { return missing_graph_symbol.empty(); }

  std::string library_path;  // the libcuda that was loaded
  int version = 0;           // cuDriverGetVersion: 1000 * major + 10 * minor (13000 is CUDA 13.0)
};

// The loaded and initialized (cuInit) driver. Loaded once per process; thread-safe. Throws
// Error(NoDevice, "no CUDA driver found (libcuda.so.1: ...)") without a driver, and
// Error(NoDevice, ...) when the driver loads but cannot be used (too old, no device).
const Driver& driver();
// Never throws; false with the reason in *why (the message driver() would throw).
bool driver_available(std::string* why = nullptr);

// Where a caller's pointer points: the ordinal of the GPU whose device memory it is (cuMemAlloc,
// cudaMalloc), or -1 for host memory (pinned or not), managed memory, a pointer the driver does
// not know, and always without a driver. Never throws.
int device_of_pointer(const void* p);

// "CUDA_ERROR_INVALID_VALUE: invalid argument"; without a driver, "CUDA error 1".
std::string cuda_error_text(CUresult result);

[[noreturn]] void throw_cuda_error(CUresult result, const char* call, std::string_view what);

// Throws when `result` is not CUDA_SUCCESS, naming the call and what it was for:
//   "cuLaunchKernel failed for kernel k_12 (add): CUDA_ERROR_INVALID_VALUE: invalid argument".
// Out of memory is Error(OutOfMemory), no device or an unusable driver Error(NoDevice), everything
// else Error(Device). An empty `what` leaves out " for ...".
inline void check(CUresult result, const char* call, std::string_view what) {
  if (result != CUDA_SUCCESS) throw_cuda_error(result, call, what);
}

// A device and its primary context, retained for the object's lifetime and made current on the
// constructing thread (other threads call make_current()).
class Device {
 public:
  // Throws Error(NoDevice) without a driver, without devices, or when `ordinal` is out of range.
  explicit Device(int ordinal = 0);
  ~Device();
  Device(Device&& other) noexcept;
  Device& operator=(Device&& other) noexcept;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  static int count();

  int ordinal() const { return ordinal_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }
  const std::string& name() const { return name_; }
  // "device 0 (NVIDIA H100 80GB HBM3)", for messages.
  std::string label() const;
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  // The NVRTC target for this device: "sm_90".
  std::string arch() const;
  int sm_count() const { return sm_count_; }
  int attribute(CUdevice_attribute attribute) const;
  std::size_t total_memory() const;
  std::size_t free_memory() const;

  void make_current() const;
  void synchronize() const;

 private:
  void release() noexcept;

  int ordinal_ = -1;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_;
  int cc_major_ = 0;
  int cc_minor_ = 0;
  int sm_count_ = 0;
};

// A reference on a device's primary context, so that memory allocated in it stays valid while
// anything holds it: a Tensor of pinned output memory (or a device input buffer) that outlives
// its Session would otherwise point into a context the session's Device released, and reading
// it faults (found by tests/gpu/autotune_test.cpp, which kept a session's outputs).
class ContextHold {
 public:
  ContextHold() = default;
  explicit ContextHold(const Device& device);
  ~ContextHold();
  ContextHold(ContextHold&& other) noexcept;
  ContextHold& operator=(ContextHold&& other) noexcept;
  ContextHold(const ContextHold&) = delete;
  ContextHold& operator=(const ContextHold&) = delete;

 private:
  CUdevice device_ = 0;
  bool held_ = false;
};

// Device memory (cuMemAlloc/cuMemFree). A zero-byte buffer allocates nothing and has ptr() 0.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws Error(OutOfMemory, "cuMemAlloc cannot allocate N bytes on device 0 (...) for <what>: ...").
  DeviceBuffer(const Device& device, std::size_t bytes, std::string_view what = "a device buffer");
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t size() const { return size_; }

  // Asynchronous on `stream`; `bytes` must fit the buffer (Error(Internal) otherwise).
  void copy_from_host(const void* host, std::size_t bytes, CUstream stream) const;
  void copy_to_host(void* host, std::size_t bytes, CUstream stream) const;
  void fill_bytes(unsigned char value, CUstream stream) const;

 private:
  void release() noexcept;

  ContextHold hold_;  // released after the memory (members are destroyed after the destructor)
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
  CUcontext context_ = nullptr;
  std::string what_;
};

// Page-locked host memory (cuMemAllocHost/cuMemFreeHost), for asynchronous copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const Device& device, std::size_t bytes, std::string_view what = "a pinned host buffer");
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void release() noexcept;

  ContextHold hold_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  CUcontext context_ = nullptr;
};

// GRAPE_SMEM_CARVEOUT, a measurement switch: every kernel's preferred shared-memory share of each
// multiprocessor's L1 (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, set as Module::function
// looks the kernel up). Unset, empty or -1: the driver decides (the default); 0-100: that share.
// Anything else is an InvalidArgument error naming the variable (a typo must not silently measure
// the default). Consecutive kernels asking for different splits make a multiprocessor reconfigure
// between them; all-shared cost decode_step 17% (bench/RESULTS.md, eighteenth session).
int parse_smem_carveout(const char* value);

// A loaded cubin or PTX image and the kernels in it.
class Module {
 public:
  Module() = default;
  // `image` is a cubin, or NUL-terminated PTX; `what` names it in errors ("kernel k_12 (add)").
  Module(const Device& device, const void* image, std::string_view what);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  CUmodule handle() const { return module_; }
  CUfunction function(const char* name) const;

 private:
  void release() noexcept;

  CUmodule module_ = nullptr;
  CUcontext context_ = nullptr;
  std::string what_;
};

class Stream {
 public:
  explicit Stream(const Device& device);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream handle() const { return stream_; }
  void synchronize() const;

 private:
  void release() noexcept;

  CUstream stream_ = nullptr;
  CUcontext context_ = nullptr;
};

// A timing event (for benchmarks).
class Event {
 public:
  explicit Event(const Device& device);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent handle() const { return event_; }
  void record(CUstream stream) const;
  void synchronize() const;
  // Milliseconds from `start` to this event; both recorded and complete.
  float elapsed_ms_since(const Event& start) const;

 private:
  void release() noexcept;

  CUevent event_ = nullptr;
  CUcontext context_ = nullptr;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// cuLaunchKernel, errors naming `what` ("kernel k_12 (add)"). `programmatic`: the launch may begin
// while the stream's previous kernel finishes (programmatic stream serialization, cuLaunchKernelEx;
// only for kernels that wait for their predecessor first: GRAPE_GRID_WAIT); ignored where the
// driver lacks it.
void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream, void** params,
            std::string_view what, bool programmatic = false, unsigned cluster = 1);
// The launch itself, its result returned rather than thrown. `cluster` > 1: blocks per
// thread-block cluster along x (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; CUDA_ERROR_NOT_SUPPORTED
// where the driver has no cuLaunchKernelEx).
CUresult try_launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                    void** params, bool programmatic, unsigned cluster);

}  // namespace grape::jit
