import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * A CLI's flags: `--help` prints `usage` and exits 0; an unknown flag or a missing value prints
 * what is wrong and `usage`, and exits 2. Never a stack trace.
 */
export function parseCliArgs<O extends Options>(options: O, usage: string) {
  let parsed;
  try {
    parsed = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true });
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n\n${usage}`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed.values as ReturnType<typeof parseArgs<{ options: O }>>['values'];
}
