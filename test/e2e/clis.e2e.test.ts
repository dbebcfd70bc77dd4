// The CLIs a user runs from the README: `--help` answers with usage (no stack trace), a token can
// be captured without npm's banner, and `npm start`'s install step installs only what changed.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { E2E_JWT_SECRET } from './support/server.js';

const REPO_ROOT = join(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'audit-clis-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a command line with bash in the repository, as a user types it. */
function sh(command: string, env: Record<string, string> = {}) {
  const result = spawnSync('bash', ['-c', command], { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the CLIs answer --help', () => {
  it.each([
    ['npm run -s token -- --help', /^usage: npm run -s token -- --sub <id> --role/],
    ['npm run -s simulate -- --help', /^usage: npm run simulate --/],
  ])('%s', (command, usage) => {
    const { code, stdout, stderr } = sh(command);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(usage);
    expect(stdout + stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('a wrong flag: what is wrong, the usage, exit 2', () => {
    const { code, stderr } = sh('npm run -s token -- --subject alice');
    expect(code).toBe(2);
    expect(stderr).toMatch(/Unknown option '--subject'/);
    expect(stderr).toMatch(/usage:/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('the simulator names --owner-token, so its threads can be read with a token you hold', () => {
    expect(sh('npm run -s simulate -- --help').stdout).toMatch(/--owner-token/);
  });
});

describe('the token tool refuses what it cannot mint, in one line', () => {
  it.each([
    ['--sub alice --role admn', /^unknown role "admn": use one of user, admin, superadmin, worker/],
    ['--role user', /^--sub is required/],
    ['--sub alice --expires 0s', /^--expires must be a span in the future such as 1h or 30d, got "0s"/],
    ['--sub alice --expires=-1h', /^--expires must be a span in the future such as 1h or 30d, got "-1h"/],
    ['--sub alice --expires soon', /^--expires must be a span in the future such as 1h or 30d, got "soon"/],
    // A token the server would refuse: no date holds its expiry.
    ['--sub alice --expires 99999999d', /^--expires must end before the year 5000, got "99999999d"/],
  ])('npm run -s token -- %s', (args, message) => {
    const { code, stdout, stderr } = sh(`npm run -s token -- ${args}`, { AUTH_JWT_SECRET: E2E_JWT_SECRET });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('capturing a token', () => {
  it('TOKEN=$(npm run -s token …) holds the token alone', () => {
    const { code, stdout, stderr } = sh('TOKEN=$(npm run -s token -- --sub alice --role superadmin --expires 1h) && printf %s "$TOKEN"', {
      AUTH_JWT_SECRET: E2E_JWT_SECRET,
    });
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  });
});

describe('the token tool and the simulator never make a JWT secret of their own', () => {
  // A secret made here would sign tokens the server (with its own secret) refuses.
  const noSecret = { AUTH_JWT_SECRET: '', AUDIT_OWNER_TOKEN: '', AUDIT_WORKER_TOKEN: '' };
  const commands = ['npm run -s token -- --sub alice --role superadmin', 'npm run -s simulate -- --scenario normal'];

  it.each(commands)('%s, with no secret in DATA_DIR: one line saying where it looked and what to do, nothing written', (command) => {
    const dataDir = join(scratch, 'no-server-here');
    const { code, stdout, stderr } = sh(command, { ...noSecret, DATA_DIR: dataDir });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(join(dataDir, 'jwt-secret'));
    expect(stderr).toMatch(/start the server first/i);
    expect(stderr).toMatch(/DATA_DIR/);
    expect(existsSync(dataDir)).toBe(false);
  });

  it.each(commands)('%s, with DATA_DIR=:memory:: the in-memory server\'s secret cannot be read, set AUTH_JWT_SECRET for both', (command) => {
    const stray = join(REPO_ROOT, ':memory:');
    const there = existsSync(stray);
    try {
      const { code, stdout, stderr } = sh(command, { ...noSecret, DATA_DIR: ':memory:' });
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/AUTH_JWT_SECRET/);
      expect(existsSync(stray)).toBe(there);
    } finally {
      if (!there) rmSync(stray, { recursive: true, force: true });
    }
  });
});

describe("npm start's install step (scripts/install-if-changed.mjs)", () => {
  // A copy of what the step reads, with `npm` and the page build replaced by stubs that log their calls.
  const project = join(scratch, 'project');
  const log = join(scratch, 'calls.log');
  mkdirSync(join(project, 'scripts'), { recursive: true });
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  mkdirSync(join(project, 'src', 'generated', 'prisma'), { recursive: true });
  mkdirSync(join(project, 'web', 'dist'), { recursive: true });
  writeFileSync(join(project, 'web', 'dist', 'app.js'), '');
  for (const file of ['package.json', 'package-lock.json', 'prisma/schema.prisma', 'scripts/install-if-changed.mjs']) cpSync(join(REPO_ROOT, file), join(project, file));
  cpSync(join(REPO_ROOT, 'web', 'src'), join(project, 'web', 'src'), { recursive: true });
  writeFileSync(join(project, 'scripts', 'build-web.mjs'), `import { appendFileSync } from 'node:fs'; appendFileSync(${JSON.stringify(log)}, 'build-web\\n');\n`);
  const bin = join(scratch, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\necho "npm $*" >> ${JSON.stringify(log)}\n`);
  chmodSync(join(bin, 'npm'), 0o755);

  const step = () => {
    writeFileSync(log, '');
    const output = execFileSync(process.execPath, ['scripts/install-if-changed.mjs'], {
      cwd: project,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { output, calls: readFileSync(log, 'utf8').trim() };
  };

  it('installs on the first start, saying it is the first, then does nothing and prints nothing while nothing changed', () => {
    const first = step();
    expect(first.calls).toBe('npm install --no-audit --no-fund --foreground-scripts');
    expect(first.output).toMatch(/^First start: installing the dependencies/);
    expect(first.output).not.toMatch(/changed/);
    expect(step()).toEqual({ output: '', calls: '' });
    expect(step()).toEqual({ output: '', calls: '' });
  });

  it('rebuilds the page alone when only its sources changed', () => {
    step();
    appendFileSync(join(project, 'web', 'src', 'index.html'), '\n');
    expect(step().calls).toBe('build-web');
    expect(step().calls).toBe('');
  });

  it('installs again when the lock file changed', () => {
    step();
    appendFileSync(join(project, 'package-lock.json'), '\n');
    const again = step();
    expect(again.calls).toBe('npm install --no-audit --no-fund --foreground-scripts');
    expect(again.output).toMatch(/changed since the last install/);
    expect(step().calls).toBe('');
  });

  it("counts an install made otherwise (npm ci): its postinstall records it, and the next start installs nothing", () => {
    rmSync(join(project, 'node_modules', '.audit-server-install.json'), { force: true });
    const postinstall = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts.postinstall as string;
    const recording = / && (node scripts\/install-if-changed\.mjs --record)$/.exec(postinstall);
    expect(recording, postinstall).not.toBeNull();
    execFileSync(process.execPath, ['scripts/install-if-changed.mjs', '--record'], { cwd: project, stdio: 'ignore' });
    expect(step()).toEqual({ output: '', calls: '' });
  });
});
