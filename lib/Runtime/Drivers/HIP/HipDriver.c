/*===- HipDriver.c - dlopen of the HIP runtime ----------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NODELETE */
#endif
#include "HipDriver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILN_ENTRY(field, symbol) {offsetof(kiln_hip_driver, field), symbol}

static const struct {
  size_t offset;
  const char *symbol;
} kEntries[] = {
    KILN_ENTRY(hipInit, "hipInit"),
    KILN_ENTRY(hipGetErrorName, "hipGetErrorName"),
    KILN_ENTRY(hipGetErrorString, "hipGetErrorString"),
    KILN_ENTRY(hipGetDeviceCount, "hipGetDeviceCount"),
    KILN_ENTRY(hipSetDevice, "hipSetDevice"),
    KILN_ENTRY(hipGetDevice, "hipGetDevice"),
    KILN_ENTRY(hipModuleLoadData, "hipModuleLoadData"),
    KILN_ENTRY(hipModuleUnload, "hipModuleUnload"),
    KILN_ENTRY(hipModuleGetFunction, "hipModuleGetFunction"),
    KILN_ENTRY(hipModuleLaunchKernel, "hipModuleLaunchKernel"),
    KILN_ENTRY(hipMalloc, "hipMalloc"),
    KILN_ENTRY(hipFree, "hipFree"),
    KILN_ENTRY(hipHostMalloc, "hipHostMalloc"),
    KILN_ENTRY(hipHostGetDevicePointer, "hipHostGetDevicePointer"),
    KILN_ENTRY(hipHostFree, "hipHostFree"),
    KILN_ENTRY(hipMemcpyHtoD, "hipMemcpyHtoD"),
    KILN_ENTRY(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync"),
    KILN_ENTRY(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync"),
    KILN_ENTRY(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync"),
    KILN_ENTRY(hipStreamCreateWithFlags, "hipStreamCreateWithFlags"),
    KILN_ENTRY(hipStreamDestroy, "hipStreamDestroy"),
    KILN_ENTRY(hipStreamSynchronize, "hipStreamSynchronize"),
    KILN_ENTRY(hipStreamBeginCapture, "hipStreamBeginCapture"),
    KILN_ENTRY(hipStreamEndCapture, "hipStreamEndCapture"),
    KILN_ENTRY(hipGraphInstantiateWithFlags, "hipGraphInstantiateWithFlags"),
    KILN_ENTRY(hipGraphLaunch, "hipGraphLaunch"),
    KILN_ENTRY(hipGraphExecDestroy, "hipGraphExecDestroy"),
    KILN_ENTRY(hipGraphDestroy, "hipGraphDestroy"),
};

/* The device properties, newest layout first (see HipDriver.h). */
static const struct {
  const char *symbol;
  size_t arch_offset;
} kProps[] = {
    {"hipGetDevicePropertiesR0600", KILN_HIP_PROPS_R0600_ARCH_OFFSET},
    {"hipGetDeviceProperties", KILN_HIP_PROPS_R0000_ARCH_OFFSET},
};

static int missing(kiln_hip_driver *driver, void *library, const char *path,
                   const char *symbol, char *error, size_t size) {
  snprintf(error, size, "%s has no symbol %s", path, symbol);
  dlclose(library);
  memset(driver, 0, sizeof(*driver));
  return -1;
}

int kiln_hip_driver_open(kiln_hip_driver *driver, const char *path, char *error,
                         size_t size) {
  memset(driver, 0, sizeof(*driver));
  dlerror();
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library) {
    const char *why = dlerror();
    snprintf(error, size, "%s", why ? why : path);
    return -1;
  }
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    void *fn = dlsym(library, kEntries[i].symbol);
    if (!fn)
      return missing(driver, library, path, kEntries[i].symbol, error, size);
    memcpy((char *)driver + kEntries[i].offset, &fn, sizeof(fn));
  }
  for (size_t i = 0; i < sizeof(kProps) / sizeof(kProps[0]); ++i) {
    void *fn = dlsym(library, kProps[i].symbol);
    if (!fn)
      continue;
    memcpy(&driver->hipGetDeviceProperties, &fn, sizeof(fn));
    driver->props_arch_offset = kProps[i].arch_offset;
    driver->props_symbol = kProps[i].symbol;
    break;
  }
  if (!driver->hipGetDeviceProperties)
    return missing(driver, library, path, "hipGetDeviceProperties", error,
                   size);
  driver->library = library;
  return 0;
}

void kiln_hip_driver_close(kiln_hip_driver *driver) {
  if (driver->library)
    dlclose(driver->library);
  memset(driver, 0, sizeof(*driver));
}

void kiln_hip_error_text(const kiln_hip_driver *driver, kiln_hip_result result,
                         char *out, size_t size) {
  const char *name =
      driver->hipGetErrorName ? driver->hipGetErrorName(result) : NULL;
  const char *text =
      driver->hipGetErrorString ? driver->hipGetErrorString(result) : NULL;
  if (name && *name && text && *text && strcmp(name, text) != 0)
    snprintf(out, size, "%s (%s)", name, text);
  else if (name && *name)
    snprintf(out, size, "%s", name);
  else
    snprintf(out, size, "HIP error %d", (int)result);
}

/* Copies the NUL-terminated string of at most 256 bytes at `at`. */
static void copy_field(const char *at, char *out, size_t size) {
  size_t n = strnlen(at, 256);
  if (n >= size)
    n = size - 1;
  memcpy(out, at, n);
  out[n] = '\0';
}

kiln_hip_result kiln_hip_device_props(const kiln_hip_driver *driver, int device,
                                      char *name, size_t name_size, char *arch,
                                      size_t arch_size) {
  name[0] = arch[0] = '\0';
  /* Zeroed, and aligned (malloc) for the struct's size_t and pointers. */
  char *props = (char *)calloc(1, KILN_HIP_PROPS_BUFFER);
  if (!props)
    return KILN_HIP_ERROR_OUT_OF_MEMORY;
  kiln_hip_result r = driver->hipGetDeviceProperties(props, device);
  if (r == KILN_HIP_SUCCESS) {
    copy_field(props + KILN_HIP_PROPS_NAME_OFFSET, name, name_size);
    copy_field(props + driver->props_arch_offset, arch, arch_size);
  }
  free(props);
  return r;
}
