// Writes the printed schema to schema.graphql (test/schema/printed-schema.unit.test.ts keeps it in sync).
import { writeFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/graphql/schema/index.js';

writeFileSync(new URL('../schema.graphql', import.meta.url), printSchema(schema) + '\n');
console.log('schema.graphql written');
