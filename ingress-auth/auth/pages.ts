// The sign-in pages served on every protected app's hostname. Plain HTML with one small inline
// script (allowed by a per-response CSP nonce), no third-party resources: the page works on any
// app, whatever the app itself serves.
import { randomBytes } from 'node:crypto';
import type { Identity, Provider } from '../../lib/auth/identity.js';
import { loginUrl } from '../../lib/contract.js';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface RenderedPage {
  body: string;
  csp: string;
}

const style =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:26rem;margin:12vh auto;padding:0 1rem;color:#222}' +
  'h1{font-size:1.4rem}section{border-top:1px solid #ddd;padding:.8rem 0}input{font:inherit;padding:.4rem;width:100%;box-sizing:border-box}' +
  'button,.button{font:inherit;padding:.45rem .9rem;margin:.4rem 0;cursor:pointer;display:inline-block;border:1px solid #888;border-radius:4px;background:#f6f6f6;color:#222;text-decoration:none}' +
  '.note{color:#666;font-size:.9rem}.error{color:#a00}code{background:#f3f3f3;padding:0 .2rem}';

// Referrer policy same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on
// the page's own form posts, and the same-origin check of sign-in requests would refuse them.
function shell(title: string, main: string, script?: string): RenderedPage {
  const nonce = randomBytes(16).toString('base64');
  const body =
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="referrer" content="same-origin"><title>${escapeHtml(title)}</title><style>${style}</style></head><body>${main}` +
    (script ? `<script nonce="${nonce}">${script}</script>` : '') +
    '</body></html>\n';
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;
  return { body, csp };
}

export interface MethodView {
  provider: Provider | 'owner';
  /** Whether this platform is set up for it (an unconfigured provider is shown, not offered). */
  available: boolean;
}

export interface LoginView {
  app: string;
  next: string;
  methods: MethodView[];
  signedIn: Identity | undefined;
  /** The signed-in visitor is an app user who may add a passkey. */
  canAddPasskey: boolean;
  notice?: string;
}

const labels: Record<MethodView['provider'], string> = {
  email: 'Email link',
  passkey: 'Passkey',
  owner: 'App owner',
  svc: 'App owner',
  idp: 'Single sign-on',
  codehost: 'Code host account',
};

/**
 * The login page. Its script also redeems a secret from the fragment (`#token=` of an email link,
 * `#handoff=` from a provider or an owner link): it removes the fragment from the address bar and
 * history first, then POSTs it same-origin and opens `next`.
 */
export function loginPage(v: LoginView): RenderedPage {
  const nextQ = encodeURIComponent(v.next);
  const sections: string[] = [];
  for (const m of v.methods) {
    const off = m.available ? '' : ' <span class="note">(not set up on this platform)</span>';
    if (m.provider === 'email') {
      sections.push(
        `<section id="email"><h2>${labels.email}</h2>${off}` +
          (m.available
            ? `<form method="post" action="/_svc/auth/email"><input type="hidden" name="next" value="${escapeHtml(v.next)}">` +
              `<label>Email address <input type="email" name="email" required autocomplete="email"></label><button type="submit">Email me a sign-in link</button></form>`
            : '') +
          '</section>',
      );
    } else if (m.provider === 'passkey') {
      sections.push(
        `<section id="passkey"><h2>${labels.passkey}</h2><button type="button" id="passkey-sign-in">Sign in with a passkey</button></section>`,
      );
    } else if (m.provider === 'owner') {
      sections.push(
        `<section id="owner"><h2>${labels.owner}</h2><p class="note">The owner signs in through the platform: run <code>svc open ${escapeHtml(v.app)}</code> ` +
          'or choose Open in the console, which opens this app already signed in.</p></section>',
      );
    } else {
      sections.push(
        `<section id="${m.provider}"><h2>${labels[m.provider]}</h2>${off}` +
          (m.available
            ? `<a class="button" href="/_svc/auth/${m.provider}/start?next=${nextQ}">Continue with ${labels[m.provider].toLowerCase()}</a>`
            : '') +
          '</section>',
      );
    }
  }
  const who = v.signedIn
    ? `<p id="signed-in">Signed in as <strong>${escapeHtml(v.signedIn.email || v.signedIn.name || v.signedIn.subject)}</strong> (${escapeHtml(labels[v.signedIn.provider])}).</p>` +
      (v.canAddPasskey ? '<p><button type="button" id="passkey-add">Add a passkey for next time</button></p>' : '') +
      '<form method="post" action="/_svc/auth/logout"><button type="submit">Sign out</button></form>'
    : '';
  const notice = v.notice ? `<p class="error" id="notice">${escapeHtml(v.notice)}</p>` : '<p class="error" id="notice" hidden></p>';
  const main = `<h1>Sign in to ${escapeHtml(v.app)}</h1>${notice}${who}${sections.join('')}`;
  return shell(`Sign in to ${v.app}`, main, loginScript(v.next));
}

