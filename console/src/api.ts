// The console's API client: openapi-fetch typed by the generated schema (lib/client/schema.gen.ts,
// decision 0029), on the same origin as the console. No token is ever in this script: the browser
// sends the HttpOnly session cookie itself, and every call carries X-Svc-Console: 1, the header
// without which the API refuses that cookie (its CSRF defence, decision 0031). An answer that is not
// a success becomes a ConsoleError with the API's own message.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../../lib/client/schema.gen.js';

export type App = paths['/apps/{appID}']['get']['responses'][200]['content']['application/json'];
export type Deploy = paths['/deploys/{deployID}']['get']['responses'][200]['content']['application/json'];
export type Build = paths['/builds/{buildID}']['get']['responses'][200]['content']['application/json'];
export type Preview = paths['/apps/{appID}/previews']['get']['responses'][200]['content']['application/json']['previews'][number];
export type Domain = paths['/apps/{appID}/domains']['get']['responses'][200]['content']['application/json']['domains'][number];
export type Database = paths['/databases']['get']['responses'][200]['content']['application/json']['databases'][number];
export type DatabaseRequest = NonNullable<paths['/databases']['post']['requestBody']>['content']['application/json'];
export type VolumeList = paths['/volumes']['get']['responses'][200]['content']['application/json'];
export type Volume = VolumeList['volumes'][number];
export type Sandbox = paths['/sandboxes/{sandboxID}']['get']['responses'][200]['content']['application/json'];
export type Runtime = paths['/runtimes']['get']['responses'][200]['content']['application/json']['runtimes'][number];
export type ExecResult = paths['/sandboxes/{sandboxID}/exec']['post']['responses'][200]['content']['application/json'];
export type ImportPreview = paths['/apps/imports/preview']['get']['responses'][200]['content']['application/json'];
export type ImportRequest = NonNullable<paths['/apps/imports']['post']['requestBody']>['content']['application/json'];
export type Imported = paths['/apps/imports']['post']['responses'][202]['content']['application/json'];
export type Account = paths['/account']['get']['responses'][200]['content']['application/json'];
export type AppEnv = paths['/apps/{appID}/env']['get']['responses'][200]['content']['application/json'];
export type EnvPatch = NonNullable<paths['/apps/{appID}/env']['patch']['requestBody']>['content']['application/json'];
export type Token = paths['/account/tokens']['get']['responses'][200]['content']['application/json']['tokens'][number];
export type TokenRequest = NonNullable<paths['/account/tokens']['post']['requestBody']>['content']['application/json'];
export type TokenCreated = paths['/account/tokens']['post']['responses'][201]['content']['application/json'];
export type TokenAction = NonNullable<TokenRequest['actions']>[number];
export type AccountEvent = paths['/account/events']['get']['responses'][200]['content']['application/json']['events'][number];
export type CliLogin = paths['/cli/logins/{userCode}']['get']['responses'][200]['content']['application/json'];
export type CliLoginState = CliLogin['state'];
export type SignInProviders = paths['/console/providers']['get']['responses'][200]['content']['application/json'];
export type ConsolePasskey = paths['/console/passkeys']['get']['responses'][200]['content']['application/json']['passkeys'][number];
export type CeremonyOptions = paths['/console/passkeys/options']['post']['responses'][200]['content']['application/json'];
export type CliLoginApproval = NonNullable<paths['/cli/logins/{userCode}/approve']['post']['requestBody']>['content']['application/json'];

/** An answer that is not a success, in words: the API's `{"error"}` message, or why there was no answer. */
export class ConsoleError extends Error {
  constructor(
    /** 0 when the API could not be reached. */
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ConsoleError';
  }
}

/** Listeners told when the API says the session is over (401): the console shows sign-in. */
const signedOutListeners = new Set<() => void>();
/** Tells the console the session is over (a 401 on any call). */
export function signedOut(): void {
  for (const listener of signedOutListeners) listener();
}
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/** The API's answer in words, from its status and body text. */
export function errorOfText(status: number, statusText: string, text: string): ConsoleError {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return new ConsoleError(status, body.error);
  } catch {
    // Not the API's JSON (a proxy's page): its status says what there is to say.
  }
  return new ConsoleError(status, `the API answered ${status} ${statusText}`.trim());
}

