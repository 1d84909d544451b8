// The account's sandboxes (docs/api/sandboxes.md): the list with each one's state in words (GET
// /sandboxes?all=true: the open ones and those ended in the last day), opening one (POST /sandboxes,
// which answers once it is ready), and one sandbox's page at its own address, where a command runs
// (POST /sandboxes/{id}/exec with stream: its stdout and stderr shown as they come, then how it
// ended and its exit code) and where it is deleted after a confirmation in the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data, type ExecResult, type Runtime, type Sandbox } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf, navigate } from '../router.js';
import {
  emptyRun,
  endRun,
  feedRun,
  resourcesInWords,
  runEndInWords,
  runOfResult,
  sandboxOpen,
  sandboxStateInWords,
  sortSandboxes,
  type RunOutput,
} from '../sandboxes.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';
import { TableHead } from '../components/table-head.js';
import { ConfirmStep } from '../components/confirm-step.js';

/** How often an open sandbox is asked about again (it may end idle, or at its lifetime). */
const refreshMs = 15_000;

function StateOf({ sandbox }: { sandbox: Sandbox }) {
  const s = sandboxStateInWords(sandbox);
  return (
    <>
      <span class={`dot ${s.tone}`} aria-hidden="true" />
      {s.text}
    </>
  );
}

