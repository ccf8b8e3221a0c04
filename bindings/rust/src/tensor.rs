//! Tensor data crossing the boundary: `TensorView` (borrowed from a session or a `HostTensor`),
//! `HostTensor` (an owned grp_tensor, e.g. from a .npy file), and the checks that keep every
//! pointer handed to libgrape within the slice it came from.

use std::os::raw::c_void;
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::dtype::{DType, Element};
use crate::error::{check, Error, Result};
use crate::ffi;
use crate::half::{Bf16, F16};

/// The element count of `shape`; negative dims and overflow are `InvalidArgument`.
pub(crate) fn element_count(shape: &[i64]) -> Result<usize> {
    shape.iter().try_fold(1usize, |n, &d| {
        let d = usize::try_from(d).map_err(|_| Error::invalid(format!("shape {shape:?} has a negative dim")))?;
        n.checked_mul(d)
            .ok_or_else(|| Error::invalid(format!("shape {shape:?} has too many elements")))
    })
}

/// Checks that `len` elements of `dtype` are exactly the tensor `shape` describes; returns its
/// byte count.
pub(crate) fn check_len(what: &str, dtype: DType, shape: &[i64], len: usize) -> Result<usize> {
    let n = element_count(shape)?;
    if n != len {
        return Err(Error::invalid(format!(
            "{what}: shape {shape:?} has {n} elements, but the data has {len}"
        )));
    }
    n.checked_mul(dtype.size())
        .ok_or_else(|| Error::invalid(format!("{what}: shape {shape:?} is too large")))
}

/// Checks that `nbytes` bytes are exactly a `dtype` tensor of `shape`.
pub(crate) fn check_bytes(what: &str, dtype: DType, shape: &[i64], nbytes: usize) -> Result<()> {
    let n = element_count(shape)?;
    if n.checked_mul(dtype.size()) != Some(nbytes) {
        return Err(Error::invalid(format!(
            "{what}: shape {shape:?} of {dtype} takes {n} * {} bytes, but the data has {nbytes}",
            dtype.size()
        )));
    }
    Ok(())
}

/// The bytes of an element slice.
pub(crate) fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: Element types are plain data without padding; u8 has no alignment.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

/// A pointer for C: NULL for empty data, as grape.h asks.
pub(crate) fn data_ptr(bytes: &[u8]) -> *const c_void {
    if bytes.is_empty() {
        ptr::null()
    } else {
        bytes.as_ptr().cast()
    }
}

/// A slice from a pointer and length libgrape returned (NULL or zero length: empty).
///
/// # Safety
/// When `len > 0`, `p` points to `len` readable `T`s that live for `'a`.
pub(crate) unsafe fn c_slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}

/// A tensor borrowed for `'a`: the output of a run (until the next run), a state, or the
/// contents of a [`HostTensor`].
#[derive(Clone, Copy)]
pub struct TensorView<'a> {
    dtype: DType,
    shape: &'a [i64],
    data: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// # Safety
    /// The raw values come from libgrape and stay valid for `'a`.
    pub(crate) unsafe fn from_raw(
        what: &str,
        dtype: ffi::grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
    ) -> Result<TensorView<'a>> {
        let dtype = DType::from_raw(dtype)
            .ok_or_else(|| Error::new(crate::Code::Internal, format!("{what}: unknown dtype {dtype}")))?;
        let shape = c_slice(shape, rank);
        let expected = element_count(shape).ok().and_then(|n| n.checked_mul(dtype.size()));
        if expected != Some(nbytes) || (nbytes > 0 && data.is_null()) {
            return Err(Error::new(
                crate::Code::Internal,
                format!("{what}: libgrape returned {nbytes} bytes at {data:?} for {dtype}{shape:?}"),
            ));
        }
        Ok(TensorView {
            dtype,
            shape,
            data: c_slice(data.cast::<u8>(), nbytes),
        })
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The raw bytes (C order, native endianness).
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    fn check_type<T: Element>(&self) -> Result<()> {
        if !T::accepts(self.dtype) {
            return Err(Error::new(
                crate::Code::Type,
                format!(
                    "the tensor is {}{:?}, not {}",
                    self.dtype,
                    self.shape,
                    std::any::type_name::<T>()
                ),
            ));
        }
        if !T::valid(self.data) {
            return Err(Error::new(
                crate::Code::Internal,
                format!("the {} tensor holds bytes other than 0 and 1", self.dtype),
            ));
        }
        Ok(())
    }

    /// The elements, without copying. `Type` when `T` does not match the dtype.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        self.check_type::<T>()?;
        if self.data.is_empty() {
            return Ok(&[]);
        }
        if self.data.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
            return Err(Error::new(
                crate::Code::Internal,
                "the tensor's data is not aligned for its type; use to_vec",
            ));
        }
        // SAFETY: accepted dtype, so size_of::<T>() == dtype.size() and every byte pattern is valid
        // (checked for bool); aligned; lives for 'a.
        Ok(unsafe { std::slice::from_raw_parts(self.data.as_ptr().cast(), self.len()) })
    }

    /// A copy of the elements. `Type` when `T` does not match the dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_type::<T>()?;
        let n = self.len();
        let mut v = Vec::<T>::with_capacity(n);
        // SAFETY: as in as_slice; the copy is bytewise so alignment does not matter.
        unsafe {
            ptr::copy_nonoverlapping(self.data.as_ptr(), v.as_mut_ptr().cast::<u8>(), self.data.len());
            v.set_len(n);
        }
        Ok(v)
    }

    /// The elements converted to f32, whatever the dtype (i64 may round; bool is 0 or 1).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let d = self.data;
        let n = self.len();
        let le = |k: usize| &d[k * self.dtype.size()..(k + 1) * self.dtype.size()];
        (0..n)
            .map(|k| {
                let b = le(k);
                match self.dtype {
                    DType::F32 => f32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
                    DType::F16 => F16(u16::from_ne_bytes([b[0], b[1]])).to_f32(),
                    DType::BF16 => Bf16(u16::from_ne_bytes([b[0], b[1]])).to_f32(),
                    DType::I32 => i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as f32,
                    DType::I64 => i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
                    DType::Bool => (b[0] != 0) as u8 as f32,
                }
            })
            .collect()
    }
}