async function errorOf(response: Response): Promise<ConsoleError> {
  return errorOfText(response.status, response.statusText, await response.text());
}

const consoleMiddleware: Middleware = {
  onRequest({ request }) {
    request.headers.set('X-Svc-Console', '1');
    return request;
  },
  async onResponse({ response }) {
    if (response.ok) return undefined;
    if (response.status === 401) signedOut();
    throw await errorOf(response);
  },
  onError: ({ error }) => new ConsoleError(0, `cannot reach the API: ${error instanceof Error ? error.message : String(error)}`),
};

export const api = createClient<paths>({ baseUrl: '/api', credentials: 'same-origin' });
api.use(consoleMiddleware);

/** The body of a successful answer (every other has thrown a ConsoleError already). */
export async function data<R extends { data?: unknown; response: Response }>(call: Promise<R>): Promise<NonNullable<R['data']>> {
  const { data: body, response } = await call;
  if (body === undefined || body === null) throw new ConsoleError(response.status, 'the API answered with no body');
  return body;
}

/** Every app of the account, following GET /apps's `next_after` cursor 500 at a time (its largest page). */
export async function listAllApps(onPage?: (sofar: App[]) => void): Promise<App[]> {
  const apps: App[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await data(api.GET('/apps', { params: { query: { limit: 500, ...(after === undefined ? {} : { after }) } } }));
    apps.push(...page.apps);
    onPage?.(apps);
    if (!page.next_after) return apps;
    after = page.next_after;
  }
}

/**
 * A call to one of the console's public operations (sign-in), refused by the API without the
 * console's header and Origin. The document cannot describe a public operation's body
 * (api/openapi.ts), so these few are typed here.
 */
async function postPublic<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`/api${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Svc-Console': '1' },
    body: JSON.stringify(body),
  }).catch((err: unknown) => {
    throw new ConsoleError(0, `cannot reach the API: ${err instanceof Error ? err.message : String(err)}`);
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

/** Asks for a sign-in link (the link names this origin, and works at once in this browser). */
export async function requestSignIn(email: string): Promise<string> {
  type Sent = paths['/console/sign-in']['post']['responses'][202]['content']['application/json'];
  return (await postPublic<Sent>('/console/sign-in', { email })).message;
}

export type SignInCodeAnswer = paths['/console/auth']['post']['responses'][200]['content']['application/json'];

/**
 * Presents a mailed sign-in code: signed in (the session cookie is set), or the account to confirm
 * first when the link was asked for in another browser (nothing spent until `confirm`).
 */
export async function presentSignInCode(code: string, confirm: boolean): Promise<SignInCodeAnswer> {
  return postPublic<SignInCodeAnswer>('/console/auth', { code, confirm });
}

/** How an owner may sign in here (public). */
export async function signInProviders(): Promise<SignInProviders> {
  return data(api.GET('/console/providers'));
}

/** The options of a passkey sign-in (discoverable credentials) and the challenge the answer names. */
export async function passkeySignInOptions(): Promise<CeremonyOptions> {
  return postPublic<CeremonyOptions>('/console/passkeys/sign-in/options', {});
}

/** Presents the authenticator's answer: signed in (the session cookie is set). */
export async function signInWithPasskey(challengeId: string, response: unknown): Promise<void> {
  await postPublic('/console/passkeys/sign-in', { challenge_id: challengeId, response });
}

/** Where to send the browser to sign in at the identity provider (the flow is bound to this browser). */
export async function startIdpSignIn(): Promise<string> {
  type Started = paths['/console/idp/start']['post']['responses'][200]['content']['application/json'];
  return (await postPublic<Started>('/console/idp/start', {})).url;
}

/** Presents the provider's callback query: signed in (the session cookie is set). */
export async function finishIdpSignIn(search: string): Promise<void> {
  await postPublic('/console/idp/finish', { search });
}

export async function signOut(): Promise<void> {
  await api.POST('/console/sign-out');
}
