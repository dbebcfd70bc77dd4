-- The lifecycle functions' helpers that PostgreSQL could not fold into their callers, in PL/pgSQL
-- (issue 45). A LANGUAGE sql function that is not inlined is parsed and planned again at every
-- call (before PostgreSQL 18), while PL/pgSQL keeps its plans for the session: these three ran once
-- or more per event, and were a tenth of the database's CPU in a batch of ten events (bench/README
-- "The lifecycle functions' own cost", runs DF…). audit_next_change is an UPDATE (never inlined),
-- audit_end_fields is called in FROM (only set-returning functions are inlined there), and
-- audit_written uses its row twice (not inlined when the row is an expression). Same rules, same
-- results; functions only: instant.

/** The thread's next change cursor, under the thread row's lock (held to commit: cursor order is commit order). */
CREATE OR REPLACE FUNCTION audit_next_change(thread uuid, OUT cursor bigint, OUT at timestamptz) LANGUAGE plpgsql AS $$
BEGIN
  UPDATE thread t SET change_cursor = t.change_cursor + 1 WHERE t.id = audit_next_change.thread
    RETURNING t.change_cursor, clock_timestamp() INTO cursor, at;
END $$;

/**
 * The end of an observation on audit `m`: its time, sequence and clock reading. The one duration
 * formula: whole milliseconds between two readings of the same monotonic clock, never negative, at
 * most an int; none across clocks.
 */
CREATE OR REPLACE FUNCTION audit_end_fields(m message, event jsonb,
  OUT finished_at timestamptz, OUT finished_sequence bigint, OUT end_clock_id text, OUT end_clock_nanos bigint, OUT duration_ms int)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  finished_at := (event ->> 'observedAt')::timestamptz;
  finished_sequence := (event ->> 'sequence')::bigint;
  end_clock_id := event -> 'clock' ->> 'clockId';
  end_clock_nanos := (event -> 'clock' ->> 'nanos')::bigint;
  duration_ms := CASE WHEN m.start_clock_id = end_clock_id AND m.start_clock_nanos IS NOT NULL
    THEN least(2147483647, greatest(0, (end_clock_nanos - m.start_clock_nanos) / 1000000))::int END;
END $$;

/** A written row and its change; `lease_only` for a renewal (threadChanges shows it, runChanged does not). */
CREATE OR REPLACE FUNCTION audit_written(kind text, row_json jsonb, lease_only boolean DEFAULT false) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN jsonb_build_object(kind, row_json, 'changes', jsonb_build_array(jsonb_build_object('kind', kind, 'row', row_json, 'leaseOnly', lease_only)));
END $$;
