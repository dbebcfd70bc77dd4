import { render } from 'preact';
import { useSignal } from '@preact/signals';
import { diff } from 'jsondiffpatch';
import { format as formatDiffHtml } from 'jsondiffpatch/formatters/html';
import 'jsondiffpatch/formatters/styles/html.css';
import './style.css';
import {
  auditsHidden,
  claims,
  closeThread,
  connection,
  loadThreads,
  now,
  openThread,
  pageError,
  restore,
  rows,
  selectedKey,
  signIn,
  signOut,
  threadId,
  threadInfo,
  threads,
  threadsHaveMore,
  token,
  truncated,
} from './store.js';
import { formatDuration, type Row } from './timeline.js';

function SignIn() {
  const draft = useSignal('');
  return (
    <form
      class="sign-in"
      onSubmit={(event) => {
        event.preventDefault();
        if (draft.value.trim()) signIn(draft.value);
      }}
    >
      <h1>Agent audit timeline</h1>
      <p>
        Paste a bearer token (the one <code>npm start</code> prints, or <code>npm run token -- --sub you --role superadmin</code>).
        It stays in this tab only.
      </p>
      <textarea name="token" rows={4} value={draft.value} onInput={(e) => (draft.value = e.currentTarget.value)} />
      <button type="submit">Sign in</button>
    </form>
  );
}

function Header() {
  return (
    <header>
      <strong>Agent audit timeline</strong>
      <span class="who">
        {claims.value ? `${claims.value.sub} (${claims.value.role})` : 'unknown token'}
      </span>
      {threadId.value && (
        <span class={`connection ${connection.value}`} data-testid="connection">
          {connection.value === 'live' ? 'live' : connection.value === 'reconnecting' ? 'reconnecting…' : 'connecting…'}
        </span>
      )}
      <a href="/graphql" target="_blank" rel="noreferrer">GraphiQL</a>
      <button onClick={signOut}>Sign out</button>
    </header>
  );
}

function ThreadList() {
  return (
    <section class="threads">
      <h2>Threads</h2>
      {threads.value.length === 0 && <p class="muted">No threads you may read yet.</p>}
      <ul>
        {threads.value.map((thread) => (
          <li key={thread.id}>
            <a href={`#thread=${thread.id}`} data-thread-id={thread.id} onClick={(e) => (e.preventDefault(), openThread(thread.id))}>
              {thread.title || thread.id}
            </a>
            <span class="muted"> {thread.ownerId} · {new Date(thread.createdAt).toLocaleString()}</span>
            {thread.latestRun && <span class={`status ${thread.latestRun.status}`}>{thread.latestRun.status}</span>}
          </li>
        ))}
      </ul>
      {threadsHaveMore.value && <button onClick={() => loadThreads(false)}>More threads</button>}
    </section>
  );
}

function RunMeta({ row }: { row: Row }) {
  const run = row.run!;
  const leaseLeft = run.leaseExpiresAt && run.status === 'RUNNING' ? Date.parse(run.leaseExpiresAt) - now.value : null;
  return (
    <span class="meta">
      {run.leaseOwner && <> lease {run.leaseOwner}</>} · epoch {run.leaseEpoch}
      {leaseLeft != null && <> · {leaseLeft > 0 ? `${formatDuration(leaseLeft)} left` : 'lease expired'}</>}
      {run.resumedFrom && (
        <>
          {' · resumes '}
          <a href="#" class="resumed-from" onClick={(e) => (e.preventDefault(), (selectedKey.value = run.resumedFrom!.id))}>
            run {run.resumedFrom.id.slice(0, 8)}
          </a>
        </>
      )}
    </span>
  );
}

function TimelineRow({ row }: { row: Row }) {
  return (
    <div
      class={`row ${row.kind} ${selectedKey.value === row.key ? 'selected' : ''}`}
      data-key={row.key}
      data-kind={row.kind}
      data-status={row.status}
      onClick={() => (selectedKey.value = row.key)}
    >
      <div class="label" style={{ paddingLeft: `${row.depth * 1.2}em` }}>
        <span class="name">{row.label}</span>
        {row.kind === 'run' && <RunMeta row={row} />}
        {row.ranInRun && <span class="meta"> · ran in resumed run {row.ranInRun.slice(0, 8)}</span>}
      </div>
      <div class="track">
        <div class={`bar ${row.status} ${row.running ? 'running' : ''}`} style={{ left: `${row.left}%`, width: `${row.width}%` }} />
      </div>
      <div class="info">
        <span class={`status ${row.status}`}>{row.status}</span>
        <span class="duration">{formatDuration(row.durationMs)}</span>
        {row.awaitingVerdict && <span class="awaiting" title="A bare tool error: the run's verdict decides its status">error · awaiting run verdict</span>}
        {row.reason && !row.awaitingVerdict && <span class="reason">{row.reason}</span>}
      </div>
    </div>
  );
}

