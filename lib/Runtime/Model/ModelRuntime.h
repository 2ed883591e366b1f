/*===- ModelRuntime.h - State shared by the model runtime's files -*- C -*-===*
 *
 * Internal to libKilnModelRuntime.a: the model, instance and run-context
 * structs of ModelRuntime.c (host side), Signature.c, Weights.c, Options.c
 * and DeviceRuntime.c / DeviceRun.c (device models, through the driver
 * table of kiln/Runtime/Device.h). Every function here is hidden.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_MODEL_MODELRUNTIME_H
#define KILN_LIB_RUNTIME_MODEL_MODELRUNTIME_H

#include "kiln/Runtime/Common.h"
#include "kiln/Runtime/Device.h"
#include "kiln/Runtime/ModelABI.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_value_sig {
  const char *name;
  kiln_dtype_t dtype;
  size_t rank;
  int64_t *dims;            /* -1: symbolic */
  const char **dim_symbols; /* "" when static or unnamed */
  int32_t *symbol_ids;      /* -1 when static or unnamed */
} kiln_value_sig;

/* An external weight (`weight` record, kilnc --external-weights): static
 * dims, at `offset` of the weights file. */
typedef struct kiln_ext_weight {
  kiln_value_sig sig;
  uint64_t offset, bytes;
} kiln_ext_weight;

/* Metadata blocks of a model, freed together. */
typedef struct kiln_meta_block {
  struct kiln_meta_block *next;
  max_align_t align[];
} kiln_meta_block;

/* The options of a model and its instances after the environment filled
 * what the caller left unset (kiln_rt_options_from_env). Strings point into
 * the caller's options or the environment: copy what outlives the call. */
typedef struct kiln_rt_options {
  const char *weights_path;   /* NULL: the recorded file next to the model */
  int weights_given;          /* weights_path is the caller's (not the env) */
  const char *driver_path;    /* NULL: the driver's default library */
  int32_t device_ordinal;     /* >= 0 */
  const char *ordinal_source; /* for messages; NULL for the default */
  char ordinal_env[48];       /* "KILN_<KIND>_DEVICE" when it came from there */
  char chip_env[48];          /* "KILN_<KIND>_CHIP" */
  const char *device_chip;    /* NULL: the first image the device runs */
  const char *chip_source;    /* for messages: the option or KILN_<KIND>_CHIP */
  int graphs;                 /* 0 or 1 */
  const char *profile_path;   /* NULL: no profiling */
  int dependent_launch;       /* 0 or 1 */
} kiln_rt_options;

/* THE place the runtime reads the environment: fills `out` from `model`
 * and/or `instance` (either may be NULL: those fields get defaults), taking
 * unset fields from KILN_WEIGHTS and, when `kind` (the device kind, NULL
 * for the cpu) is given, KILN_<KIND>_DRIVER, KILN_<KIND>_DEVICE,
 * KILN_<KIND>_CHIP and KILN_<KIND>_GRAPHS. Returns FAILED_PRECONDITION
 * for a device index that is not a non-negative integer. */
KILN_HIDDEN kiln_status_t *
kiln_rt_options_from_env(const char *kind, const kiln_model_options_t *model,
                         const kiln_instance_options_t *instance,
                         kiln_rt_options *out);
/* INVALID_ARGUMENT unless `struct_size` is at least the size of the first
 * field (the loader copies smaller structs into full-size ones). */
KILN_HIDDEN kiln_status_t *kiln_rt_check_options_size(const char *what,
                                                      size_t struct_size,
                                                      size_t full_size);

/* The pool kiln_rt_parallel_for runs on (Parallel.c): the table's
 * set_thread_pool. */
KILN_HIDDEN void kiln_rt_set_thread_pool(const kiln_thread_pool_api *pool);

/* INCOMPATIBLE when the CPU lacks a feature of the model's `cpu` record
 * (CPUFeatures.c). */
KILN_HIDDEN kiln_status_t *
kiln_rt_check_cpu_features(const kiln_model_impl *model);

