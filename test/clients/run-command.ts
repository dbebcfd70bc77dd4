import { spawn } from 'node:child_process';

/** Runs a command to its end; rejects if it cannot start (python3 missing) or outlives `timeoutMs`. */
export function run(command: string, args: string[], options: { cwd: string; env?: Record<string, string>; timeoutMs?: number }) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      // No __pycache__ left in the work tree; no pip version check over the network.
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish in ${options.timeoutMs} ms:\n${output}`));
    }, options.timeoutMs ?? 240_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${command} could not start (${error.message}): the Python client's tests need python3 on PATH`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
