-- A lease's expiry counted from its write's transaction start (now()) while its grantedAt is the
-- change's instant (clock_timestamp(), read under the thread's lock): a claim or renewal that
-- queued for its thread, or came late in a batch, answered expiresAt − grantedAt shorter than the
-- length granted, by the wait (540 ms for the last of 50 renewals of a batch on PGlite), and a
-- worker timing renewals by it renewed early. A lease now runs from its grant: the expiry stored
-- (the fence every write checks) is grantedAt + the length, exactly what the worker is told.
-- Functions only: instant.

/** When a lease granted at `granted_at` for the event's (clamped) leaseSeconds expires: the one rule of a lease's length. */
CREATE OR REPLACE FUNCTION audit_lease_expiry(granted_at timestamptz, event jsonb) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT granted_at + make_interval(secs => (event ->> 'leaseSeconds')::int)
$$;

/**
 * A claim: a QUEUED run becomes RUNNING under the worker's lease at the next epoch; the same
 * worker retrying the claim that took the current, unexpired lease (same claimId) gets that lease
 * back, its expiry extended as by the claim, never shortened. Any other claim of a started run is
 * refused. The lease runs from the change's instant (its grantedAt).
 */
CREATE OR REPLACE FUNCTION audit_claim_run(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  target run;
  fresh boolean;
  change record;
BEGIN
  SELECT * INTO target FROM run WHERE id = (event ->> 'runId')::uuid FOR UPDATE;
  IF NOT FOUND OR EXISTS (SELECT 1 FROM thread t WHERE t.id = target.thread_id AND t.deleted_at IS NOT NULL) THEN
    PERFORM audit_refuse('NOT_FOUND', format('Run %s not found', event ->> 'runId'));
  END IF;
  fresh := target.status = 'QUEUED';
  IF NOT fresh AND NOT coalesce(target.status = 'RUNNING' AND target.claim_id = event ->> 'claimId' AND target.lease_owner = worker
      AND target.lease_expires_at > now(), false) THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('Run %s is %s; only a QUEUED run can be claimed', event ->> 'runId', target.status));
  END IF;
  change := audit_next_change(target.thread_id);
  UPDATE run r SET status = 'RUNNING', lease_owner = worker, claim_id = event ->> 'claimId',
      lease_epoch = CASE WHEN fresh THEN r.lease_epoch + 1 ELSE r.lease_epoch END,
      lease_expires_at = CASE WHEN fresh THEN audit_lease_expiry(change.at, event)
        ELSE greatest(r.lease_expires_at, audit_lease_expiry(change.at, event)) END,
      started_at = coalesce(r.started_at, now()), change_cursor = change.cursor, changed_at = change.at
    WHERE r.id = target.id RETURNING * INTO target;
  RETURN audit_written('run', audit_run_json(target), NOT fresh);
END $$;

/** An unexpired lease extended, from the change's instant (its grantedAt); the epoch stays, so writes in flight remain valid. */
CREATE OR REPLACE FUNCTION audit_renew_lease(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  change record := audit_next_change(leased.thread_id);
BEGIN
  UPDATE run SET lease_expires_at = audit_lease_expiry(change.at, event),
      change_cursor = change.cursor, changed_at = change.at
    WHERE id = leased.id RETURNING * INTO leased;
  RETURN audit_written('run', audit_run_json(leased), true);
END $$;
