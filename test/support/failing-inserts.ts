import type { TestApp } from './app.js';

/**
 * Every insert of a model call `operationId` fails with `sqlstate` and `message`, as the database
 * would raise them, until the returned function runs: a trigger, on both backends.
 */
export async function failingInserts(t: TestApp, operationId: string, sqlstate: string, message: string) {
  const name = `fails_${sqlstate.toLowerCase()}`;
  await t.app.db.driver.exec(`
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.operation_id = '${operationId}' THEN
        RAISE EXCEPTION '${message}' USING ERRCODE = '${sqlstate}';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER ${name} BEFORE INSERT ON message FOR EACH ROW EXECUTE FUNCTION ${name}();`);
  return () => t.app.db.driver.exec(`DROP TRIGGER ${name} ON message; DROP FUNCTION ${name}();`);
}
