import { describe, expect, it } from 'vitest';
import ts from 'typescript';
import { AuditClient, isAuditApiError, type RunLease } from '@agent-audit/client';

// The public types as a runtime author's code meets them; `npm run typecheck` compiles this file,
// so each `@ts-expect-error` below fails the build when the type stops refusing that value.

interface WeatherReply {
  city: string;
  tempC: number;
  note?: string;
}

/** Compiled, never run. */
export async function typedCalls(worker: AuditClient, lease: RunLease, reply: WeatherReply, args: Record<string, unknown>, calls: { id: string; name: string; args: unknown }[]) {
  // Interfaces, Record<string, unknown> and unknown are payloads (converted by toJson).
  await worker.recordToolFinished({ lease, toolCallId: 'c', output: { type: 'tool', status: 'success', content: reply } });
  await worker.recordToolStarted({ lease, toolCallId: 'c', name: 't', effectiveInput: args, sequence: 1 });
  await worker.recordModelFinished({ lease, operationId: 'o', status: 'COMPLETED', output: reply, toolCalls: calls });
  await worker.finishRun({ lease, status: 'FAILED', error: reply as unknown });
  // @ts-expect-error a model call ends COMPLETED or FAILED only
  await worker.recordModelFinished({ lease, operationId: 'o', status: 'RUNNING' });
  try {
    await worker.claimRun('r');
  } catch (error) {
    // @ts-expect-error not a code of the contract
    if (isAuditApiError(error, 'LEASE_LOSTT')) return;
    if (isAuditApiError(error, 'LEASE_LOST', 'TRANSPORT_ERROR')) return;
  }
}

describe('the package entry', () => {
  it('resolves for TypeScript under every module resolution, node10 included', () => {
    const from = new URL(import.meta.url).pathname;
    for (const moduleResolution of [ts.ModuleResolutionKind.Node10, ts.ModuleResolutionKind.Node16, ts.ModuleResolutionKind.Bundler]) {
      const options = { moduleResolution, module: moduleResolution === ts.ModuleResolutionKind.Bundler ? ts.ModuleKind.ESNext : ts.ModuleKind.Node16 };
      const { resolvedModule } = ts.resolveModuleName('@agent-audit/client', from, options, ts.sys);
      expect(resolvedModule?.resolvedFileName, `moduleResolution ${ts.ModuleResolutionKind[moduleResolution]}`).toMatch(/client\/dist\/index\.d\.ts$/);
    }
  });
});
