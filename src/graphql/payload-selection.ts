import type { GraphQLResolveInfo } from 'graphql';
import type { Payload } from '../domain/audit-reads.js';
import { fieldsOf } from './selections.js';

/** Each audit field that shows a payload, and the payload (a tool's effective input is its audit's input). */
const PAYLOAD_OF_FIELD: Readonly<Record<string, Payload>> = { input: 'input', effectiveInput: 'input', output: 'output', error: 'error' };

/**
 * The payloads the audits under `path` (field names below the resolved field, e.g. `items`)
 * are asked for: a read leaves the others out, and never reads those large values from TOAST
 * for a page that shows sizes only. A payload a nested link asks for (`declaredBy { input }`)
 * is loaded there (loaders.ts), so this looks at the audits' own fields only.
 */
export function selectedPayloads(info: GraphQLResolveInfo, ...path: string[]): Set<Payload> {
  let fields = info.fieldNodes;
  for (const name of path) fields = fields.flatMap((field) => fieldsOf(field.selectionSet, info)).filter((field) => field.name.value === name);
  const payloads = new Set<Payload>();
  for (const field of fields.flatMap((node) => fieldsOf(node.selectionSet, info))) {
    const payload = PAYLOAD_OF_FIELD[field.name.value];
    if (payload) payloads.add(payload);
  }
  return payloads;
}
