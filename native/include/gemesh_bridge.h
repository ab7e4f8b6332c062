/*
 * GE Mesh native bridge: a C ABI over CANN Graph Engine (GE, v1 session API)
 * and AscendCL, for serving static-shape ONNX models on Ascend NPUs.
 *
 * Object model
 *   process:  gemesh_init (aclInit + GEInitialize) ... gemesh_finalize
 *   model:    gemesh_model_load parses one ONNX file once per tier (a tier is a
 *             fixed set of input shapes, typically one batch size), and for
 *             every (tier, stream) adds, compiles and loads its own GE graph id
 *             on that stream. Device input/output buffers are allocated once per
 *             (stream, tier) at load; a run allocates nothing.
 *   sharing:  loads given the same share_key on one device (with the same model
 *             file, session and graph options) share one GE session, so the weights
 *             sit in device memory once per device; each load keeps its own
 *             graph ids, streams and buffers, and is destroyed on its own. The
 *             session goes with the last of them. This is how the lanes of a
 *             worker (one load each, on their own threads) share a device.
 *   run:      gemesh_model_run copies host inputs to the (stream, tier) device
 *             buffers, executes the graph on the stream, synchronises and copies
 *             the outputs back: synchronous from the caller's view.
 *
 * Errors
 *   Every function returning gemesh_status records, on failure, a readable
 *   message in a thread-local slot of the calling thread: the bridge's own
 *   description plus the GE (GEGetErrorMsgV2) and AscendCL (aclGetRecentErrMsg)
 *   texts captured inside the failing call. Read it with
 *   gemesh_last_error_message() on the same thread before the next bridge call.
 *
 * Threading
 *   Any thread may call any function; the bridge sets the ACL context of the
 *   model's device on the calling thread at every entry point, so calls need no
 *   thread affinity. gemesh_model_run calls on different streams of a model may
 *   run concurrently (one caller thread per stream is the intended use); calls
 *   on the same stream must not overlap (the second gets GEMESH_ERR_STATE).
 *   Load, destroy, init and finalize serialise among themselves.
 *
 * Strings returned as const char * point to thread-local copies that stay
 * valid until the calling thread's next bridge call; the caller never frees them.
 */
#ifndef GEMESH_BRIDGE_H_
#define GEMESH_BRIDGE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GEMESH_API __attribute__((visibility("default")))

/* Bumped on any incompatible change of this header; bindings check it at load. */
#define GEMESH_BRIDGE_API_VERSION 3u

/* GE's dim limit (gert::Shape::kMaxDimNum). */
#define GEMESH_MAX_RANK 25u

typedef enum gemesh_status {
  GEMESH_OK = 0,
  GEMESH_ERR_INVALID_ARGUMENT = 1, /* the caller's mistake: null, index, byte size, option syntax */
  GEMESH_ERR_STATE = 2,            /* call order: not initialised, unknown model, stream busy, models still loaded */
  GEMESH_ERR_INIT = 3,             /* aclInit, GEInitialize or device setup failed (includes rejected global options) */
  GEMESH_ERR_PARSE = 4,            /* aclgrphParseONNX failed: unreadable file, bad model, bad input names/shapes */
  GEMESH_ERR_GRAPH = 5,            /* session, AddGraph or CompileGraph failed (includes rejected session/graph options) */
  GEMESH_ERR_LOAD = 6,             /* stream creation or LoadGraph failed */
  GEMESH_ERR_OUT_OF_MEMORY = 7,    /* device memory exhausted */
  GEMESH_ERR_EXECUTE = 8,          /* a run failed: copy, execute or synchronize */
  GEMESH_ERR_INTERNAL = 9          /* a bug in the bridge */
} gemesh_status;

/* Data types use GE's ge::DataType values. */
typedef enum gemesh_dtype {
  GEMESH_DT_FLOAT = 0,
  GEMESH_DT_FLOAT16 = 1,
  GEMESH_DT_INT8 = 2,
  GEMESH_DT_INT32 = 3,
  GEMESH_DT_UINT8 = 4,
  GEMESH_DT_INT16 = 6,
  GEMESH_DT_UINT16 = 7,
  GEMESH_DT_UINT32 = 8,
  GEMESH_DT_INT64 = 9,
  GEMESH_DT_UINT64 = 10,
  GEMESH_DT_DOUBLE = 11,
  GEMESH_DT_BOOL = 12,
  GEMESH_DT_BF16 = 27
} gemesh_dtype;

/* A GE option. Both strings are borrowed for the duration of the call. */
typedef struct gemesh_option {
  const char *key;
  const char *value;
} gemesh_option;

/* Everything gemesh_model_load needs. All pointers are borrowed for the call. */
typedef struct gemesh_model_config {
  const char *model_path;          /* ONNX file */
  int32_t device_id;               /* logical device */
  uint32_t stream_count;           /* 1..64: one graph copy per tier on each stream */
  uint32_t tier_count;             /* 1..64 */
  uint32_t input_count;            /* 1..64: every ONNX graph input, in any order */
  const char *const *input_names;  /* [input_count] ONNX input names */
  const int32_t *input_dtypes;     /* [input_count] gemesh_dtype */
  const uint32_t *input_ranks;     /* [input_count] 1..GEMESH_MAX_RANK, the same for every tier */
  const int64_t *input_dims;       /* tier-major: tier 0's inputs' dims back to back, then tier 1's, ...; all >= 1 */
  const gemesh_option *session_options; /* ge.Session options; the bridge adds ge.session_device_id,
                                           ge.graphRunMode=0, ge.constLifecycle=session and, when no
                                           precision key is set anywhere, ge.exec.precision_mode_v2=fp16
                                           (GE's own inference default, force_fp16, made explicit) */
  size_t session_option_count;
  const gemesh_option *graph_options;   /* AddGraph options, the same for every graph of the model */
  size_t graph_option_count;
  const char *share_key;                /* NULL or "": a session of its own. Otherwise loads with the same
                                           key, device, model_path, session and graph options share one GE
                                           session (weights once per device); put the model's version
                                           and a digest of its bytes in the key */
} gemesh_model_config;

