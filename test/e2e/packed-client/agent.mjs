// A small agent run as a user of the published package would write it: it imports nothing but
// @agent-audit/client. The test copies it into a scratch folder where only the packed tarball
// is installed. AUDIT_URL, AUDIT_WORKER_TOKEN and AUDIT_RUN_ID come from the environment.
import { AuditClient, LeaseKeeper, SequenceCounter } from '@agent-audit/client';

const worker = new AuditClient({ url: process.env.AUDIT_URL, token: process.env.AUDIT_WORKER_TOKEN });
const lease = await worker.claimRun(process.env.AUDIT_RUN_ID, 30);
const keeper = new LeaseKeeper(worker, lease, { leaseSeconds: 30 });
const sequence = new SequenceCounter(1);

const call = { id: 'call_packed_1', name: 'get_weather', args: { city: 'Paris' } };
await worker.recordModelStarted({ lease: keeper.lease, operationId: 'model-1', sequence: sequence.next(), model: 'packed-model', input: { messages: [{ role: 'user', content: 'Weather in Paris?' }] } });
await worker.recordModelFinished({ lease: keeper.lease, operationId: 'model-1', status: 'COMPLETED', output: { role: 'assistant', content: '' }, toolCalls: [call], sequence: sequence.next() });
await worker.recordToolStarted({ lease: keeper.lease, toolCallId: call.id, name: call.name, effectiveInput: { ...call.args, units: 'metric' }, sequence: sequence.next() });
await worker.recordToolFinished({ lease: keeper.lease, toolCallId: call.id, output: { type: 'tool', tool_call_id: call.id, status: 'success', content: 'Sunny, 21 °C' }, sequence: sequence.next() });
keeper.stop();
const run = await worker.finishRun({ lease: keeper.lease, status: 'COMPLETED' });
console.log(JSON.stringify({ status: run.status }));
