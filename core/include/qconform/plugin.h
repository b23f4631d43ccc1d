/* The backend plugin ABI, version 1 (docs/integrate.md, "Plugins").
 *
 * A plugin is a shared library that exports one C function, qconform_plugin_entry. qconform loads it
 * with `qconform run --plugin PATH.so` or the QCONFORM_PLUGINS path list. Everything that crosses the
 * boundary is a plain C struct of fixed-size integers, pointers and NUL-terminated strings; an op
 * request travels as the wire form's JSON text plus tensor views (qconform/wire.hpp), and dtypes are
 * named by their strings ("f32", "i8", ...), never by enum values. So a plugin built with another
 * compiler, another standard library or another qconform patch release loads and runs unchanged; only a
 * change of this file's structs bumps QCONFORM_PLUGIN_ABI_VERSION, and qconform refuses a plugin whose
 * version differs from its own, naming the file and both versions.
 *
 * C++ plugins do not write any of this by hand: qconform/plugin.hpp turns qc::Backend objects into
 * this table with one macro. */
#ifndef QCONFORM_PLUGIN_H
#define QCONFORM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QCONFORM_PLUGIN_ABI_VERSION 1u
#define QCONFORM_PLUGIN_ENTRY_SYMBOL "qconform_plugin_entry"

/* A dense row-major tensor: `dtype` names the format ("f32", "u8", "bf16", ...); f16/bf16/f8 elements
 * are their bit patterns, i4/u4 one value per byte (as qc::Tensor stores them). */
typedef struct qconform_tensor_view {
  const char* dtype;
  int32_t rank;
  const int64_t* shape;
  const void* data;
  uint64_t bytes;
} qconform_tensor_view;

/* What a run call leaves: status 0 and `output` (owned by the plugin until release), or status 1 and
 * `message` (why the backend could not compute it; reported as a CRASH "backend threw: ..."). */
typedef struct qconform_run_result {
  int32_t status;
  qconform_tensor_view output;
  const char* message;
  void* owner; /* the plugin's own handle for release */
} qconform_run_result;

/* One backend. Strings stay valid while the library is loaded. `reason` buffers are written as
 * NUL-terminated strings of at most reason_size bytes. */
typedef struct qconform_backend_v1 {
  void* self;
  const char* name;
  const char* description;
  const char* claim;      /* a preset name: built in, or declared in presets_json */
  const char* facts_json; /* a JSON object of strings ({} when none) for the report */
  /* 1: available; 0: not, with the reason written. */
  int32_t (*availability)(void* self, char* reason, size_t reason_size);
  /* 1: this request is implemented; 0: not (SKIP), with the reason written. */
  int32_t (*supports)(void* self, const char* op_json, const qconform_tensor_view* tensors, size_t tensor_count,
                      char* reason, size_t reason_size);
  void (*run)(void* self, const char* op_json, const qconform_tensor_view* tensors, size_t tensor_count,
              qconform_run_result* result);
  void (*release)(void* self, qconform_run_result* result);
} qconform_backend_v1;

typedef struct qconform_plugin_v1 {
  uint32_t abi_version; /* QCONFORM_PLUGIN_ABI_VERSION the plugin was built with; always the first field */
  const char* plugin_name;
  uint32_t wire_version; /* the wire form's version (qc::wire::kVersion) of op_json */
  uint32_t backend_count;
  const qconform_backend_v1* backends;
  /* NULL, or a JSON array of preset declarations in the policy-file format (docs/numerics.md) that the
   * backends' claims may name. */
  const char* presets_json;
} qconform_plugin_v1;

/* The entry point. `host_abi_version` is the loader's QCONFORM_PLUGIN_ABI_VERSION. Returns the plugin's
 * table (static storage), or NULL when it cannot be loaded at all. */
typedef const qconform_plugin_v1* (*qconform_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* QCONFORM_PLUGIN_H */
