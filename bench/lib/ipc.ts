import type { ChildProcess } from 'node:child_process';

/** Request/response over a child's IPC channel: every request carries an id the answer echoes. */
export function ipcClient(child: ChildProcess) {
  const pending = new Map<number, { resolve: (body: any) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let exited = false;
  child.on('message', (message: { id: number; body: unknown }) => {
    pending.get(message.id)?.resolve(message.body);
    pending.delete(message.id);
  });
  child.once('exit', (code) => {
    exited = true;
    for (const { reject } of pending.values()) reject(new Error(`child process exited (${code}) before answering`));
    pending.clear();
  });
  return <T>(request: Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      if (exited) return reject(new Error('child process has exited'));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ ...request, id });
    });
}
