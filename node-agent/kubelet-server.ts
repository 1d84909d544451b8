// The kubelet endpoint the apiserver calls for container logs (`kubectl logs [-f]`) and, through
// its node proxy, for usage (/stats/summary, as metrics-server and the platform API read it), over
// TLS with the local control plane's certificates: the server presents a certificate signed by the
// cluster CA for its addresses, and accepts only clients with a certificate from that CA (the
// apiserver's kubelet-client identity).
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import { readLog, type LogLine } from './logs.js';
import type { PodWorker } from './pod-worker.js';
import { startSampling, summarize, UsageHistory } from './stats.js';

export interface LogQuery {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  since?: Date;
  limitBytes?: number;
}

export function parseLogQuery(params: URLSearchParams, now = new Date()): LogQuery {
  const int = (name: string) => {
    const v = params.get(name);
    return v !== null && /^\d+$/.test(v) ? Number(v) : undefined;
  };
  const sinceSeconds = int('sinceSeconds');
  const sinceTime = params.get('sinceTime');
  return {
    follow: params.get('follow') === 'true',
    previous: params.get('previous') === 'true',
    timestamps: params.get('timestamps') === 'true',
    tailLines: int('tailLines'),
    since: sinceTime ? new Date(sinceTime) : sinceSeconds !== undefined ? new Date(now.getTime() - sinceSeconds * 1000) : undefined,
    limitBytes: int('limitBytes'),
  };
}

/** Applies since and tailLines to a log's lines. */
export function selectLines(lines: LogLine[], q: LogQuery): LogLine[] {
  let out = q.since ? lines.filter((l) => l.time >= q.since!) : lines;
  if (q.tailLines !== undefined) out = q.tailLines === 0 ? [] : out.slice(-q.tailLines);
  return out;
}

const render = (l: LogLine, q: LogQuery) => (q.timestamps ? `${l.time.toISOString()} ${l.text}\n` : `${l.text}\n`);

export interface KubeletServer {
  close(): void;
}

export function startKubeletServer(opts: {
  port: number;
  /** Where to listen: loopback, plus the node's address when it has another (the apiserver's node proxy refuses loopback). */
  addresses: readonly string[];
  pkiDir: string;
  nodeName: string;
  findPod: (namespace: string, name: string) => PodWorker | undefined;
  /** The pods running on this node. */
  pods: () => PodWorker[];
  log: Logger;
}): KubeletServer {
  const started = new Date();
  const history = new UsageHistory();
  const sampling = startSampling(opts.pods, history);
  const options = {
    key: readFileSync(path.join(opts.pkiDir, 'kubelet-serving.key')),
    cert: readFileSync(path.join(opts.pkiDir, 'kubelet-serving.crt')),
    ca: readFileSync(path.join(opts.pkiDir, 'ca.crt')),
    requestCert: true,
    rejectUnauthorized: true,
  };
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      opts.log.error({ err, url: req.url }, 'Kubelet request failed');
      if (!res.headersSent) res.writeHead(500).end('internal error\n');
      else res.end();
    });
  };
  const servers = [...new Set(opts.addresses)].map((address) => https.createServer(options, listener).listen(opts.port, address));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://node');
    if (url.pathname === '/healthz') return void res.writeHead(200).end('ok');
    if (url.pathname === '/stats/summary' && req.method === 'GET') {
      const summary = summarize(opts.nodeName, started, opts.pods(), history);
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(summary));
    }
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (!m || req.method !== 'GET') return void res.writeHead(404).end('not found\n');
    const [, namespace, podName, container] = m.map((x) => decodeURIComponent(x ?? '')) as [string, string, string, string];
    const worker = opts.findPod(namespace, podName);
    if (!worker) return void res.writeHead(404).end(`pod ${namespace}/${podName} is not running on this node\n`);
    const q = parseLogQuery(url.searchParams);
    const file = worker.logFile(container, q.previous);
    if (!file) {
      const what = q.previous ? `previous terminated container "${container}"` : `container "${container}"`;
      return void res.writeHead(400).end(`${what} in pod "${podName}" not found\n`);
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    let budget = q.limitBytes ?? Infinity;
    const send = (l: LogLine): boolean => {
      const text = render(l, q);
      if (budget <= 0) return false;
      budget -= Buffer.byteLength(text);
      res.write(text);
      return budget > 0;
    };
    const live = q.previous ? undefined : worker.liveLog(container);
    if (live && q.follow) {
      // Snapshot and subscription in the same tick: no line is lost or repeated. (Past the last
      // 5000 lines the backlog comes from the file, and a line written during that read can be missed.)
      const backlog = live.truncated ? await readLog(file) : [...live.recent];
      const onLine = (l: LogLine) => {
        if (!send(l)) finish();
      };
      const finish = () => {
        live.off('line', onLine);
        live.off('close', finish);
        res.end();
      };
      live.on('line', onLine);
      live.once('close', finish);
      req.once('close', finish);
      for (const l of selectLines(backlog, q)) if (!send(l)) return finish();
      return;
    }
    for (const l of selectLines(await readLog(file), q)) if (!send(l)) break;
    res.end();
  }

  return {
    close: () => {
      sampling.stop();
      for (const server of servers) {
        server.close();
        server.closeAllConnections();
      }
    },
  };
}
