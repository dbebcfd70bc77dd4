-- The tool activity view's duration bins' starts (src/domain/tool-activity.ts, BIN_STARTS) as an
-- IMMUTABLE function of the bins' growth: called with a constant, it is folded into the view's
-- generic plan, computed once per connection instead of at every view (issue 40: with 100 small
-- dashboards a second, building the 550 starts was about two fifths of PostgreSQL's CPU a view).
-- Bin h + 1 starts at ⌊growth^h⌋ + 1; the first start, 1, leaves durations under a millisecond in
-- bin −1; the last is the largest below 2^31. A function only: instant.
CREATE OR REPLACE FUNCTION tool_activity_bin_starts(growth float8) RETURNS int[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 1 || ARRAY(SELECT floor(power(growth, h))::int + 1 FROM generate_series(0, 600) h
    WHERE power(growth, h) < 2147483646 ORDER BY h)
$$;
