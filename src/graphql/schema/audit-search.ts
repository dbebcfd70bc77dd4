import { confirmedLive } from '../../domain/audit-reads.js';
import { requirePrincipal } from '../../domain/access.js';
import { MAX_SEARCH_HITS, MIN_SEARCH_TEXT, SNIPPET_CHARS, searchAudits, type AuditHit } from '../../domain/audit-search.js';
import { builder, listCost } from '../builder.js';
import { MAX_SEARCHES_PER_PRINCIPAL, MAX_SEARCHES_PER_REQUEST, withReadSlot } from '../search-limits.js';
import { AuditRef } from './audit.js';
import { AuditKindEnum, AuditStatusEnum } from './enums.js';

const AuditSearchHitRef = builder.objectRef<AuditHit>('AuditSearchHit').implement({
  description: 'An audit a search found, with the thread it belongs to (to open it in its timeline).',
  fields: (t) => ({
    audit: t.field({ type: AuditRef, description: 'The audit found.', resolve: (hit) => hit }),
    threadId: t.exposeID('threadId', { description: 'The thread it belongs to.' }),
    threadTitle: t.exposeString('threadTitle', { nullable: true, description: "That thread's title; null when it has none." }),
    snippet: t.string({
      nullable: true,
      description: `Up to ${SNIPPET_CHARS} characters of the name, input, output or error (as JSON text) from a little before the first match of \`text\`, with "…" where cut; null for a search without text.`,
      resolve: (hit) => hit.snippet ?? null,
    }),
  }),
});

const AuditSearchResultRef = builder.objectRef<{ items: AuditHit[]; hasMore: boolean }>('AuditSearchResult').implement({
  description: 'A page of the audits a search found.',
  fields: (t) => ({
    items: t.field({
      type: [AuditSearchHitRef],
      description: 'Newest first.',
      // Counted by `searchAudits(first)`, which multiplies this whole object.
      complexity: { field: 1, multiplier: 1 },
      resolve: (result) => result.items,
    }),
    hasMore: t.exposeBoolean('hasMore', { description: 'More audits match: pass the last hit\'s audit id as `after`.' }),
  }),
});

const SINCE =
  "Only audits whose start the server recorded at or after this time, to the millisecond: the database's clock when the start was written, the time the hits are ordered by. Not the audit's `startedAt`, which is the worker's own clock as it sent it (a batch sent again after an outage carries the times it happened at). A call that started before it and failed after it is not kept: open the window earlier by the longest call expected. Pass the same `since` and `until` with `after` (docs/debug-ui.md, \"An incident window\").";
const UNTIL = 'Only audits whose start the server recorded before this time (not at it), read as `since`; later than `since`, else BAD_USER_INPUT.';

builder.queryField('searchAudits', (t) =>
  t.field({
    type: AuditSearchResultRef,
    description: `Audits matching every criterion given, newest first, within one thread or across the threads whose audits the caller may read (a superadmin's own threads; any other role is FORBIDDEN, another's thread NOT_FOUND). \`text\` (${MIN_SEARCH_TEXT} to 256 characters, with at least ${MIN_SEARCH_TEXT} letters or digits in a row: the index is built from words) matches any part of the tool or model name, input, output or error, in any case. \`first\` is 1 to ${MAX_SEARCH_HITS}. \`since\` and \`until\` keep the audits whose start the server recorded within that window (the database's clock, the hits' order; not the worker's \`startedAt\`). At most ${MAX_SEARCHES_PER_REQUEST} searches per request and ${MAX_SEARCHES_PER_PRINCIPAL} running at once per principal.`,
    authScopes: { authenticated: true },
    args: {
      text: t.arg.string({
        required: false,
        description: `Text to find in any part of the name, input, output or error, in any case (${MIN_SEARCH_TEXT} to 256 characters, with ${MIN_SEARCH_TEXT} letters or digits in a row).`,
      }),
      name: t.arg.string({ required: false, description: 'Exactly this tool or model name.' }),
      status: t.arg({ type: AuditStatusEnum, required: false, description: 'Only audits with this status.' }),
      kind: t.arg({ type: AuditKindEnum, required: false, description: 'Only model calls (MODEL) or only tool executions (TOOL); both when left out.' }),
      threadId: t.arg.id({ required: false, description: "Only this thread's audits (one of the caller's threads, else NOT_FOUND)." }),
      first: t.arg.int({ defaultValue: 50, description: `How many hits at most (1 to ${MAX_SEARCH_HITS}).` }),
      after: t.arg.id({ required: false, description: "The last hit's audit id of the previous page: read the hits after it." }),
      since: t.arg({ type: 'DateTime', required: false, description: SINCE }),
      until: t.arg({ type: 'DateTime', required: false, description: UNTIL }),
    },
    complexity: ({ first }) => listCost(first, MAX_SEARCH_HITS),
    resolve: async (_root, args, { deps, principal, loaders }) => {
      const caller = requirePrincipal(principal);
      const threadId = args.threadId == null ? null : String(args.threadId);
      const found = await withReadSlot('search', caller.sub, () =>
        searchAudits(deps.db, caller, { ...args, threadId, after: args.after == null ? null : String(args.after) }),
      );
      const result = threadId === null ? found : await confirmedLive(deps.db, threadId, found);
      for (const hit of result.items) loaders.audit.prime(hit.id, hit);
      return result;
    },
  }),
);
