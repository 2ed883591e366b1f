/*===- Programs.c - Models: the program a model.so runs ------------------===*
 *
 * Creates and destroys models (kiln_model_impl): the program of the
 * model's signature (kiln/Runtime/ModelABI.h), its options, its weights
 * and its device. A model.so of one program defines kiln_model_signature,
 * kiln_model_main and, for a device, its image; one of several images
 * (kilnc --target=<kind> for a kind with default images) defines
 * kiln_model_programs instead, and the model takes the first program whose
 * device opens, or the one the device_chip option names.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_rt_model_destroy(kiln_model_impl *model) {
  if (!model)
    return;
  if (model->dev)
    kiln_dev_model_destroy(model);
  kiln_rt_unmap_weights(model);
  kiln_rt_meta_free(model);
  free(model);
}

/* Defined by generated code (ModelABI.h): a model of one program defines
 * the first four (kiln_model_init only with hoisted weight kernels; the
 * device image symbols are DeviceRuntime.c's), one of several images the
 * last two. Weak and hidden: each model defines one of the two sets. */
extern const char kiln_model_signature[]
    __attribute__((weak, visibility("hidden")));
extern int32_t kiln_model_main(kiln_rt_ctx *ctx)
    __attribute__((weak, visibility("hidden")));
extern int32_t kiln_model_init(kiln_rt_ctx *ctx)
    __attribute__((weak, visibility("hidden")));
extern const kiln_model_program kiln_model_programs[]
    __attribute__((weak, visibility("hidden")));
extern const int64_t kiln_model_num_programs
    __attribute__((weak, visibility("hidden")));

/* One program's model: its signature, the options, the weights, the
 * device. `chip_filter`: a model of several images skips (returns NULL
 * with *skipped set) a program whose chip is not the device_chip option. */
static kiln_status_t *create_program(const char *model_path,
                                     const kiln_model_options_t *options,
                                     const kiln_model_program *program,
                                     int chip_filter, int *skipped,
                                     kiln_model_impl **out_model) {
  *out_model = NULL;
  *skipped = 0;
  kiln_model_impl *model = (kiln_model_impl *)calloc(1, sizeof(*model));
  if (!model)
    return kiln_rtc_oom_status();
  model->program = *program;
  snprintf(model->device_name, sizeof(model->device_name), "cpu");
  snprintf(model->device_kind, sizeof(model->device_kind), "cpu");
  kiln_status_t *status = kiln_rt_parse_signature(model, program->signature);
  kiln_rt_options opts;
  if (!status)
    status = kiln_rt_options_from_env(
        model->on_device ? model->device_kind : NULL, options, NULL, &opts);
  if (!status && chip_filter && opts.device_chip &&
      strcmp(opts.device_chip, model->chip) != 0) {
    *skipped = 1;
    kiln_rt_model_destroy(model);
    return NULL;
  }
  if (!status)
    status = kiln_rt_check_cpu_features(model);
  if (!status)
    status = kiln_rt_map_weights(model, model_path, &opts);
  if (!status && model->on_device)
    status = kiln_dev_model_create(model, &opts);
  if (status) {
    kiln_rt_model_destroy(model);
    return status;
  }
  *out_model = model;
  return NULL;
}

static void free_status(kiln_status_t *status) {
  if (status && !status->is_static)
    free(status);
}

/* A model of several images: the first program whose device opens (a
 * FAILED_PRECONDITION, e.g. another compute capability, tries the next),
 * or the one the device_chip option names. */
static kiln_status_t *create_any_program(const char *model_path,
                                         const kiln_model_options_t *options,
                                         kiln_model_impl **out_model) {
  char chips[256] = "", failures[1024] = "", kind[16] = "", first[512] = "";
  size_t nc = 0, nf = 0;
  /* Whether every image failed for the same reason (its message after
   * "model compiled for <kind> <chip>: "): then it is said once. */
  int same = 1;
  kiln_rt_options opts;
  int have_opts = 0;
  for (int64_t i = 0; i < kiln_model_num_programs; ++i) {
    /* The program's chip (and kind, for the options), for messages. */
    kiln_model_impl probe;
    memset(&probe, 0, sizeof(probe));
    kiln_status_t *status =
        kiln_rt_parse_signature(&probe, kiln_model_programs[i].signature);
    if (status) {
      kiln_rt_meta_free(&probe);
      return status;
    }
    if (nc < sizeof(chips))
      nc += (size_t)snprintf(chips + nc, sizeof(chips) - nc, "%s%s",
                             i ? ", " : "", probe.chip);
    if (!have_opts && probe.on_device) {
      status =
          kiln_rt_options_from_env(probe.device_kind, options, NULL, &opts);
      if (status) {
        kiln_rt_meta_free(&probe);
        return status;
      }
      have_opts = 1;
    }
    char prefix[96];
    snprintf(prefix, sizeof(prefix),
             "model compiled for %s %s: ", probe.device_kind, probe.chip);
    snprintf(kind, sizeof(kind), "%s", probe.device_kind);
    kiln_rt_meta_free(&probe);
    int skipped = 0;
    status = create_program(model_path, options, &kiln_model_programs[i],
                            /*chip_filter=*/1, &skipped, out_model);
    if (skipped)
      continue;
    if (!status)
      return NULL;
    if (status->code != KILN_STATUS_FAILED_PRECONDITION)
      return status;
    const char *reason = status->message;
    if (strncmp(reason, prefix, strlen(prefix)) == 0)
      reason += strlen(prefix);
    else
      same = 0;
    if (nf == 0)
      snprintf(first, sizeof(first), "%s", reason);
    else if (strcmp(first, reason) != 0)
      same = 0;
    if (nf < sizeof(failures))
      nf += (size_t)snprintf(failures + nf, sizeof(failures) - nf, "%s%s",
                             nf ? "; " : "", status->message);
    free_status(status);
  }
  if (nf > 0 && same)
    return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "model compiled for %s %s: %s", kind, chips,
                                first);
  if (have_opts && opts.device_chip && nf == 0)
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s is '%s': the model has device images for %s", opts.chip_source,
        opts.device_chip, chips);
  return kiln_rtc_make_status(
      KILN_STATUS_FAILED_PRECONDITION,
      "none of the model's device images (%s) runs here: %s", chips, failures);
}

kiln_status_t *kiln_rt_model_create(const char *model_path,
                                    const kiln_model_options_t *options,
                                    kiln_model_impl **out_model) {
  *out_model = NULL;
  kiln_status_t *status = kiln_rt_check_options_size(
      "kiln_model_options", options->struct_size, sizeof(*options));
  if (status)
    return status;
  if (&kiln_model_num_programs && kiln_model_programs &&
      kiln_model_num_programs > 0)
    return create_any_program(model_path, options, out_model);
  if (!kiln_model_signature || !kiln_model_main)
    return kiln_rtc_make_status(KILN_STATUS_INCOMPATIBLE,
                                "the model defines no program "
                                "(kiln_model_signature, kiln_model_main)");
  kiln_model_program program;
  memset(&program, 0, sizeof(program));
  program.signature = kiln_model_signature;
  program.main = kiln_model_main;
  program.init = kiln_model_init;
  kiln_dev_single_image(&program);
  int skipped = 0;
  return create_program(model_path, options, &program, /*chip_filter=*/0,
                        &skipped, out_model);
}
