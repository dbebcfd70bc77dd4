// A Vercel AI SDK agent recorded by the adapter in one line. Its model follows a script (the
// SDK's own mock model, so the example runs without an API key); put your provider's model in
// its place, e.g. `openai('gpt-4o-mini')` from @ai-sdk/openai.
//
//   AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/ai-sdk/agent.ts
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql.
import { AuditClient } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';

// The tokens, or one line saying which to set (rather than a request refused for want of one).
for (const [name, role] of Object.entries({ AUDIT_OWNER_TOKEN: 'superadmin', AUDIT_WORKER_TOKEN: 'worker' })) {
  if (process.env[name]) continue;
  console.error(`${name} is not set: give it a ${role} token (\`npm start\` prints one on its first start; \`npm run -s token -- --sub me --role ${role}\` mints more)`);
  process.exit(1);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const owner = new AuditClient({ url, token: process.env.AUDIT_OWNER_TOKEN! });
const worker = new AuditClient({ url, token: process.env.AUDIT_WORKER_TOKEN! });

const prompt = 'What is the weather in Paris and in Oslo?';
const thread = await owner.createThread({ title: 'AI SDK example' });
await owner.appendMessage({ threadId: thread.id, role: 'USER', content: prompt });
const { id: runId } = await owner.createRun({ threadId: thread.id });

// The script: first both tool calls at once, then the answer.
const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const replies = [
  {
    content: [
      { type: 'tool-call' as const, toolCallId: 'call_paris', toolName: 'get_weather', input: JSON.stringify({ city: 'Paris' }) },
      { type: 'tool-call' as const, toolCallId: 'call_oslo', toolName: 'get_weather', input: JSON.stringify({ city: 'Oslo', units: 'imperial' }) },
    ],
    finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
    usage,
    warnings: [],
  },
  { content: [{ type: 'text' as const, text: 'Sunny in both.' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] },
];
const model = new MockLanguageModelV3({ modelId: 'scripted-model', doGenerate: replies });

const tools = {
  get_weather: tool({
    description: 'The current weather in a city.',
    inputSchema: z.object({ city: z.string(), units: z.enum(['metric', 'imperial']).default('metric') }),
    execute: async ({ city, units }) => `Sunny, ${units === 'metric' ? '21 °C' : '70 °F'} in ${city}`,
  }),
};

// The one line: claims the run, records every model call and tool, ends the run.
// #region one-line
const { result, status } = await new AiSdkAudit(worker).generateText(runId, { model, tools, prompt, stopWhen: stepCountIs(5) });
// #endregion one-line
console.log(`${result.text} (run ${status})`);

const { items } = await owner.threadAudits(thread.id);
for (const item of items) console.log(item.__typename === 'ModelAudit' ? `model ${item.model} ${item.status}` : `tool  ${item.name} ${item.status}`);
console.log(JSON.stringify({ threadId: thread.id, runId }));
