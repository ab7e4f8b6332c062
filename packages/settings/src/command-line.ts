import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A command line the user got wrong: shown as one line, never as a stack trace. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * parseArgs for a CLI: `--help` (and `-h`) prints `usage` and exits 0; an
 * unknown option, a missing value or a positional argument prints one line
 * (`<command>: <what>; --help lists the options`) and exits 2.
 */
export function parseCommandLine<O extends Options>(
  command: string,
  usage: string,
  options: O,
  argv: string[] = process.argv.slice(2),
) {
  let parsed: ReturnType<typeof parseArgs<{ options: O; strict: true; allowPositionals: false }>>;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    exitWithUsageError(command, (err as Error).message);
  }
  const values = parsed.values as Record<string, unknown>;
  if (values.help === true) {
    process.stdout.write(usage.endsWith('\n') ? usage : `${usage}\n`);
    process.exit(0);
  }
  return parsed.values;
}

/** One line on stderr (the first line of `message`), then exit 2. */
export function exitWithUsageError(command: string, message: string): never {
  const line = message.split('\n')[0]?.replace(/\. To specify a positional argument.*$/, '') ?? message;
  process.stderr.write(`${command}: ${line}; --help lists the options\n`);
  process.exit(2);
}

/**
 * Runs `main`; a UsageError thrown from it becomes one line and exit 2 (other
 * errors keep their stack: they are bugs or faults, not usage).
 */
export function withUsageErrors<T>(command: string, main: () => T): T {
  try {
    return main();
  } catch (err) {
    if (err instanceof UsageError) exitWithUsageError(command, err.message);
    throw err;
  }
}
