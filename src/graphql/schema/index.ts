import { lexicographicSortSchema } from 'graphql';
import { builder } from '../builder.js';
import '../scalars.js';
import './enums.js';
import './thread.js';
import './run.js';
import './audit.js';
import './tool-call.js';
import './relations.js';
import './lifecycle.js';
import './subscriptions.js';
import './deletion.js';
import './audit-search.js';
import './tool-call-ledger.js';
import './tool-activity.js';
import './audit-summary.js';

export const schema = lexicographicSortSchema(builder.toSchema());