/* A `launch` record: launch site i's kernel and its ONNX nodes. */
typedef struct kiln_launch_site {
  const char *kernel;
  const char **nodes;
  size_t num_nodes;
} kiln_launch_site;

typedef struct kiln_dev_model kiln_dev_model;       /* DeviceRuntime.c */
typedef struct kiln_dev_instance kiln_dev_instance; /* DeviceRuntime.c */

struct kiln_model_impl {
  /* The generated program this model runs: the model's only one, or the
   * one of kiln_model_programs model_create chose. */
  kiln_model_program program;
  uint64_t arena_size;
  size_t num_inputs, num_outputs;
  kiln_value_sig *inputs, *outputs;
  size_t num_symbols;
  const char **symbols;
  kiln_meta_block *meta;
  /* The signature's device records. */
  int on_device;        /* a `device` record other than cpu */
  char device_kind[16]; /* "cpu" or the signature's device kind */
  char device_name[48]; /* "cpu" or "<kind>:<chip>" */
  char chip[32];        /* the signature's chip; "" on the cpu */
  uint64_t num_kernels, num_weights;
  int graph_capturable;
  /* The `dependent-launch` record: every kernel waits for the previous
   * one itself (KILN_DEVICE_LAUNCH_DEPENDENT). */
  int dependent_launch;
  /* The `cpu <name> <feature>...` record: the CPU the host code was built
   * for and the features it needs (space-separated); NULL without one. */
  const char *cpu_name, *cpu_features;
  /* Device models: the driver (NULL on the cpu) and the device. */
  const kiln_device_driver *driver;
  kiln_dev_model *dev;
  /* External weights: the `weights-file` record and the `weight` records;
   * the file is memory-mapped (read-only) by model_create. */
  size_t num_ext_weights;
  kiln_ext_weight *ext_weights;
  /* The `launch` records, by site (profiles name the ONNX nodes). */
  size_t num_sites;
  kiln_launch_site *sites;
  const char *weights_file; /* recorded basename; NULL without the record */
  uint64_t weights_hash, weights_file_bytes;
  char *weights_path; /* the mapped file (malloc'ed); NULL when none */
  const unsigned char *weights_map;
  size_t weights_map_size;
};

/* A scratch buffer of kiln_rt_alloc, cached across runs. */
typedef struct kiln_scratch {
  void *ptr;
  size_t size;
  int in_use; /* held now (until kiln_rt_release or the run's end) */
  int used;   /* held at some point of this run: kept for the next one */
  int pins;   /* device graphs that hold it (DeviceRuntime.h): kept */
} kiln_scratch;

typedef struct kiln_binding {
  int64_t value;
  size_t input, dim;
  int bound;
} kiln_binding;

struct kiln_instance_impl {
  kiln_model_impl *model;
  void *arena;             /* host arena (cpu models) */
  kiln_binding *bindings;  /* per symbol */
  void **input_data;       /* per input */
  kiln_tensor_t **outputs; /* per output */
  kiln_scratch *scratch;
  size_t num_scratch, cap_scratch;
  kiln_dev_instance *dev; /* device models */
  int initialized;        /* kiln_model_init has run */
  /* kiln_instance_set_profiling (Profile.c): NULL until then. */
  struct kiln_rt_profile *profile;
  int profile_kernels; /* time every launch (checked at each launch) */
};

struct kiln_rt_ctx {
  kiln_instance_impl *instance;
  const kiln_tensor_view_t *inputs;
  /* kiln_instance_run_device: the caller's output buffers; else NULL. */
  const kiln_output_view_t *output_views;
  int failed;
  kiln_status_code_t code;
  char reason[512];
  int64_t site; /* kiln_rt_launch_site of the next launch; -1: none */
};

/* Allocates the host tensor of output `index` (signature `sig`, `dims`) as
 * instance->outputs[index]; NULL on failure, recorded in ctx. */
