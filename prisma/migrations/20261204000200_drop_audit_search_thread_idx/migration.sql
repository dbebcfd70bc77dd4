-- migrate: no-transaction
-- The trigram index keyed by the thread goes: message_audit_search_owner_idx
-- (20261204000100_audit_search_by_owner) serves every search it served. Online: dropped
-- CONCURRENTLY, so no read or write of message waits for it.
DROP INDEX CONCURRENTLY IF EXISTS "message_audit_search_thread_idx";
