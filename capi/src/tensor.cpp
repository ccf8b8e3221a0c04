// grp_tensor_* and grp_npy_write: host tensors and .npy files for callers (the CLI among them).
#include <cstring>

#include "capi/src/internal.h"
#include "runtime/npy.h"

using namespace grape;
using namespace grape::capi;

extern "C" {

grp_error* grp_tensor_read_npy(const char* path, grp_tensor** out) {
  return guard([&] {
    require(path, "path");
    require(out, "out");
    auto t = std::make_unique<grp_tensor>();
    t->value = read_npy(path);
    *out = t.release();
  });
}

grp_error* grp_tensor_create(grp_dtype dtype, const int64_t* shape, size_t rank, const void* data, size_t nbytes,
                             grp_tensor** out) {
  return guard([&] {
    require(out, "out");
    DType dt = to_dtype(&dtype, "dtype");
    Shape sh = to_shape(shape, rank, dt, "tensor");
    check_bytes(dt, sh, data, nbytes, "tensor");
    auto t = std::make_unique<grp_tensor>();
    t->value = Tensor(dt, sh);
    if (nbytes) std::memcpy(t->value.raw(), data, nbytes);
    *out = t.release();
  });
}

void grp_tensor_destroy(grp_tensor* t) { delete t; }

grp_dtype grp_tensor_dtype(const grp_tensor* t) { return t ? from_dtype(t->value.dtype()) : GRP_F32; }
size_t grp_tensor_rank(const grp_tensor* t) { return t ? t->value.rank() : 0; }
const int64_t* grp_tensor_shape(const grp_tensor* t) { return t ? t->value.shape().data() : nullptr; }
const void* grp_tensor_data(const grp_tensor* t) { return t ? t->value.raw() : nullptr; }
size_t grp_tensor_nbytes(const grp_tensor* t) { return t ? t->value.nbytes() : 0; }

grp_error* grp_npy_write(const char* path, grp_dtype dtype, const int64_t* shape, size_t rank, const void* data,
                         size_t nbytes) {
  return guard([&] {
    require(path, "path");
    DType dt = to_dtype(&dtype, "dtype");
    Shape sh = to_shape(shape, rank, dt, path);
    check_bytes(dt, sh, data, nbytes, path);
    // write_npy only reads the tensor: wrapping the caller's memory saves a copy.
    write_npy(path, Tensor::wrap(dt, sh, const_cast<void*>(data), nullptr));
  });
}

}  // extern "C"