KILN_HIDDEN kiln_tensor_t *kiln_rt_create_output(kiln_rt_ctx *ctx,
                                                 int64_t index,
                                                 const kiln_value_sig *sig,
                                                 const int64_t *dims);

/* Runs the host program: kiln_model_init first when the model has one and
 * this instance has not run it yet (the load-time kernels: what the
 * compiler does to weights), then kiln_model_main. Returns the first
 * non-zero status of the generated code. */
KILN_HIDDEN int32_t kiln_rt_run_program(kiln_rt_ctx *ctx);

/* Records the first failure of a run (later ones are dropped). */
KILN_HIDDEN void kiln_rt_fail(kiln_rt_ctx *ctx, kiln_status_code_t code,
                              const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks kiln_rt_output's arguments against the signature (index, dims,
 * not allocated twice when `allocated` is set) and records a failure;
 * returns the output's signature or NULL. */
KILN_HIDDEN const kiln_value_sig *kiln_rt_check_output(kiln_rt_ctx *ctx,
                                                       int64_t index,
                                                       const int64_t *dims,
                                                       int allocated);

/* Host address of external weight `index` (in the mapping); records a
 * failure and returns NULL for a bad index. */
KILN_HIDDEN const void *kiln_rt_ext_weight_host(kiln_rt_ctx *ctx,
                                                int64_t index);

/* Best fit among the free entries of a scratch cache that are not much too
 * large; NULL when none fits. */
/* Marks the held entry at `ptr` free for the rest of the run; 0 if none. */
KILN_HIDDEN int kiln_rt_scratch_release(kiln_scratch *entries, size_t count,
                                        void *ptr);
KILN_HIDDEN kiln_scratch *kiln_rt_scratch_find(kiln_scratch *entries,
                                               size_t count, size_t bytes);

/*===--------------------------------------------------------------------===*
 * Profiling (Profile.c, Symbols.c)
 *===--------------------------------------------------------------------===*/

/* kiln_instance_set_profiling / kiln_instance_last_profile. */
KILN_HIDDEN kiln_status_t *kiln_rt_set_profiling(kiln_instance_impl *instance,
                                                 int flags);
KILN_HIDDEN kiln_status_t *kiln_rt_last_profile(kiln_instance_impl *instance,
                                                kiln_run_profile_t *out);
/* Around one run (inputs validated or not): starts the host clock; ends
 * it and collects the run's kernel and device times (nothing when the run
 * failed). No-ops without a profile. */
KILN_HIDDEN void kiln_rt_profile_begin(kiln_instance_impl *instance);
KILN_HIDDEN void kiln_rt_profile_end(kiln_instance_impl *instance, int failed);
/* kiln_rt_launch_cpu while profile_kernels: runs and times the kernel. */
KILN_HIDDEN void kiln_rt_profile_cpu_kernel(kiln_rt_ctx *ctx,
                                            void (*kernel)(void **args),
                                            void **args);
/* A device launch was enqueued while profile_kernels: its site and, for
 * the run's first, the host time. */
KILN_HIDDEN void kiln_rt_profile_device_launch(kiln_rt_ctx *ctx);
/* The host time of device mark 0 of the run being profiled. */
KILN_HIDDEN void kiln_rt_profile_mark0(kiln_instance_impl *instance);
KILN_HIDDEN void kiln_rt_profile_free(kiln_instance_impl *instance);
/* Microseconds of CLOCK_MONOTONIC. */
KILN_HIDDEN double kiln_rt_now_us(void);
/* The names of the functions at `addrs` (count n) in the shared object
 * that holds them, from its symbol table (.symtab, else .dynsym): out[i]
 * is malloc'ed, or NULL when not found. */
KILN_HIDDEN void kiln_rt_symbol_names(void *const *addrs, size_t n, char **out);

/*===--------------------------------------------------------------------===*
 * Signature and external weights (Signature.c, Weights.c)
 *===--------------------------------------------------------------------===*/

/* Parses kiln_model_signature into `model`; INCOMPATIBLE when malformed. */
KILN_HIDDEN kiln_status_t *kiln_rt_parse_signature(kiln_model_impl *model,
                                                   const char *text);
