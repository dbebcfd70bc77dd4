import { AsyncLocalStorage } from 'node:async_hooks';
import { getOperationAST, GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { jsonBytes } from '../db/json-text.js';

/*
 * Each JSON value a principal writes is bounded (MAX_JSON_BYTES), a list of them is not: one read
 * of a thread's audits could answer hundreds of megabytes. The JSON payloads of one query's
 * answer are counted as they are serialized (the JSON scalar; each by the size of the text it was read
 * from, src/db/json-text.ts); past MAX_ANSWER_PAYLOAD_BYTES the
 * answer is refused whole. Mutations are left alone (their changes
 * are committed; each answers one command's audits), and subscriptions (one change per event).
 */

interface Budget {
  left: number;
  exceeded: boolean;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * The JSON scalar's serialize: `value`, counted against the query's budget. Once it is spent, an
 * empty string stands in (not null: a non-null field would fail, and log, once per item); the
 * answer is then refused whole.
 */
export function countedPayload(value: unknown): unknown {
  const budget = budgets.getStore();
  if (!budget || value == null) return value;
  if (!budget.exceeded) {
    budget.left -= jsonBytes(value);
    budget.exceeded = budget.left < 0;
  }
  return budget.exceeded ? '' : value;
}

export function useAnswerPayloadLimit(maxBytes: number): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== 'query') return;
      const budget: Budget = { left: maxBytes, exceeded: false };
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