function loginScript(next: string): string {
  // JSON.stringify of a safe path; `<` escaped so it cannot close the script element.
  const nextJs = JSON.stringify(next).replace(/</g, '\\u003c');
  return `(function(){
var next=${nextJs};
var notice=document.getElementById('notice');
function fail(m){notice.textContent=m;notice.hidden=false;}
function post(path,body){return fetch(path,{method:'POST',credentials:'same-origin',headers:{'content-type':'application/json'},body:JSON.stringify(body)}).then(function(r){return r.json().then(function(j){if(!r.ok)throw new Error(j.error||('status '+r.status));return j;});});}
var m=/^#(token|handoff)=([A-Za-z0-9_-]+)/.exec(location.hash);
if(m){history.replaceState(null,'',location.pathname+location.search);
post('/_svc/auth/redeem',{token:m[2]}).then(function(j){location.replace(j.next||next);},function(e){fail('This sign-in link cannot be used: '+e.message+'. Ask for a new one below.');});}
var s=document.getElementById('passkey-sign-in');
if(s)s.onclick=function(){post('/_svc/auth/passkey/login/options',{}).then(function(o){return navigator.credentials.get({publicKey:PublicKeyCredential.parseRequestOptionsFromJSON(o.options)}).then(function(c){return post('/_svc/auth/passkey/login/verify',{challengeId:o.challengeId,response:c.toJSON()});});}).then(function(){location.replace(next);},function(e){fail('Passkey sign-in failed: '+e.message);});};
var a=document.getElementById('passkey-add');
if(a)a.onclick=function(){post('/_svc/auth/passkey/register/options',{}).then(function(o){return navigator.credentials.create({publicKey:PublicKeyCredential.parseCreationOptionsFromJSON(o.options)}).then(function(c){return post('/_svc/auth/passkey/register/verify',{challengeId:o.challengeId,response:c.toJSON()});});}).then(function(){a.textContent='Passkey added';a.disabled=true;},function(e){fail('Adding a passkey failed: '+e.message);});};
})();`;
}

/** After the email form: the same words whether or not the address may sign in. */
export function linkSentPage(app: string, email: string, next: string): RenderedPage {
  return shell(
    `Check your email`,
    `<h1>Check your email</h1><p id="sent">If <strong>${escapeHtml(email)}</strong> may sign in to ${escapeHtml(app)}, a sign-in link is on its way. ` +
      `The link keeps working; you can ask for another one at any time.</p><p><a href="${escapeHtml(loginUrl(next))}">Back to sign-in</a></p>`,
  );
}

/** Signed in, but as someone this path does not admit. */
export function deniedPage(app: string, who: Identity, next: string): RenderedPage {
  return shell(
    'Not allowed',
    `<h1>Not allowed</h1><p id="denied">You are signed in to ${escapeHtml(app)} as <strong>${escapeHtml(who.email || who.subject)}</strong>, ` +
      `which this page does not admit.</p><p><a class="button" href="${escapeHtml(loginUrl(next))}">Sign in another way</a></p>` +
      '<form method="post" action="/_svc/auth/logout"><button type="submit">Sign out</button></form>',
  );
}

export function logoutPage(app: string): RenderedPage {
  return shell(
    'Sign out',
    `<h1>Sign out of ${escapeHtml(app)}?</h1><form method="post" action="/_svc/auth/logout"><button type="submit">Sign out</button></form>`,
  );
}

export function signedOutPage(app: string): RenderedPage {
  return shell(
    'Signed out',
    `<h1>Signed out</h1><p id="signed-out">You are signed out of ${escapeHtml(app)}.</p><p><a href="/">Back to the app</a></p>`,
  );
}
