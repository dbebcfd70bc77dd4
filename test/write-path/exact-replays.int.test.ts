import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { must } from '../support/lifecycle.js';
import { expectRejected, runningScene } from './support.js';

/*
 * SEMANTICS "Terminal replays": everywhere a replay is compared, a key with value null and a
 * missing key differ, and two objects are equal only with the same key sets (key order aside).
 * Each case below differs from its original only that way, through every replaying mutation.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('a replay that differs only in null against missing keys is CONFLICT', () => {
  it('recordModelStarted: {prompt, temperature: null} replayed as {prompt, tools}', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1', input: { prompt: 'hi', temperature: null } }));
    await expectRejected(scene, 'CONFLICT', () =>
      session.modelStarted('m1', { sequence: '1', input: { prompt: 'hi', tools: ['search'] } }),
    );
  });

  it('recordModelStarted: the same input in another key order is a replay', async () => {
    const { session } = await runningScene(t);
    const first = must(await session.modelStarted('m1', { sequence: '1', input: { prompt: 'hi', temperature: null } }));
    const replay = must(await session.modelStarted('m1', { sequence: '1', input: { temperature: null, prompt: 'hi' } }));
    expect(replay.id).toBe(first.id);
  });

  it('recordModelFinished: output {text, refusal: null} replayed as {text, stop}', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1' }));
    const finish = { sequence: '2', output: { text: 'ok', refusal: null } };
    must(await session.modelFinished('m1', [], finish));
    await expectRejected(scene, 'CONFLICT', () => session.modelFinished('m1', [], { ...finish, output: { text: 'ok', stop: true } }));
    // The same terminal again is a no-op.
    must(await session.modelFinished('m1', [], { ...finish, output: { refusal: null, text: 'ok' } }));
  });

  it('recordModelFinished: a declared tool call whose args {q, page: null} are replayed as {q, limit}', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1' }));
    must(await session.modelFinished('m1', [{ id: 'c1', name: 'search', args: { q: 'x', page: null } }], { sequence: '2' }));
    await expectRejected(scene, 'CONFLICT', () =>
      session.modelFinished('m1', [{ id: 'c1', name: 'search', args: { q: 'x', limit: 3 } }], { sequence: '2' }),
    );
  });

  it('recordToolStarted: {path, force: null} replayed as {path, recursive: true}', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [{ id: 'c1', name: 'rm' }]);
    must(await session.toolStarted('c1', 'rm', { sequence: '3', effectiveInput: { path: '/tmp', force: null } }));
    await expectRejected(scene, 'CONFLICT', () =>
      session.toolStarted('c1', 'rm', { sequence: '3', effectiveInput: { path: '/tmp', recursive: true } }),
    );
  });

  it('recordToolFinished: {content, status, metadata: null} replayed as {content, status, artifact}', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [{ id: 'c1', name: 'read' }]);
    must(await session.toolStarted('c1', 'read', { sequence: '3' }));
    const output = { content: 'text', status: 'success', metadata: null };
    must(await session.toolFinished('c1', output, { sequence: '4' }));
    await expectRejected(scene, 'CONFLICT', () =>
      session.toolFinished('c1', { content: 'text', status: 'success', artifact: { rows: 2 } }, { sequence: '4' }),
    );
    // The runtime may fill in the top-level id and name late: still the same terminal.
    must(await session.toolFinished('c1', { ...output, id: 'c1', name: 'read' }, { sequence: '4' }));
  });

  it('recordToolError: {message, code: null} replayed as {message, retryable: false}', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [{ id: 'c1', name: 'fetch' }]);
    must(await session.toolStarted('c1', 'fetch', { sequence: '3' }));
    must(await session.toolError('c1', { message: 'boom', code: null }, { sequence: '4' }));
    await expectRejected(scene, 'CONFLICT', () =>
      session.toolError('c1', { message: 'boom', retryable: false }, { sequence: '4' }),
    );
    must(await session.toolError('c1', { code: null, message: 'boom' }, { sequence: '4' }));
  });
});
