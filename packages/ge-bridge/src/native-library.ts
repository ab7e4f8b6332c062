import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi, { type LibraryHandle } from 'koffi';

/**
 * The bridge library (native/include/gemesh_bridge.h) declared for koffi.
 *
 * Every function is called synchronously. The bridge never calls back into
 * JS, so koffi's deadlock (a sync call waiting on a native thread that calls
 * JS) cannot happen, and a blocking call is exactly what a lane wants: each
 * lane is its own worker_thread that owns one stream and does nothing but run
 * batches. koffi's `.async` would hop to libuv pool threads (about 4 shared by
 * the whole process), which would serialise the lanes on the pool and move the
 * call off the lane's thread. Keep load/run off the main thread: they block
 * for the whole parse/compile or batch.
 */

/** Must equal GEMESH_BRIDGE_API_VERSION of the loaded library. */
export const BRIDGE_API_VERSION = 3;
export const MAX_RANK = 25;

const here = dirname(fileURLToPath(import.meta.url));

/** GEMESH_BRIDGE_LIB, else libgemesh_bridge.so in GEMESH_NATIVE_BUILD_DIR or native/build. */
export function bridgeLibraryPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.GEMESH_BRIDGE_LIB) return resolve(env.GEMESH_BRIDGE_LIB);
  const buildDir = env.GEMESH_NATIVE_BUILD_DIR ?? resolve(here, '../../../native/build');
  return resolve(buildDir, 'libgemesh_bridge.so');
}

function declare(lib: LibraryHandle) {
  // Type names are registered per JS realm; each worker_thread declares its own.
  const Option = koffi.struct('gemesh_option', { key: 'const char *', value: 'const char *' });
  koffi.struct('gemesh_model_config', {
    model_path: 'const char *',
    device_id: 'int32_t',
    stream_count: 'uint32_t',
    tier_count: 'uint32_t',
    input_count: 'uint32_t',
    input_names: 'const char **',
    input_dtypes: 'const int32_t *',
    input_ranks: 'const uint32_t *',
    input_dims: 'const int64_t *',
    session_options: koffi.pointer(Option),
    session_option_count: 'size_t',
    graph_options: koffi.pointer(Option),
    graph_option_count: 'size_t',
    share_key: 'const char *',
  });
  koffi.struct('gemesh_tensor_info', {
    dtype: 'int32_t',
    rank: 'uint32_t',
    dims: koffi.array('int64_t', MAX_RANK),
    byte_size: 'uint64_t',
  });
  return {
    backend: lib.func('const char *gemesh_backend(void)'),
    lastErrorMessage: lib.func('const char *gemesh_last_error_message(void)'),
    lastErrorNativeCode: lib.func('int64_t gemesh_last_error_native_code(void)'),
    init: lib.func('int gemesh_init(const gemesh_option *options, size_t option_count)'),
    initWarnings: lib.func('const char *gemesh_init_warnings(void)'),
    finalize: lib.func('int gemesh_finalize(void)'),
    deviceCount: lib.func('int gemesh_device_count(_Out_ uint32_t *count)'),
    deviceMemory: lib.func(
      'int gemesh_device_memory(int32_t device_id, _Out_ uint64_t *free_bytes, _Out_ uint64_t *total_bytes)',
    ),
    modelLoad: lib.func('int gemesh_model_load(const gemesh_model_config *config, _Out_ uint32_t *model_out)'),
    modelWarnings: lib.func('const char *gemesh_model_warnings(uint32_t model)'),
    modelPrecision: lib.func('const char *gemesh_model_precision(uint32_t model)'),
    modelSessionLoads: lib.func('int gemesh_model_session_loads(uint32_t model, _Out_ uint32_t *loads)'),
    modelCounts: lib.func(
      'int gemesh_model_counts(uint32_t model, _Out_ uint32_t *tiers, _Out_ uint32_t *streams, _Out_ uint32_t *inputs, _Out_ uint32_t *outputs)',
    ),
    modelInputInfo: lib.func(
      'int gemesh_model_input_info(uint32_t model, uint32_t tier, uint32_t index, _Out_ gemesh_tensor_info *out)',
    ),
    modelOutputInfo: lib.func(
      'int gemesh_model_output_info(uint32_t model, uint32_t tier, uint32_t index, _Out_ gemesh_tensor_info *out)',
    ),
    modelRun: lib.func(
      'int gemesh_model_run(uint32_t model, uint32_t stream, uint32_t tier, const void **inputs, const size_t *input_sizes, uint32_t input_count, void **outputs, const size_t *output_sizes, uint32_t output_count)',
    ),
    modelDestroy: lib.func('int gemesh_model_destroy(uint32_t model)'),
  };
}

export type NativeBridge = ReturnType<typeof declare> & { apiVersion: () => number; path: string };

let loaded: NativeBridge | undefined;

/** Loads the library once per thread and checks its API version. */
export function nativeBridge(): NativeBridge {
  if (loaded) return loaded;
  const path = bridgeLibraryPath();
  if (!existsSync(path)) {
    throw new Error(
      `GE bridge library not found at ${path}: build it with native/scripts/build.sh or set GEMESH_BRIDGE_LIB`,
    );
  }
  const lib = koffi.load(path);
  // The version first: a library of another version may lack functions declared below.
  const apiVersion = lib.func('uint32_t gemesh_api_version(void)') as () => number;
  const version = apiVersion();
  if (version !== BRIDGE_API_VERSION) {
    throw new Error(
      `GE bridge at ${path} has API version ${version}, this binding needs ${BRIDGE_API_VERSION}: rebuild native/`,
    );
  }
  loaded = { ...declare(lib), apiVersion, path };
  return loaded;
}
