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
    "\n  fragment LifecycleAuditFields on Audit { id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs }": typeof types.LifecycleAuditFieldsFragmentDoc,
    "\n  fragment LifecycleToolAuditFields on ToolAudit {\n    ...LifecycleAuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n    toolCall { id toolCallId status effectiveInput output error durationMs }\n  }": typeof types.LifecycleToolAuditFieldsFragmentDoc,
    "\n  fragment LifecycleModelAuditFields on ModelAudit {\n    ...LifecycleAuditFields\n    model input output error usage\n    toolCalls { id toolCallId name status declaredInput }\n  }": typeof types.LifecycleModelAuditFieldsFragmentDoc,
    "\n  fragment WorkerRunFields on Run { id status leaseOwner leaseEpoch leaseExpiresAt startedAt finishedAt error }": typeof types.WorkerRunFieldsFragmentDoc,
    "mutation LifecycleClaimRun($input: ClaimRunInput!) { result: claimRun(input: $input) { runId owner epoch expiresAt } }": typeof types.LifecycleClaimRunDocument,
    "mutation LifecycleRenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n    result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { runId owner epoch expiresAt }\n  }": typeof types.LifecycleRenewLeaseDocument,
    "mutation LifecycleModelStarted($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { ...LifecycleModelAuditFields } }": typeof types.LifecycleModelStartedDocument,
    "mutation LifecycleModelFinished($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { ...LifecycleModelAuditFields } }": typeof types.LifecycleModelFinishedDocument,
    "mutation LifecycleToolStarted($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { ...LifecycleToolAuditFields } }": typeof types.LifecycleToolStartedDocument,
    "mutation LifecycleToolFinished($input: ToolFinishedInput!) { result: recordToolFinished(input: $input) { ...LifecycleToolAuditFields } }": typeof types.LifecycleToolFinishedDocument,
    "mutation LifecycleToolError($input: ToolErrorInput!) { result: recordToolError(input: $input) { ...LifecycleToolAuditFields } }": typeof types.LifecycleToolErrorDocument,
    "mutation LifecycleFinishRun($input: FinishRunInput!) { result: finishRun(input: $input) { ...WorkerRunFields } }": typeof types.LifecycleFinishRunDocument,
};
const documents: Documents = {
    "\n  fragment LifecycleAuditFields on Audit { id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs }": types.LifecycleAuditFieldsFragmentDoc,
    "\n  fragment LifecycleToolAuditFields on ToolAudit {\n    ...LifecycleAuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n    toolCall { id toolCallId status effectiveInput output error durationMs }\n  }": types.LifecycleToolAuditFieldsFragmentDoc,
    "\n  fragment LifecycleModelAuditFields on ModelAudit {\n    ...LifecycleAuditFields\n    model input output error usage\n    toolCalls { id toolCallId name status declaredInput }\n  }": types.LifecycleModelAuditFieldsFragmentDoc,
    "\n  fragment WorkerRunFields on Run { id status leaseOwner leaseEpoch leaseExpiresAt startedAt finishedAt error }": types.WorkerRunFieldsFragmentDoc,
    "mutation LifecycleClaimRun($input: ClaimRunInput!) { result: claimRun(input: $input) { runId owner epoch expiresAt } }": types.LifecycleClaimRunDocument,
    "mutation LifecycleRenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n    result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { runId owner epoch expiresAt }\n  }": types.LifecycleRenewLeaseDocument,
    "mutation LifecycleModelStarted($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { ...LifecycleModelAuditFields } }": types.LifecycleModelStartedDocument,
    "mutation LifecycleModelFinished($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { ...LifecycleModelAuditFields } }": types.LifecycleModelFinishedDocument,
    "mutation LifecycleToolStarted($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { ...LifecycleToolAuditFields } }": types.LifecycleToolStartedDocument,
    "mutation LifecycleToolFinished($input: ToolFinishedInput!) { result: recordToolFinished(input: $input) { ...LifecycleToolAuditFields } }": types.LifecycleToolFinishedDocument,
    "mutation LifecycleToolError($input: ToolErrorInput!) { result: recordToolError(input: $input) { ...LifecycleToolAuditFields } }": types.LifecycleToolErrorDocument,
    "mutation LifecycleFinishRun($input: FinishRunInput!) { result: finishRun(input: $input) { ...WorkerRunFields } }": types.LifecycleFinishRunDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment LifecycleAuditFields on Audit { id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs }"): typeof import('./graphql.js').LifecycleAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment LifecycleToolAuditFields on ToolAudit {\n    ...LifecycleAuditFields\n    toolCallId name effectiveInput output error awaitingRunTerminal\n    toolCall { id toolCallId status effectiveInput output error durationMs }\n  }"): typeof import('./graphql.js').LifecycleToolAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment LifecycleModelAuditFields on ModelAudit {\n    ...LifecycleAuditFields\n    model input output error usage\n    toolCalls { id toolCallId name status declaredInput }\n  }"): typeof import('./graphql.js').LifecycleModelAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment WorkerRunFields on Run { id status leaseOwner leaseEpoch leaseExpiresAt startedAt finishedAt error }"): typeof import('./graphql.js').WorkerRunFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleClaimRun($input: ClaimRunInput!) { result: claimRun(input: $input) { runId owner epoch expiresAt } }"): typeof import('./graphql.js').LifecycleClaimRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleRenewLease($lease: LeaseInput!, $leaseSeconds: Int) {\n    result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { runId owner epoch expiresAt }\n  }"): typeof import('./graphql.js').LifecycleRenewLeaseDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleModelStarted($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { ...LifecycleModelAuditFields } }"): typeof import('./graphql.js').LifecycleModelStartedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleModelFinished($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { ...LifecycleModelAuditFields } }"): typeof import('./graphql.js').LifecycleModelFinishedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleToolStarted($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { ...LifecycleToolAuditFields } }"): typeof import('./graphql.js').LifecycleToolStartedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleToolFinished($input: ToolFinishedInput!) { result: recordToolFinished(input: $input) { ...LifecycleToolAuditFields } }"): typeof import('./graphql.js').LifecycleToolFinishedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleToolError($input: ToolErrorInput!) { result: recordToolError(input: $input) { ...LifecycleToolAuditFields } }"): typeof import('./graphql.js').LifecycleToolErrorDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation LifecycleFinishRun($input: FinishRunInput!) { result: finishRun(input: $input) { ...WorkerRunFields } }"): typeof import('./graphql.js').LifecycleFinishRunDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
