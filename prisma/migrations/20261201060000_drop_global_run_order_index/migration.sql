-- Runs are only ever ordered within their thread ("run_thread_id_created_order_idx"). The global
-- index on created_order served no read, cost every run insert, and tempted the planner into
-- walking it backward from the newest run of the whole database to find one thread's newest
-- runs: a thread's timeline read then grew with every run created after it (bench/README.md,
-- the read curve).
DROP INDEX "run_created_order_key";
