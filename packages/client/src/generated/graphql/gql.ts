/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  fragment ToolCallFields on ToolCall {\n    id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs\n  }": typeof types.ToolCallFieldsFragmentDoc,
    "\n  fragment AuditFields on Audit {\n    __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs\n  }": typeof types.AuditFieldsFragmentDoc,
    "\n  fragment ModelAuditFields on ModelAudit {\n    ...AuditFields\n    model input output error usage\n    toolCalls { ...ToolCallFields }\n  }": typeof types.ModelAuditFieldsFragmentDoc,
    "\n  fragment ToolAuditFields on ToolAudit {\n    ...AuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n  }": typeof types.ToolAuditFieldsFragmentDoc,
    "\n  fragment RunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error\n  }": typeof types.RunFieldsFragmentDoc,
    "\n  fragment RunLeaseFields on RunLease { runId owner epoch expiresAt grantedAt }": typeof types.RunLeaseFieldsFragmentDoc,
    "\n  fragment ThreadFields on Thread { id title ownerId createdAt }": typeof types.ThreadFieldsFragmentDoc,
    "\n  fragment MessageFields on Message { id role content createdAt }": typeof types.MessageFieldsFragmentDoc,
    "\n    mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }": typeof types.CreateThreadDocument,
    "\n    mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }": typeof types.AppendMessageDocument,
    "\n    mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }": typeof types.CreateRunDocument,
    "\n    mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }": typeof types.CancelRunDocument,
    "\n    mutation DeleteThread($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }": typeof types.DeleteThreadDocument,
    "\n    mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }": typeof types.ClaimRunDocument,
    "\n    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n      renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields }\n    }": typeof types.RenewLeaseDocument,
    "\n    mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }": typeof types.RecordModelStartedDocument,
    "\n    mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }": typeof types.RecordModelFinishedDocument,
    "\n    mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }": typeof types.RecordToolStartedDocument,
    "\n    mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }": typeof types.RecordToolFinishedDocument,
    "\n    mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }": typeof types.RecordToolErrorDocument,
    "\n    mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }": typeof types.FinishRunDocument,
    "\n    mutation RecordEvents($events: [LifecycleEventInput!]!) {\n      recordEvents(events: $events) {\n        index\n        audit { ... on ModelAudit { ...ModelAuditFields } ... on ToolAudit { ...ToolAuditFields } }\n        run { ...RunFields }\n        lease { ...RunLeaseFields }\n        error { code message runStatus }\n      }\n    }": typeof types.RecordEventsDocument,
    "\n    query ThreadAudits($threadId: ID!, $limit: Int) {\n      threadAudits(threadId: $threadId, limit: $limit) {\n        threadId\n        cursor\n        truncated\n        items {\n          ... on ModelAudit { ...ModelAuditFields }\n          ... on ToolAudit {\n            ...ToolAuditFields\n            toolCall { ...ToolCallFields }\n            declaredBy { id operationId }\n          }\n        }\n      }\n    }": typeof types.ThreadAuditsDocument,
    "\n    query Run($id: ID!) {\n      run(id: $id) {\n        ...RunFields\n        thread { id }\n        resumedFrom { id }\n        toolCalls { ...ToolCallFields }\n      }\n    }": typeof types.RunDocument,
};
const documents: Documents = {
    "\n  fragment ToolCallFields on ToolCall {\n    id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs\n  }": types.ToolCallFieldsFragmentDoc,
    "\n  fragment AuditFields on Audit {\n    __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs\n  }": types.AuditFieldsFragmentDoc,
    "\n  fragment ModelAuditFields on ModelAudit {\n    ...AuditFields\n    model input output error usage\n    toolCalls { ...ToolCallFields }\n  }": types.ModelAuditFieldsFragmentDoc,
    "\n  fragment ToolAuditFields on ToolAudit {\n    ...AuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n  }": types.ToolAuditFieldsFragmentDoc,
    "\n  fragment RunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error\n  }": types.RunFieldsFragmentDoc,
    "\n  fragment RunLeaseFields on RunLease { runId owner epoch expiresAt grantedAt }": types.RunLeaseFieldsFragmentDoc,
    "\n  fragment ThreadFields on Thread { id title ownerId createdAt }": types.ThreadFieldsFragmentDoc,
    "\n  fragment MessageFields on Message { id role content createdAt }": types.MessageFieldsFragmentDoc,
    "\n    mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }": types.CreateThreadDocument,
    "\n    mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }": types.AppendMessageDocument,
    "\n    mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }": types.CreateRunDocument,
    "\n    mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }": types.CancelRunDocument,
    "\n    mutation DeleteThread($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }": types.DeleteThreadDocument,
    "\n    mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }": types.ClaimRunDocument,
    "\n    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n      renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields }\n    }": types.RenewLeaseDocument,
    "\n    mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }": types.RecordModelStartedDocument,
    "\n    mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }": types.RecordModelFinishedDocument,
    "\n    mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }": types.RecordToolStartedDocument,
    "\n    mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }": types.RecordToolFinishedDocument,
    "\n    mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }": types.RecordToolErrorDocument,
    "\n    mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }": types.FinishRunDocument,
    "\n    mutation RecordEvents($events: [LifecycleEventInput!]!) {\n      recordEvents(events: $events) {\n        index\n        audit { ... on ModelAudit { ...ModelAuditFields } ... on ToolAudit { ...ToolAuditFields } }\n        run { ...RunFields }\n        lease { ...RunLeaseFields }\n        error { code message runStatus }\n      }\n    }": types.RecordEventsDocument,
    "\n    query ThreadAudits($threadId: ID!, $limit: Int) {\n      threadAudits(threadId: $threadId, limit: $limit) {\n        threadId\n        cursor\n        truncated\n        items {\n          ... on ModelAudit { ...ModelAuditFields }\n          ... on ToolAudit {\n            ...ToolAuditFields\n            toolCall { ...ToolCallFields }\n            declaredBy { id operationId }\n          }\n        }\n      }\n    }": types.ThreadAuditsDocument,
    "\n    query Run($id: ID!) {\n      run(id: $id) {\n        ...RunFields\n        thread { id }\n        resumedFrom { id }\n        toolCalls { ...ToolCallFields }\n      }\n    }": types.RunDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ToolCallFields on ToolCall {\n    id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs\n  }"): typeof import('./graphql.js').ToolCallFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment AuditFields on Audit {\n    __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs\n  }"): typeof import('./graphql.js').AuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ModelAuditFields on ModelAudit {\n    ...AuditFields\n    model input output error usage\n    toolCalls { ...ToolCallFields }\n  }"): typeof import('./graphql.js').ModelAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ToolAuditFields on ToolAudit {\n    ...AuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n  }"): typeof import('./graphql.js').ToolAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment RunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error\n  }"): typeof import('./graphql.js').RunFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment RunLeaseFields on RunLease { runId owner epoch expiresAt grantedAt }"): typeof import('./graphql.js').RunLeaseFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ThreadFields on Thread { id title ownerId createdAt }"): typeof import('./graphql.js').ThreadFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment MessageFields on Message { id role content createdAt }"): typeof import('./graphql.js').MessageFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }"): typeof import('./graphql.js').CreateThreadDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }"): typeof import('./graphql.js').AppendMessageDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }"): typeof import('./graphql.js').CreateRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }"): typeof import('./graphql.js').CancelRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation DeleteThread($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }"): typeof import('./graphql.js').DeleteThreadDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }"): typeof import('./graphql.js').ClaimRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n      renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields }\n    }"): typeof import('./graphql.js').RenewLeaseDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }"): typeof import('./graphql.js').RecordModelStartedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }"): typeof import('./graphql.js').RecordModelFinishedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }"): typeof import('./graphql.js').RecordToolStartedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }"): typeof import('./graphql.js').RecordToolFinishedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }"): typeof import('./graphql.js').RecordToolErrorDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }"): typeof import('./graphql.js').FinishRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    mutation RecordEvents($events: [LifecycleEventInput!]!) {\n      recordEvents(events: $events) {\n        index\n        audit { ... on ModelAudit { ...ModelAuditFields } ... on ToolAudit { ...ToolAuditFields } }\n        run { ...RunFields }\n        lease { ...RunLeaseFields }\n        error { code message runStatus }\n      }\n    }"): typeof import('./graphql.js').RecordEventsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    query ThreadAudits($threadId: ID!, $limit: Int) {\n      threadAudits(threadId: $threadId, limit: $limit) {\n        threadId\n        cursor\n        truncated\n        items {\n          ... on ModelAudit { ...ModelAuditFields }\n          ... on ToolAudit {\n            ...ToolAuditFields\n            toolCall { ...ToolCallFields }\n            declaredBy { id operationId }\n          }\n        }\n      }\n    }"): typeof import('./graphql.js').ThreadAuditsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n    query Run($id: ID!) {\n      run(id: $id) {\n        ...RunFields\n        thread { id }\n        resumedFrom { id }\n        toolCalls { ...ToolCallFields }\n      }\n    }"): typeof import('./graphql.js').RunDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
