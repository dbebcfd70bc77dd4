import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Whether a process with this id runs (one of another user's answers EPERM: it runs). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `dataDir` is marked by a process that runs: `holder`. */
export class DataDirInUse extends Error {
  constructor(
    dataDir: string,
    readonly holder: number,
    mark: string,
  ) {
    super(`DATA_DIR ${dataDir} is in use by another server (process ${holder}): stop it, or give this server another DATA_DIR (if no server runs there, remove ${mark})`);
  }
}

/**
 * Marks `dataDir` as this process's: PGlite's files are one process's, and two servers on one
 * directory would each keep a copy of their own, one's writes lost at the next start. A mark left
 * by a process that no longer runs (killed, or the machine restarted) is taken over. Returns the
 * release, which removes the mark.
 */
export function lockDataDir(dataDir: string): () => void {
  const mark = join(dataDir, 'server.pid');
  for (;;) {
    try {
      writeFileSync(mark, String(process.pid), { flag: 'wx' });
      return () => {
        if (readFileSync(mark, 'utf8') === String(process.pid)) rmSync(mark, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(mark, 'utf8'));
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && running(holder)) {
      throw new DataDirInUse(dataDir, holder, mark);
    }
    rmSync(mark, { force: true });
  }
}
