// One whole agent run, as the bench drives it: the same steps and payloads for the server (over
// GraphQL) and for the write floor (write-floor.ts).

export interface ClockReading {
  clockId: string;
  nanos: bigint;
}

interface Observed {
  sequence: bigint;
  /** Milliseconds on the run's monotonic clock. */
  clockMs: number;
}

export type Step =
  | { op: 'claimRun'; leaseSeconds: number }
  | ({ op: 'recordModelStarted'; operationId: string; model: string; input: unknown } & Observed)
  | ({ op: 'recordModelFinished'; operationId: string; output: unknown; usage: unknown; toolCalls: DeclaredToolCall[] } & Observed)
  | ({ op: 'recordToolStarted'; toolCallId: string; name: string; effectiveInput: Record<string, unknown> } & Observed)
  | ({ op: 'recordToolFinished'; toolCallId: string; output: Record<string, unknown> } & Observed)
  | { op: 'finishRun'; status: 'COMPLETED' };

export interface DeclaredToolCall {
  id: string;
  name: string;
  args: unknown;
}

export type LifecycleOp = Step['op'];
export const LIFECYCLE_OPS: LifecycleOp[] = [
  'claimRun',
  'recordModelStarted',
  'recordModelFinished',
  'recordToolStarted',
  'recordToolFinished',
  'finishRun',
];

export const clockReading = (ms: number, clockId: string): ClockReading => ({ clockId, nanos: BigInt(ms) * 1_000_000n });

const MODEL = 'bench-model-1';
const question = 'What changed in the quarterly numbers, and which regions drove it? Cite the sources you used.';

const toolOutput = (toolCallId: string, name: string, text: string) => ({
  content: text,
  status: 'success',
  id: `msg-${toolCallId}`,
  name,
});

/**
 * claimRun, a model call declaring two tools, both tools started and finished, a second model
 * call, finishRun: ten lifecycle events. `tools` widens the first model call (fan-out uses it).
 */
export function runScript(tools = 2, toolCallPrefix = 'call'): Step[] {
  const declared: DeclaredToolCall[] = Array.from({ length: tools }, (_, index) => ({
    id: `${toolCallPrefix}-${index + 1}`,
    name: index % 2 === 0 ? 'search' : 'fetch_page',
    args: index % 2 === 0 ? { query: `quarterly revenue by region ${index}` } : { url: `https://example.com/report/${index}` },
  }));
  let sequence = 0n;
  let clock = 0;
  const next = (ms: number) => ({ sequence: ++sequence, clockMs: (clock += ms) });
  const steps: Step[] = [
    { op: 'claimRun', leaseSeconds: 120 },
    { op: 'recordModelStarted', operationId: 'model-1', model: MODEL, input: { messages: [{ role: 'user', content: question }] }, ...next(0) },
    {
      op: 'recordModelFinished',
      operationId: 'model-1',
      output: { role: 'assistant', content: '', tool_calls: declared.map((call) => ({ id: call.id, name: call.name })) },
      usage: { input_tokens: 412, output_tokens: 57 },
      toolCalls: declared,
      ...next(850),
    },
  ];
  for (const call of declared) {
    steps.push({ op: 'recordToolStarted', toolCallId: call.id, name: call.name, effectiveInput: call.args as Record<string, unknown>, ...next(2) });
    steps.push({
      op: 'recordToolFinished',
      toolCallId: call.id,
      output: toolOutput(call.id, call.name, `Result of ${call.name}: revenue grew 4.2% driven by EMEA (+7.9%) and APAC (+5.1%).`),
      ...next(120),
    });
  }
  steps.push(
    { op: 'recordModelStarted', operationId: 'model-2', model: MODEL, input: { messages: [{ role: 'user', content: question }, { role: 'tool', content: '…' }] }, ...next(3) },
    {
      op: 'recordModelFinished',
      operationId: 'model-2',
      output: { role: 'assistant', content: 'Revenue grew 4.2%, mostly from EMEA and APAC.' },
      usage: { input_tokens: 731, output_tokens: 64 },
      toolCalls: [],
      ...next(900),
    },
    { op: 'finishRun', status: 'COMPLETED' },
  );
  return steps;
}
