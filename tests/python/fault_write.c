/* A preloaded library that makes file writes fail, for tests of how grape reports them (there is
 * no full or failing file system to write to in CI).
 *
 *   GRAPE_FAULT_WRITE_ERRNO=N  write() to a descriptor other than 0, 1, 2 fails with errno N once
 *                              GRAPE_FAULT_WRITE_AFTER bytes (default 0) have been written to such
 *                              descriptors; the write that crosses that count is cut short first
 *   GRAPE_FAULT_FSYNC_ERRNO=N  fsync() and fdatasync() fail with errno N
 *
 * Build: cc -shared -fPIC -o fault_write.so fault_write.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static long env_long(const char* name, long fallback) {
  const char* v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : fallback;
}

static long written = 0;

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t) = NULL;
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  long err = env_long("GRAPE_FAULT_WRITE_ERRNO", 0);
  if (err == 0 || fd <= 2) return real(fd, buf, n);
  long left = env_long("GRAPE_FAULT_WRITE_AFTER", 0) - written;
  if (left <= 0) {
    errno = (int)err;
    return -1;
  }
  ssize_t put = real(fd, buf, n < (size_t)left ? n : (size_t)left);
  if (put > 0) written += put;
  return put;
}

static int fsync_fault(void) {
  long err = env_long("GRAPE_FAULT_FSYNC_ERRNO", 0);
  if (err == 0) return 0;
  errno = (int)err;
  return -1;
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return fsync_fault() ? -1 : real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return fsync_fault() ? -1 : real(fd);
}