export function SandboxesPage() {
  const [sandboxes, setSandboxes] = useState<Sandbox[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [runtimes, setRuntimes] = useState<Runtime[] | undefined>(undefined);
  const [runtime, setRuntime] = useState('');
  const [network, setNetwork] = useState(false);
  const { busy, failure, run } = useAction();

  const load = () =>
    data(api.GET('/sandboxes', { params: { query: { all: 'true' } } })).then(
      (d) => {
        setSandboxes(sortSandboxes(d.sandboxes));
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => {
    void load();
    // The runtimes name the choices; before the platform has recorded them (503) the default is offered alone.
    data(api.GET('/runtimes')).then(
      (r) => setRuntimes(r.runtimes),
      () => setRuntimes([]),
    );
  }, []);
  const starting = sandboxes?.some((s) => s.state === 'pending') ?? false;
  useEffect(() => {
    const timer = setInterval(() => void load(), starting ? 2000 : refreshMs);
    return () => clearInterval(timer);
  }, [starting]);

  const open = async (event: Event) => {
    event.preventDefault();
    await run('Opening a sandbox', () => data(api.POST('/sandboxes', { body: { ...(runtime ? { runtime } : {}), network } })), {
      after: (made) => navigate(hrefOf({ page: 'sandbox', id: made.id })),
    });
  };

  return (
    <>
      <PageHeading title="Sandboxes">Sandboxes</PageHeading>
      <p class="muted">
        Disposable machines for code nobody vouches for: no network unless asked, and gone when deleted, after 5 minutes with nothing run in
        them, or an hour after they were opened. The CLI’s are the same: <code>svc sandbox</code>.
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing sandboxes" error={loadError} />}
      {!sandboxes && loadError === undefined && <p role="status">Loading sandboxes…</p>}
      {sandboxes && sandboxes.length === 0 && <p id="sandboxes-empty">No sandboxes: open one below.</p>}
      {sandboxes && sandboxes.length > 0 && (
        <table class="apps sandboxes" id="sandboxes">
          <caption class="visually-hidden">Sandboxes of the account: open ones first, then those ended in the last day</caption>
          <TableHead columns={['Sandbox', 'State', 'Runtime', 'Network', 'Opened', 'Ends']} />
          <tbody>
            {sandboxes.map((s) => (
              <tr key={s.id} data-sandbox={s.id}>
                <th scope="row">
                  <a href={hrefOf({ page: 'sandbox', id: s.id })} aria-label={`Sandbox ${s.id}`}>
                    <code>{s.id}</code>
                  </a>
                </th>
                <td class="sandbox-state">
                  <StateOf sandbox={s} />
                </td>
                <td>{s.runtime}</td>
                <td>{s.network ? 'allowed' : 'none'}</td>
                <td class="when">{when(s.created_at)}</td>
                <td class="when">
                  {sandboxOpen(s) ? (
                    <>
                      idle: {when(s.idle_expires_at)}
                      <br />
                      at the latest: {when(s.expires_at)}
                    </>
                  ) : (
                    <>ended {when(s.ended_at)}</>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <section aria-labelledby="open-sandbox-heading">
        <h2 id="open-sandbox-heading">Open a sandbox</h2>
        <form id="open-sandbox" onSubmit={(e) => void open(e)}>
          <label for="sandbox-runtime">Default language</label>
          <p class="hint" id="sandbox-runtime-hint">
            Every runtime is installed in every sandbox: this only names the default.
          </p>
          <select
            id="sandbox-runtime"
            value={runtime}
            aria-describedby="sandbox-runtime-hint"
            onChange={(e) => setRuntime(e.currentTarget.value)}
          >
            <option value="">The platform’s default (python)</option>
            {(runtimes ?? []).map((r) => (
              <option key={r.name} value={r.name}>
                {r.language} {r.version} ({r.name})
              </option>
            ))}
          </select>
          <label class="check">
            <input type="checkbox" checked={network} onChange={(e) => setNetwork(e.currentTarget.checked)} />
            Allow outbound network connections
          </label>
          <p>
            <button type="submit" disabled={busy}>
              Open a sandbox
            </button>
          </p>
          <p role="status" class={busy ? 'muted' : 'visually-hidden'}>
            {busy ? 'Opening a sandbox: it is ready in a moment…' : ''}
          </p>
          {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      </section>
    </>
  );
}

/** A command run in the page: what was asked, and what came back. */
interface Run {
  n: number;
  command: string;
  output: RunOutput;
  running: boolean;
  error?: unknown;
}

/** Runs kept on the page (the oldest go). */
const maxRuns = 20;

/** Runs a command, streaming: `onChunk` gets the NDJSON text as it comes. An answer in JSON (not streamed) is given whole. */
async function execute(
  sandboxID: string,
  command: string,
  onChunk: (text: string) => void,
  onWhole: (r: ExecResult) => void,
  signal: AbortSignal,
): Promise<void> {
  const { data: body, response } = await api.POST('/sandboxes/{sandboxID}/exec', {
    params: { path: { sandboxID } },
    body: { command, stream: true },
    headers: { accept: 'application/x-ndjson' },
    parseAs: 'stream',
    signal,
  });
  if (!body) return;
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  if (!(response.headers.get('content-type') ?? '').includes('ndjson')) {
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    onWhole(JSON.parse(text) as ExecResult);
    return;
  }
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onChunk(value);
  }
}

function RunView({ run }: { run: Run }) {
  const end = run.output.end && runEndInWords(run.output.end);
  return (
    <section class="run" data-run={run.n} aria-labelledby={`run-${run.n}-heading`}>
      <h3 id={`run-${run.n}-heading`} class="run-command">
        <span class="visually-hidden">Command {run.n}: </span>
        <code>$ {run.command}</code>
      </h3>
      {run.output.dropped > 0 && (
        <p class="muted small">The output’s first {run.output.dropped.toLocaleString('en')} characters are not shown.</p>
      )}
      <pre class="log run-output" id={`run-${run.n}-output`} tabIndex={0} role="region" aria-label={`Output of command ${run.n}`}>
        {run.output.parts.length === 0
          ? run.running
            ? ''
            : '(no output)'
          : run.output.parts.map((p, i) =>
              p.stream === 'stderr' ? (
                <span key={i} class="stderr">
                  {p.text}
                </span>
              ) : (
                <span key={i}>{p.text}</span>
              ),
            )}
      </pre>
      <p class="run-exit" id={`run-${run.n}-exit`}>
        {run.running && <span class="muted">Running…</span>}
        {end && (
          <>
            <span class={`dot ${end.tone}`} aria-hidden="true" />
            {end.text}
          </>
        )}
        {!run.running && !end && run.error === undefined && <span class="muted">The output ended before the command did.</span>}
      </p>
      {run.output.garbled > 0 && <p class="muted small">{run.output.garbled} lines of the answer were not output and are left out.</p>}
      {run.error !== undefined && <ErrorMessage doing={`Running ${run.command}`} error={run.error} />}
    </section>
  );
}

/** One sandbox's page: a fresh one for each sandbox (no run, message or confirmation carried over). */
export function SandboxPage({ id }: { id: string }) {
  return <SandboxView key={id} id={id} />;
}

function SandboxView({ id }: { id: string }) {
  const [sandbox, setSandbox] = useState<Sandbox | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [command, setCommand] = useState('');
  const [runs, setRuns] = useState<Run[]>([]);
  const [confirming, setConfirming] = useState(false);
  const { busy, failure, done, run: act } = useAction();
  const [said, setSaid] = useState('');
  const count = useRef(0);
  // Every command still streaming: all of them stop when the page goes.
  const running = useRef(new Set<AbortController>());
  const showing = useRef(id);
  showing.current = id;
  // Reads are numbered: an answer to a read older than the last one taken (a timer's, in flight
  // while the sandbox was deleted) would put back a state that is no longer so.
  const reads = useRef({ asked: 0, taken: 0 });

  const load = () => {
    const n = ++reads.current.asked;
    return data(api.GET('/sandboxes/{sandboxID}', { params: { path: { sandboxID: id } } })).then(
      (s) => {
        if (showing.current !== id || n < reads.current.taken) return;
        reads.current.taken = n;
        setSandbox(s);
        setLoadError(undefined);
      },
      (err: unknown) => showing.current === id && setLoadError(err),
    );
  };
  useEffect(() => {
    setSandbox(undefined);
    setLoadError(undefined);
    setRuns([]);
    setConfirming(false);
    void load();
    const streams = running.current;
    return () => {
      for (const c of streams) c.abort();
      streams.clear();
    };
  }, [id]);
  const open = sandbox !== undefined && sandboxOpen(sandbox);
  useEffect(() => {
    if (!open) return undefined;
    const timer = setInterval(() => void load(), sandbox.state === 'pending' ? 2000 : refreshMs);
    return () => clearInterval(timer);
  }, [open, sandbox?.state]);

  const update = (n: number, change: (r: Run) => Run) => setRuns((rs) => rs.map((r) => (r.n === n ? change(r) : r)));
  const run = async (event: Event) => {
    event.preventDefault();
    const line = command.trim();
    if (!line) return;
    const n = ++count.current;
    const controller = new AbortController();
    running.current.add(controller);
    setRuns((rs) => [...rs, { n, command: line, output: emptyRun, running: true }].slice(-maxRuns));
    setSaid(`Running command ${n}…`);
    let output = emptyRun;
    const show = (more: Partial<Run> = {}) => update(n, (r) => ({ ...r, output, ...more }));
    try {
      await execute(
        id,
        line,
        (text) => {
          output = feedRun(output, text);
          show();
        },
        (whole) => {
          output = runOfResult(whole);
          show();
        },
        controller.signal,
      );
      output = endRun(output);
      show({ running: false });
    } catch (error) {
      if (controller.signal.aborted) return;
      output = endRun(output);
      show({ running: false, error });
    } finally {
      running.current.delete(controller);
    }
    setSaid(output.end ? `Command ${n} ended: ${runEndInWords(output.end).text}.` : `Command ${n} ended.`);
    // Its clocks moved (idle counts from the end of the last exec); a 409 may mean it ended.
    void load();
  };

  const remove = () =>
    act(`Deleting sandbox ${id}`, () => data(api.DELETE('/sandboxes/{sandboxID}', { params: { path: { sandboxID: id } } })), {
      said: `Sandbox ${id} deleted.`,
      after: async (answered) => {
        // The API answers once the sandbox ended, or with how it was after 10 s of waiting for
        // its controller: then it is asked again until it says ended (a minute at most).
        let s = answered;
        for (let i = 0; sandboxOpen(s) && i < 60; i++) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          s = await data(api.GET('/sandboxes/{sandboxID}', { params: { path: { sandboxID: id } } }));
        }
        // Reads in flight from before are not taken after this one.
        reads.current.taken = ++reads.current.asked;
        setSandbox(s);
        setConfirming(false);
      },
    });

  const state = sandbox && sandboxStateInWords(sandbox);
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'sandboxes' })}>Sandboxes</a> / {id}
      </p>
      <PageHeading title={`Sandbox ${id}`}>Sandbox {id}</PageHeading>
      {loadError !== undefined && <ErrorMessage doing={`Loading sandbox ${id}`} error={loadError} />}
      {!sandbox && loadError === undefined && <p role="status">Loading…</p>}
      <p role="status" id="sandbox-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {sandbox && state && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd id="sandbox-state">
              <span class={`dot ${state.tone}`} aria-hidden="true" />
              {state.text}
            </dd>
            <dt>Default language</dt>
            <dd>{sandbox.runtime}</dd>
            <dt>Network</dt>
            <dd>{sandbox.network ? 'outbound connections allowed' : 'none at all'}</dd>
            <dt>Resources</dt>
            <dd>{resourcesInWords(sandbox.resources)}</dd>
            {sandbox.launch && (
              <>
                <dt>Launch</dt>
                <dd>
                  {sandbox.launch}
                  {sandbox.launch_reason && `: ${sandbox.launch_reason}`}
                </dd>
              </>
            )}
            <dt>Opened</dt>
            <dd>{when(sandbox.created_at)}</dd>
            {sandboxOpen(sandbox) ? (
              <>
                <dt>Ends</dt>
                <dd id="sandbox-ends">
                  when idle, {when(sandbox.idle_expires_at)} ({sandbox.idle_timeout_seconds} s after the last command); at the latest,{' '}
                  {when(sandbox.expires_at)}
                </dd>
              </>
            ) : (
              <>
                <dt>Ended</dt>
                <dd>{when(sandbox.ended_at)}</dd>
              </>
            )}
          </dl>

          <section aria-labelledby="run-heading">
            <h2 id="run-heading">Run a command</h2>
            {sandboxOpen(sandbox) ? (
              <form id="run-command" onSubmit={(e) => void run(e)}>
                <label for="sandbox-command">Command line</label>
                <p class="hint" id="sandbox-command-hint">
                  Run with <code>/bin/sh -c</code> in <code>/home/app</code>, for at most 60 seconds; its output shows as it comes.
                </p>
                <div class="row">
                  <input
                    id="sandbox-command"
                    class="mono"
                    value={command}
                    required
                    autocomplete="off"
                    spellcheck={false}
                    aria-describedby="sandbox-command-hint"
                    onInput={(e) => setCommand(e.currentTarget.value)}
                  />{' '}
                  <button type="submit" disabled={!command.trim()}>
                    Run
                  </button>
                </div>
              </form>
            ) : (
              <p class="muted" id="sandbox-closed">
                This sandbox has ended: nothing more runs in it. <a href={hrefOf({ page: 'sandboxes' })}>Open another one</a>.
              </p>
            )}
            <p role="status" class="visually-hidden">
              {said}
            </p>
            <div id="sandbox-runs">
              {runs.map((r) => (
                <RunView key={r.n} run={r} />
              ))}
            </div>
          </section>

          {sandboxOpen(sandbox) && (
            <section aria-labelledby="delete-sandbox-heading">
              <h2 id="delete-sandbox-heading">Delete</h2>
              {confirming ? (
                <ConfirmStep
                  label={`Confirm deleting sandbox ${id}`}
                  action="Delete"
                  busy={busy}
                  onConfirm={() => void remove()}
                  onKeep={() => setConfirming(false)}
                >
                  Delete sandbox {id}? Whatever runs in it is killed and its files are gone.
                </ConfirmStep>
              ) : (
                <button type="button" class="secondary" onClick={() => setConfirming(true)}>
                  Delete the sandbox
                </button>
              )}
              {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
            </section>
          )}
        </>
      )}
    </>
  );
}
