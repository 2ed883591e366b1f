/*===- RegularFile.h - Opening and reading only regular files -*- C -*-===*
 *
 * Every file Kiln's tools and runtime read on a user's behalf (models,
 * external data, weights files, TensorProto inputs) goes through these: a
 * FIFO, a device (/dev/zero) or a directory is refused before anything is
 * read, so a hostile path can neither block the reader (open(2) of a FIFO
 * waits for a writer; O_NONBLOCK does not) nor feed it without end. Reads
 * are bounded by the size fstat(2) reported. Header-only (static inline),
 * for C and C++, with no link dependency.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_REGULARFILE_H
#define KILN_RUNTIME_REGULARFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why kiln_open_regular_file failed: "not a regular file (a FIFO)" and the
 * like, or strerror(errno) of open/fstat. */
static inline const char *kiln_regular_file_error(int err, mode_t mode) {
  if (err)
    return strerror(err);
  if (S_ISFIFO(mode))
    return "not a regular file (a FIFO)";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "not a regular file (a device)";
  if (S_ISDIR(mode))
    return "not a regular file (a directory)";
  if (S_ISSOCK(mode))
    return "not a regular file (a socket)";
  return "not a regular file";
}

/* Opens `path` read-only if it is a regular file (symlinks followed):
 * returns the descriptor (close-on-exec, blocking reads) and its size in
 * *size; -1 when open or fstat failed (errno kept), -2 when it is not a
 * regular file; the reason in *why. */
static inline int kiln_open_regular_file(const char *path, uint64_t *size,
                                         const char **why) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *why = kiln_regular_file_error(errno, 0);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    *why = kiln_regular_file_error(err, 0);
    close(fd);
    errno = err;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = kiln_regular_file_error(0, st.st_mode);
    close(fd);
    return -2;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = (uint64_t)st.st_size;
  *why = "";
  return fd;
}

/* Reads exactly `length` bytes at `offset` of `fd` into `out`; 0 on
 * success, -1 with the reason in *why (a read error, or the file ended
 * first: it shrank since it was opened). */
static inline int kiln_read_file_range(int fd, uint64_t offset, uint64_t length,
                                       void *out, const char **why) {
  unsigned char *p = (unsigned char *)out;
  while (length > 0) {
    size_t chunk =
        length > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)length;
    ssize_t got = pread(fd, p, chunk, (off_t)offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      *why = strerror(errno);
      return -1;
    }
    if (got == 0) {
      *why = "the file ended early (it changed while being read)";
      return -1;
    }
    p += got;
    offset += (uint64_t)got;
    length -= (uint64_t)got;
  }
  *why = "";
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_REGULARFILE_H */
