import koffi from 'koffi';

/**
 * GE reads its dump and profiling switches from the process environment when
 * it initialises. A lane is a worker_thread, whose `process.env` is a private
 * copy, so the variables are set with libc's setenv, which the native side
 * sees. Called only before the first GE init of the process.
 */
let setenv: ((name: string, value: string, overwrite: number) => number) | undefined;

export function setNativeEnv(vars: Readonly<Record<string, string>>): void {
  if (Object.keys(vars).length === 0) return;
  setenv ??= koffi.load('libc.so.6').func('int setenv(const char *name, const char *value, int overwrite)') as never;
  for (const [k, v] of Object.entries(vars)) setenv?.(k, v, 0);
}

/** The variables the GE backend sets for `dump_graph` and `profiling`, with the same values. */
export function geDiagnosticsEnv(p: {
  dumpGraph: boolean;
  profiling: 'off' | 'on' | 'dynamic';
}): Record<string, string> {
  const env: Record<string, string> = {};
  if (p.dumpGraph) {
    Object.assign(env, {
      DUMP_GRAPH_PATH: './dump_graph',
      PRINT_MODEL: '1',
      DUMP_GE_GRAPH: '2',
      DUMP_GRAPH_LEVEL: '2',
    });
  }
  if (p.profiling !== 'off') {
    env.PROFILING_MODE = p.profiling === 'dynamic' ? 'dynamic' : 'true';
    env.PROFILING_OPTIONS = JSON.stringify({
      output: './profiling',
      training_trace: 'on',
      task_trace: 'on',
      aicpu: 'on',
      fp_point: '',
      bp_point: '',
      aic_metrics: 'PipeUtilization',
      runtime_api: 'on',
    });
  }
  return env;
}
