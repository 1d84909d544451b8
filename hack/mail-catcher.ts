// The local platform's mail server (make dev only): accepts every message on SVC_DEV_SMTP_PORT
// (default 2525), keeps it as <state>/mail/<time>-<n>.eml and logs who it was for, its subject and
// the first link in it, so a sign-in link can be opened without a real mailbox.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';

const port = Number(process.env.SVC_DEV_SMTP_PORT ?? 2525);
const dir = path.resolve(process.env.SVC_STATE_DIR ?? '.svc', 'mail');
mkdirSync(dir, { recursive: true });
let n = 0;

/** The body's sign-in link (else its first URL), with quoted-printable soft breaks and `=3D` undone. */
function firstLink(raw: string): string | undefined {
  const text = raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  const links = [...text.matchAll(/https?:\/\/[^\s"<>]+/g)].map((m) => m[0].replace(/[.,;)]+$/, ''));
  return links.find((l) => /#(token|handoff)=/.test(l)) ?? links[0];
}

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onData(stream, session, done) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${++n}.eml`);
      writeFileSync(file, raw);
      const subject = /^Subject: (.*)$/im.exec(raw)?.[1] ?? '';
      const to = session.envelope.rcptTo.map((r) => r.address).join(', ');
      console.log(JSON.stringify({ time: new Date().toISOString(), to, subject, link: firstLink(raw) ?? null, file }));
      done();
    });
  },
});
server.listen(port, '127.0.0.1', () => console.log(`mail catcher listening on smtp://127.0.0.1:${port}, keeping mail in ${dir}`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
