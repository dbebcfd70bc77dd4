import { AsyncLocalStorage } from 'node:async_hooks';
import { getOperationAST, GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { jsonBytes } from '../db/json-text.js';

/*
 * Each JSON value a principal writes is bounded (MAX_JSON_BYTES), a list of them is not: one read
 * of a thread's audits could answer hundreds of megabytes. The JSON payloads of one query's
 * answer are bounded by MAX_ANSWER_PAYLOAD_BYTES; past it the answer is refused whole. Mutations
 * are left alone (their changes are committed; each answers one command's audits), and
 * subscriptions (one change per event).
 *
 * A read charges each payload's size (stored beside it, or measured by the database) before it
 * loads the payload (chargedPayload), so a refused answer has loaded at most the budget, however
 * many items, aliases or nested links asked for more. Every JSON value is also counted as it is
 * serialized (the JSON scalar; each by the size of the text it was read from, src/db/json-text.ts):
 * what no read charged (the errors a toolActivity view reads with its audits) is bounded there.
 */

interface Budget {
  /** Bytes charged by payloads' sizes before they were loaded. */
  charged: number;
  /** Bytes of the JSON values serialized so far. */
  serialized: number;
  max: number;
  exceeded: boolean;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * A payload of `bytes` (its JSON text's; null: absent) loaded by `load` once the answer's budget
 * has room for it; null, not loaded, once it has not (the answer is then refused whole).
 */
export async function chargedPayload<Value>(bytes: number | null | undefined, load: () => Promise<Value>): Promise<Value | null> {
  if (bytes == null) return null;
  const budget = budgets.getStore();
  if (budget && !budget.exceeded) {
    budget.charged += bytes;
    budget.exceeded = budget.charged > budget.max;
  }
  return budget?.exceeded ? null : load();
}

/**
 * A payload field's value: the item's `own` when it holds it (a mutation's result, a change), else
 * (reads leave payloads out) its `size` charged to the answer, then the value loaded.
 */
export async function payloadField<Value>(
  own: Value | undefined,
  size: () => number | null | undefined | Promise<number | null | undefined>,
  load: () => Promise<Value>,
): Promise<Value | null> {
  return own !== undefined ? own : chargedPayload(await size(), load);
}

/**
 * The JSON scalar's serialize: `value`, counted against the query's budget. Once it is spent, an
 * empty string stands in (not null: a non-null field would fail, and log, once per item); the
 * answer is then refused whole.
 */
export function countedPayload(value: unknown): unknown {
  const budget = budgets.getStore();
  if (!budget || value == null) return value;
  if (!budget.exceeded) {
    budget.serialized += jsonBytes(value);
    budget.exceeded = budget.serialized > budget.max;
  }
  return budget.exceeded ? '' : value;
}

export function useAnswerPayloadLimit(maxBytes: number): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== 'query') return;
      const budget: Budget = { charged: 0, serialized: 0, max: maxBytes, exceeded: false };
      setExecuteFn((executeArgs) => budgets.run(budget, () => executeFn(executeArgs)));
      return {
        onExecuteDone({ setResult }) {
          if (!budget.exceeded) return;
          setResult({
            errors: [
              new GraphQLError(
                `The answer's JSON payloads exceed ${maxBytes} bytes (MAX_ANSWER_PAYLOAD_BYTES): ask for fewer items, or read large payloads one audit at a time (audit(id); the *Bytes fields say which are large)`,
                { extensions: { code: 'BAD_USER_INPUT', limit: 'ANSWER_PAYLOAD_BYTES', max: maxBytes } },
              ),
            ],
          });
        },
      };
    },
  };
}