/* Shape, type and size of one tensor of one tier. */
typedef struct gemesh_tensor_info {
  int32_t dtype; /* gemesh_dtype */
  uint32_t rank;
  int64_t dims[GEMESH_MAX_RANK];
  uint64_t byte_size;
} gemesh_tensor_info;

/* GEMESH_BRIDGE_API_VERSION of the built library. Any thread, any time. */
GEMESH_API uint32_t gemesh_api_version(void);

/* "cann" or "cann-simulator": what the library was linked against. Any thread, any time. */
GEMESH_API const char *gemesh_backend(void);

/* The calling thread's last error message ("" if none). Thread-local copy. */
GEMESH_API const char *gemesh_last_error_message(void);

/* Status code of the CANN call behind the calling thread's last error (ge::Status
 * or aclError), 0 when the bridge itself rejected the call. */
GEMESH_API int64_t gemesh_last_error_native_code(void);

/* Initialises AscendCL (aclInit) and GE (GEInitialize) with the given global
 * options plus ge.graphRunMode=0. Reference-counted: a later call while
 * initialised only counts (its options are ignored, as GE ignores them) and
 * needs its own gemesh_finalize. Serialised with load/destroy/finalize. */
GEMESH_API gemesh_status gemesh_init(const gemesh_option *options, size_t option_count);

/* Warnings GE reported for the global options (unknown keys, ignored options),
 * one per line; "" if none. Valid after gemesh_init. Thread-local copy. */
GEMESH_API const char *gemesh_init_warnings(void);

/* Drops one gemesh_init reference; the last one runs GEFinalize, resets the
 * devices the bridge used and runs aclFinalize. Fails with GEMESH_ERR_STATE
 * (and keeps everything initialised) while models are still loaded. */
GEMESH_API gemesh_status gemesh_finalize(void);

/* Number of devices AscendCL sees. Needs gemesh_init. Any thread. */
GEMESH_API gemesh_status gemesh_device_count(uint32_t *count);

/* Free and total HBM of a device (aclrtGetMemInfo). Needs gemesh_init. Any thread. */
GEMESH_API gemesh_status gemesh_device_memory(int32_t device_id, uint64_t *free_bytes, uint64_t *total_bytes);

/* Loads a model: creates (or, with a share_key, joins) its GE session, and its
 * streams, graphs and device buffers.
 * On success *model_out receives a handle (never 0) owned by the caller until
 * gemesh_model_destroy. On failure nothing stays allocated. Slow (parses and
 * compiles tier_count × stream_count graphs); serialised process-wide. */
GEMESH_API gemesh_status gemesh_model_load(const gemesh_model_config *config, uint32_t *model_out);

/* Warnings GE reported while loading (e.g. option keys it does not know), one
 * per line; "" if none. Thread-local copy. */
GEMESH_API const char *gemesh_model_warnings(uint32_t model);

/* The precision key GE compiles the model's graphs with, as "key=value (level)":
 * level is graph, session or global where the caller set it (graph > session >
 * global), or default for the bridge's ge.exec.precision_mode_v2=fp16; "" for
 * an unknown model. Thread-local copy. */
GEMESH_API const char *gemesh_model_precision(uint32_t model);

/* How many loaded models (this one included) share this model's GE session: 1 when
 * it has its own. Any thread. */
GEMESH_API gemesh_status gemesh_model_session_loads(uint32_t model, uint32_t *loads);

/* Sizes of a loaded model. Any thread; any pointer may be NULL. */
GEMESH_API gemesh_status gemesh_model_counts(uint32_t model, uint32_t *tier_count, uint32_t *stream_count,
                                             uint32_t *input_count, uint32_t *output_count);

/* Input `index` of `tier` as configured (config order), with its byte size. Any thread. */
GEMESH_API gemesh_status gemesh_model_input_info(uint32_t model, uint32_t tier, uint32_t index, gemesh_tensor_info *out);

/* Output `index` of `tier` as GE compiled it (ONNX graph output order). Any thread. */
GEMESH_API gemesh_status gemesh_model_output_info(uint32_t model, uint32_t tier, uint32_t index,
                                                  gemesh_tensor_info *out);

/* Runs one batch of `tier` on `stream` and returns when the outputs are in the
 * caller's buffers. inputs[i] (input_sizes[i] bytes, exactly the tier's input
 * byte_size, config order) are only read; outputs[i] (output_sizes[i] >= the
 * tier's output byte_size) are written. All buffers are borrowed for the call.
 * Calls on different streams may run concurrently; calls on one stream must
 * not overlap. */
GEMESH_API gemesh_status gemesh_model_run(uint32_t model, uint32_t stream, uint32_t tier, const void *const *inputs,
                                          const size_t *input_sizes, uint32_t input_count, void *const *outputs,
                                          const size_t *output_sizes, uint32_t output_count);

/* Waits for the model's runs in flight, then removes its graphs, deletes its
 * session (the last load sharing it does), destroys its streams and frees its buffers; the handle becomes
 * invalid. New runs on the model fail with GEMESH_ERR_STATE from the moment
 * this is called. */
GEMESH_API gemesh_status gemesh_model_destroy(uint32_t model);

#ifdef __cplusplus
}
#endif

#endif /* GEMESH_BRIDGE_H_ */
