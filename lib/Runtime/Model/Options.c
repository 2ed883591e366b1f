/*===- Options.c - Model and instance options, and the environment --------===*
 *
 * Options reach the runtime through the C API (kiln_model_options_t,
 * kiln_instance_options_t). The environment variables documented in
 * docs/runtime.md ("Options and environment") fill only what the caller
 * left unset, and are read here and nowhere else in the runtime:
 *
 *   KILN_WEIGHTS          model option weights_path
 *   KILN_<KIND>_DRIVER    model option driver_path     (device models)
 *   KILN_<KIND>_DEVICE    model option device_ordinal  (device models)
 *   KILN_<KIND>_CHIP      model option device_chip     (device models)
 *   KILN_<KIND>_GRAPHS    instance option graphs: "0" is off
 *   KILN_<KIND>_DEPENDENT_LAUNCH  instance option dependent_launch: "0" is
 *                         off
 *
 * (The instance option profile_path has no variable: profiles are asked
 * for through the API, kiln-run --profile.)
 * <KIND> is the upper-cased device kind of the model's signature, so each
 * driver gets its own variables without this file naming any.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getenv("KILN_<KIND>_<what>"); NULL when unset or empty. */
static const char *kind_env(const char *kind, const char *what, char *name,
                            size_t size) {
  size_t n = (size_t)snprintf(name, size, "KILN_");
  for (const char *p = kind; *p && n + 1 < size; ++p)
    name[n++] = (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
  snprintf(name + n, size - n, "_%s", what);
  const char *value = getenv(name);
  return value && *value ? value : NULL;
}

/* An instance option that is 1 (on), 0 (off) or -1 (unset: on unless
 * KILN_<KIND>_<what> is "0"), into `out`. */
static kiln_status_t *on_off_option(const char *kind, const char *option,
                                    const char *what, int32_t value, int *out) {
  if (value == 0 || value == 1) {
    *out = value;
    return NULL;
  }
  if (value != -1)
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "the %s option is %d, expected 0 (off), 1 (on) or -1 (unset)", option,
        (int)value);
  char name[64];
  const char *env = kind_env(kind, what, name, sizeof(name));
  *out = !(env && strcmp(env, "0") == 0);
  return NULL;
}

kiln_status_t *kiln_rt_check_options_size(const char *what, size_t struct_size,
                                          size_t full_size) {
  if (struct_size < sizeof(size_t) || struct_size > full_size)
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: struct_size is %zu, expected %zu (initialize the struct with "
        "%s_init)",
        what, struct_size, full_size, what);
  return NULL;
}

kiln_status_t *kiln_rt_options_from_env(const char *kind,
                                        const kiln_model_options_t *model,
                                        const kiln_instance_options_t *instance,
                                        kiln_rt_options *out) {
  memset(out, 0, sizeof(*out));
  out->graphs = 1;
  out->dependent_launch = 1;
  char name[64];
  if (model) {
    if (model->weights_path && *model->weights_path) {
      out->weights_path = model->weights_path;
      out->weights_given = 1;
    } else {
      const char *env = getenv("KILN_WEIGHTS");
      out->weights_path = env && *env ? env : NULL;
    }
  }
  if (!kind)
    return NULL;
  if (model) {
    out->driver_path = model->driver_path && *model->driver_path
                           ? model->driver_path
                           : kind_env(kind, "DRIVER", name, sizeof(name));
    if (model->device_ordinal >= 0) {
      out->device_ordinal = model->device_ordinal;
      out->ordinal_source = "the device_ordinal option";
    } else if (model->device_ordinal != -1) {
      return kiln_rtc_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "the device_ordinal option is %d, expected a device index or -1 "
          "(unset)",
          (int)model->device_ordinal);
    } else if (kind_env(kind, "DEVICE", out->ordinal_env,
                        sizeof(out->ordinal_env))) {
      const char *text = getenv(out->ordinal_env);
      char *end = NULL;
      long ordinal = strtol(text, &end, 10);
      if (*end || ordinal < 0 || ordinal > INT32_MAX)
        return kiln_rtc_make_status(
            KILN_STATUS_FAILED_PRECONDITION,
            "%s is '%s', expected a device index (0, 1, ...)", out->ordinal_env,
            text);
      out->device_ordinal = (int32_t)ordinal;
      out->ordinal_source = out->ordinal_env;
    }
  }
  if (model) {
    if (model->device_chip && *model->device_chip) {
      out->device_chip = model->device_chip;
      out->chip_source = "the device_chip option";
    } else {
      out->device_chip =
          kind_env(kind, "CHIP", out->chip_env, sizeof(out->chip_env));
      out->chip_source = out->chip_env;
    }
  }
  if (instance) {
    kiln_status_t *status =
        on_off_option(kind, "graphs", "GRAPHS", instance->graphs, &out->graphs);
    if (!status)
      status =
          on_off_option(kind, "dependent_launch", "DEPENDENT_LAUNCH",
                        instance->dependent_launch, &out->dependent_launch);
    if (status)
      return status;
    const char *profile = instance->profile_path;
    out->profile_path = profile && *profile ? profile : NULL;
  }
  return NULL;
}
