//===- Status.h - Kiln statuses as Python exceptions ------------*- C++ -*-===//
//
// Both extension modules raise a failed call's status as kiln.Error (the
// runtime module's exception type): the status's message, with `code` its
// name ("INVALID_ARGUMENT", ...). The status is freed.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PYTHON_BINDINGS_STATUS_H
#define KILN_PYTHON_BINDINGS_STATUS_H

#include "kiln-c/runtime.h"

#include <nanobind/nanobind.h>

#include <string>

namespace kiln_python {

[[noreturn]] inline void raiseStatus(kiln_status_t *status,
                                     nanobind::handle errorType) {
  std::string message = kiln_status_message(status);
  std::string code = kiln_status_code_name(kiln_status_code(status));
  kiln_status_free(status);
  nanobind::object error = errorType(message);
  error.attr("code") = code;
  PyErr_SetObject(errorType.ptr(), error.ptr());
  throw nanobind::python_error();
}

} // namespace kiln_python

#endif // KILN_PYTHON_BINDINGS_STATUS_H