/* Metadata owned by the model (freed with it); NULL when out of memory. */
KILN_HIDDEN void *kiln_rt_meta_alloc(kiln_model_impl *model, size_t bytes);
/* Frees all of the model's metadata (what the signature parser made). */
KILN_HIDDEN void kiln_rt_meta_free(kiln_model_impl *model);
/* Unmaps the weights file and frees its path (both may be unset). */
KILN_HIDDEN void kiln_rt_unmap_weights(kiln_model_impl *model);
/* Opens, checks and maps the weights file (options->weights_path, else the
 * recorded file next to `model_path`). */
KILN_HIDDEN kiln_status_t *kiln_rt_map_weights(kiln_model_impl *model,
                                               const char *model_path,
                                               const kiln_rt_options *options);

/*===--------------------------------------------------------------------===*
 * Device models (DeviceRuntime.c, DeviceRun.c), through model->driver
 *===--------------------------------------------------------------------===*/

/* Programs.c: creates a model (the program its device runs, its options,
 * weights and device), and destroys one (also a partly created one). */
KILN_HIDDEN kiln_status_t *
kiln_rt_model_create(const char *model_path,
                     const kiln_model_options_t *options,
                     kiln_model_impl **out_model);
KILN_HIDDEN void kiln_rt_model_destroy(kiln_model_impl *model);

/* Fills the image fields of a model's only program from the symbols
 * generated code defines for a device target (all NULL on the cpu). */
KILN_HIDDEN void kiln_dev_single_image(kiln_model_program *program);

/* Finds the driver of model->device_kind, checks the device image, opens
 * the driver and the device; on failure returns a status
 * (FAILED_PRECONDITION without a usable driver or device). */
KILN_HIDDEN kiln_status_t *kiln_dev_model_create(kiln_model_impl *model,
                                                 const kiln_rt_options *opts);
KILN_HIDDEN void kiln_dev_model_destroy(kiln_model_impl *model);
KILN_HIDDEN kiln_status_t *
kiln_dev_instance_create(kiln_instance_impl *inst, const kiln_rt_options *opts);
KILN_HIDDEN void kiln_dev_instance_destroy(kiln_instance_impl *inst);
/* One run of a device model; inputs (and output views) already validated.
 * Host run: `out_outputs` receives host tensors. Device run: `views` holds
 * the caller's device buffers and `out_outputs` is NULL. */
KILN_HIDDEN kiln_status_t *kiln_dev_run(kiln_instance_impl *inst,
                                        const kiln_tensor_view_t *inputs,
                                        const kiln_output_view_t *views,
                                        kiln_tensor_t **out_outputs);
KILN_HIDDEN kiln_status_t *kiln_dev_set_stream(kiln_instance_impl *inst,
                                               void *stream);
KILN_HIDDEN kiln_status_t *kiln_dev_set_graphs(kiln_instance_impl *inst,
                                               int enable);
/* kiln_rt_input / kiln_rt_output / kiln_rt_arena / kiln_rt_alloc of a
 * device model: device pointers. */
KILN_HIDDEN void *kiln_dev_input(kiln_rt_ctx *ctx, int64_t index);
KILN_HIDDEN void *kiln_dev_output(kiln_rt_ctx *ctx, int64_t index,
                                  const int64_t *dims);
KILN_HIDDEN void *kiln_dev_arena(kiln_rt_ctx *ctx);
KILN_HIDDEN void *kiln_dev_alloc(kiln_rt_ctx *ctx, size_t bytes);
KILN_HIDDEN void kiln_dev_release(kiln_rt_ctx *ctx, void *ptr);
/* kiln_rt_external_weight of a device model: the instance's device copy of
 * external weight `index`, uploaded from the mapping on first use. */
KILN_HIDDEN void *kiln_dev_external_weight(kiln_rt_ctx *ctx, int64_t index);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_MODEL_MODELRUNTIME_H */
