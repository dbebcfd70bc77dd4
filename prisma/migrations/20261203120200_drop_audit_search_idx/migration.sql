-- migrate: no-transaction
-- The trigram index over the searched text alone goes: message_audit_search_thread_idx
-- (20261203120100_audit_search_by_thread) serves every search it served. Online: dropped
-- CONCURRENTLY, so no read or write of message waits for it.
DROP INDEX CONCURRENTLY IF EXISTS "message_audit_search_idx";