impl std::fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TensorView({}{:?}, {} bytes)",
            self.dtype,
            self.shape,
            self.data.len()
        )
    }
}

/// An owned, immutable host tensor (`grp_tensor`): dense, C order.
pub struct HostTensor {
    raw: NonNull<ffi::grp_tensor>,
}

// SAFETY: a grp_tensor is an immutable value; nothing in it depends on the creating thread.
unsafe impl Send for HostTensor {}
unsafe impl Sync for HostTensor {}

impl HostTensor {
    fn from_out(out: *mut ffi::grp_tensor) -> Result<HostTensor> {
        NonNull::new(out)
            .map(|raw| HostTensor { raw })
            .ok_or_else(|| Error::new(crate::Code::Internal, "libgrape returned success but no tensor"))
    }

    /// Reads a .npy file (`<f4 <f2 <i4 <i8 |b1`, C order).
    pub fn read_npy(path: impl AsRef<Path>) -> Result<HostTensor> {
        let path = crate::path_c_string(path.as_ref())?;
        let mut out = ptr::null_mut();
        unsafe { check(ffi::grp_tensor_read_npy(path.as_ptr(), &mut out))? };
        HostTensor::from_out(out)
    }

    /// A tensor holding a copy of `data`; the dtype is `T`'s (`u16`: f16).
    pub fn new<T: Element>(shape: &[i64], data: &[T]) -> Result<HostTensor> {
        HostTensor::from_bytes(T::DTYPE, shape, as_bytes(data))
    }

    /// A tensor of `dtype` holding a copy of `bytes` (their length must match the shape).
    pub fn from_bytes(dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<HostTensor> {
        check_bytes("tensor", dtype, shape, bytes.len())?;
        let mut out = ptr::null_mut();
        unsafe {
            check(ffi::grp_tensor_create(
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                data_ptr(bytes),
                bytes.len(),
                &mut out,
            ))?
        };
        HostTensor::from_out(out)
    }

    pub fn view(&self) -> TensorView<'_> {
        let t = self.raw.as_ptr();
        // SAFETY: the accessors of a live tensor; the pointers live as long as it does.
        unsafe {
            TensorView::from_raw(
                "tensor",
                ffi::grp_tensor_dtype(t),
                ffi::grp_tensor_shape(t),
                ffi::grp_tensor_rank(t),
                ffi::grp_tensor_data(t),
                ffi::grp_tensor_nbytes(t),
            )
        }
        .unwrap_or(TensorView {
            dtype: DType::F32,
            shape: &[0],
            data: &[],
        })
    }

    /// Writes the tensor to a .npy file (bf16 is written as f32).
    pub fn write_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let v = self.view();
        write_npy_bytes(path, v.dtype, v.shape, v.data)
    }
}

impl Drop for HostTensor {
    fn drop(&mut self) {
        unsafe { ffi::grp_tensor_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostTensor({:?})", self.view())
    }
}

/// Writes `data` with `shape` as a .npy file; the dtype is `T`'s (`u16`: f16).
pub fn write_npy<T: Element>(path: impl AsRef<Path>, shape: &[i64], data: &[T]) -> Result<()> {
    check_len("npy", T::DTYPE, shape, data.len())?;
    write_npy_bytes(path, T::DTYPE, shape, as_bytes(data))
}

fn write_npy_bytes(path: impl AsRef<Path>, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
    let path = crate::path_c_string(path.as_ref())?;
    unsafe {
        check(ffi::grp_npy_write(
            path.as_ptr(),
            dtype.raw(),
            shape.as_ptr(),
            shape.len(),
            data_ptr(bytes),
            bytes.len(),
        ))
    }
}
