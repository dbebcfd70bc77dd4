-- The size of each audit's input, output and error (issue 32): the bytes of its JSON text, so a
-- timeline row can say which payload is large without loading it. Stored generated columns: the
-- database computes them when a payload is written, and a read of the sizes never detoasts the
-- payloads. NULL when the payload is absent.
ALTER TABLE "message"
  ADD COLUMN "input_bytes" INTEGER GENERATED ALWAYS AS (octet_length("input"::text)) STORED,
  ADD COLUMN "output_bytes" INTEGER GENERATED ALWAYS AS (octet_length("output"::text)) STORED,
  ADD COLUMN "error_bytes" INTEGER GENERATED ALWAYS AS (octet_length("error"::text)) STORED;