const PREVIEW_CHARS = 2000;

/** JSON stays collapsed above a size: a 1 MiB output costs nothing until it is opened. */
function JsonView({ value, label }: { value: unknown; label: string }) {
  const open = useSignal(false);
  if (value === undefined || value === null) return <div class="json-view"><h4>{label}</h4><span class="muted">none</span></div>;
  const text = JSON.stringify(value, null, 2);
  const large = text.length > PREVIEW_CHARS;
  return (
    <div class="json-view" data-label={label}>
      <h4>
        {label} <span class="muted">({formatBytes(text.length)})</span>
        {large && <button onClick={() => (open.value = !open.value)}>{open.value ? 'Collapse' : 'Expand all'}</button>}
      </h4>
      <pre>{large && !open.value ? `${text.slice(0, PREVIEW_CHARS)}\n… ${formatBytes(text.length - PREVIEW_CHARS)} more` : text}</pre>
    </div>
  );
}

const formatBytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(2)} MiB`);

/** The model's declared arguments against what the tool really received, differences marked. */
function DeclaredVsEffective({ declared, effective }: { declared: unknown; effective: unknown }) {
  const delta = diff(declared ?? null, effective ?? null);
  return (
    <div class="declared-vs-effective">
      <h4>Declared by the model vs effective input {delta ? <span class="differs">differs</span> : <span class="same">identical</span>}</h4>
      <div class="side-by-side">
        <JsonView label="declared" value={declared} />
        <JsonView label="effective" value={effective} />
      </div>
      {delta && <div class="diff" dangerouslySetInnerHTML={{ __html: formatDiffHtml(delta, declared ?? null) ?? '' }} />}
    </div>
  );
}

function Details() {
  const row = rows.value.find((candidate) => candidate.key === selectedKey.value);
  if (!row) return <aside class="details muted">Select a row to see its details.</aside>;
  const audit = row.audit;
  return (
    <aside class="details" data-key={row.key}>
      <h3>
        {row.label} <span class={`status ${row.status}`}>{row.status}</span>
      </h3>
      {row.awaitingVerdict && <p class="awaiting">This tool reported an error; the run's terminal verdict will decide its final status.</p>}
      {row.run && <JsonView label="error" value={row.run.error} />}
      {audit?.__typename === 'ToolAudit' && (
        <>
          <DeclaredVsEffective declared={audit.toolCall?.declaredInput} effective={audit.effectiveInput} />
          <JsonView label="output" value={audit.output} />
          <JsonView label="error" value={audit.error} />
        </>
      )}
      {audit?.__typename === 'ModelAudit' && (
        <>
          <JsonView label="input" value={audit.input} />
          <JsonView label="output" value={audit.output} />
          <JsonView label="error" value={audit.error} />
        </>
      )}
    </aside>
  );
}

function Timeline() {
  return (
    <section class="timeline">
      <p>
        <a href="#" onClick={(e) => (e.preventDefault(), closeThread())}>← threads</a>{' '}
        <strong>{threadInfo.value?.title ?? 'untitled thread'}</strong>{' '}
        <span class="muted">
          owned by {threadInfo.value?.ownerId} · <code>{threadId.value}</code>
        </span>
      </p>
      {truncated.value && <p class="banner">Newest 500 entries shown; older entries exist.</p>}
      {auditsHidden.value && <p class="banner hidden-audits" data-testid="audits-hidden">{auditsHidden.value}</p>}
      <div class="rows">
        {rows.value.map((row) => (
          <TimelineRow key={row.key} row={row} />
        ))}
        {rows.value.length === 0 && <p class="muted">No runs in this thread yet.</p>}
      </div>
      <Details />
    </section>
  );
}

function App() {
  if (!token.value) return <SignIn />;
  return (
    <>
      <Header />
      {pageError.value && <p class="banner error" role="alert">{pageError.value}</p>}
      {threadId.value ? <Timeline /> : <ThreadList />}
    </>
  );
}

restore();
render(<App />, document.getElementById('app')!);
