// The cert-manager plan (lib/certificates/cert-manager-plan.ts) from plain objects: a verified name
// gets a Certificate whose secretTemplate makes its Secret one ingress-auth serves; an unverified
// name (or one whose claim is another namespace's) gets none; the Certificate's conditions become the
// Domain's status.certificate with an event on each transition only (issued or renewed once per
// notAfter; Ready False before an issuance is Pending, not a failure); a certificate whose Secret is
// still served stays in the status while cert-manager issues anew or fails to; a Certificate and its
// Secret go on positive evidence only (preconditions: the Certificate observed), and a name that moved
// gets a new Certificate.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  certificateMatches,
  certificateStatusOf,
  desiredCertificate,
  planCertManager,
  type CertManagerCertificate,
  type CertManagerStep,
  type IssuerRef,
} from '../../lib/certificates/cert-manager-plan.js';
import { certificateAnnotations, certificateLabel, certificateSecretName } from '../../lib/certificates/contract.js';
import type { CertificateStatus, ObservedClaim, ObservedDomain } from '../../lib/certificates/plan.js';
import { loadComponentConfig } from '../../lib/config.js';

const namespace = 'svc-certificates';
const issuerRef: IssuerRef = { kind: 'ClusterIssuer', name: 'letsencrypt', group: 'cert-manager.io' };
const managedBy = { 'app.kubernetes.io/managed-by': 'svc-api' };

const domain = (name: string, o: Partial<ObservedDomain> = {}): ObservedDomain => ({
  name,
  namespace: 'acct-a',
  app: 'shop',
  phase: 'Verified',
  certificate: undefined,
  ...o,
});
const claims = (...c: Array<[string, Partial<ObservedClaim>?]>) =>
  new Map(c.map(([name, o]) => [name, { namespace: 'acct-a', accountId: 'acc-a', verified: true, ...o }]));

/** The Certificate the API would write, with cert-manager's status. */
const written = (d: Pick<ObservedDomain, 'name' | 'namespace'>, status?: CertManagerCertificate['status']): CertManagerCertificate => {
  const c = desiredCertificate(d, { namespace, issuerRef, managedBy });
  return {
    ...c,
    metadata: { ...c.metadata, uid: `uid-${d.name}-${d.namespace}`, resourceVersion: '41' },
    ...(status ? { status } : {}),
  };
};
const preconditionsOf = (d: Pick<ObservedDomain, 'name' | 'namespace'>) => ({ uid: `uid-${d.name}-${d.namespace}`, resourceVersion: '41' });
const now = new Date('2026-12-01T00:00:00Z');

const plan = (o: {
  domains: ObservedDomain[];
  claims: Map<string, ObservedClaim>;
  certificates?: CertManagerCertificate[];
  secrets?: Array<{ name: string; domain: string; namespace: string | undefined }>;
}) => planCertManager({ certificates: [], secrets: [], namespace, issuerRef, managedBy, now, ...o });

const kinds = (steps: CertManagerStep[]) => steps.map((s) => s.kind);
const ready = (notAfter: string): CertManagerCertificate['status'] => ({
  conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired' }],
  notBefore: '2026-11-01T00:00:00Z',
  notAfter,
  renewalTime: '2027-01-01T00:00:00Z',
});

describe('cert-manager plan: the Certificate', () => {
  it('is what ingress-auth serves: named and secretName after the domain, labelled and annotated through secretTemplate', () => {
    const c = desiredCertificate({ name: 'shop.example', namespace: 'acct-a' }, { namespace, issuerRef, managedBy });
    assert.equal(c.apiVersion, 'cert-manager.io/v1');
    assert.equal(c.kind, 'Certificate');
    assert.equal(c.metadata.name, certificateSecretName('shop.example'));
    assert.equal(c.metadata.namespace, namespace);
    assert.deepEqual(c.spec, {
      secretName: certificateSecretName('shop.example'),
      dnsNames: ['shop.example'],
      issuerRef,
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      secretTemplate: {
        labels: { [certificateLabel]: 'cert-manager' },
        annotations: { [certificateAnnotations.domain]: 'shop.example', [certificateAnnotations.namespace]: 'acct-a' },
      },
    });
    assert.equal(c.metadata.labels?.[certificateLabel], 'cert-manager');
    assert.equal(c.metadata.annotations?.[certificateAnnotations.namespace], 'acct-a');
  });

  it('matches an observed one with what the API owns the same, whatever cert-manager added', () => {
    const d = { name: 'shop.example', namespace: 'acct-a' };
    const desired = desiredCertificate(d, { namespace, issuerRef, managedBy });
    const observed = {
      ...written(d, ready('2027-02-01T00:00:00Z')),
      metadata: { ...desired.metadata, generation: 3, labels: { ...desired.metadata.labels, extra: 'x' } },
    };
    assert.ok(certificateMatches(observed, desired));
    assert.ok(!certificateMatches({ ...observed, spec: { ...observed.spec, issuerRef: { ...issuerRef, name: 'staging' } } }, desired));
    assert.ok(!certificateMatches({ ...observed, spec: { ...observed.spec, dnsNames: ['other.example'] } }, desired));
  });
});

describe('cert-manager plan: what to write', () => {
  it('writes a Certificate for a verified name only, and says Pending until cert-manager reports', () => {
    const steps = plan({
      domains: [domain('shop.example'), domain('pending.example', { phase: 'Pending' }), domain('theirs.example')],
      claims: claims(['shop.example'], ['pending.example', { verified: false }], ['theirs.example', { namespace: 'acct-b' }]),
    });
    assert.deepEqual(kinds(steps), ['apply', 'status']);
    const apply = steps[0] as Extract<CertManagerStep, { kind: 'apply' }>;
    assert.equal(apply.domain.name, 'shop.example');
    const status = steps[1] as Extract<CertManagerStep, { kind: 'status' }>;
    assert.equal(status.status.phase, 'Pending');
    assert.equal(status.status.reason, 'Requested');
    assert.equal(status.event, undefined, 'no event for a request');
  });

  it('leaves a Certificate as it should be alone, and a Domain whose status says it already', () => {
    const d = domain('shop.example');
    const c = written(d, ready('2027-02-01T00:00:00Z'));
    const first = plan({ domains: [d], claims: claims(['shop.example']), certificates: [c] });
    assert.deepEqual(kinds(first), ['status']);
    const s = first[0] as Extract<CertManagerStep, { kind: 'status' }>;
    assert.equal(s.status.phase, 'Issued');
    assert.equal(s.status.notAfter, '2027-02-01T00:00:00.000Z', 'as the ACME issuer writes times');
    assert.equal(s.status.renewAfter, '2027-01-01T00:00:00.000Z');
    assert.equal(s.status.secretName, certificateSecretName('shop.example'));
    assert.equal(s.event?.type, 'certificate.issued');
    assert.equal(s.accountId, 'acc-a');
    const again = plan({ domains: [{ ...d, certificate: s.status }], claims: claims(['shop.example']), certificates: [c] });
    assert.deepEqual(again, []);
  });

  it('rewrites a Certificate whose issuer changed', () => {
    const d = domain('shop.example');
    const c = written(d, ready('2027-02-01T00:00:00Z'));
    const old = { ...c, spec: { ...c.spec, issuerRef: { ...issuerRef, name: 'old' } } };
    const steps = plan({ domains: [d], claims: claims(['shop.example']), certificates: [old] });
    assert.equal(steps[0]?.kind, 'apply');
  });

  it('replaces a Certificate issued for another namespace: the name moved', () => {
    const d = domain('shop.example', { namespace: 'acct-b' });
    const theirs = written({ name: 'shop.example', namespace: 'acct-a' }, ready('2027-02-01T00:00:00Z'));
    const steps = plan({
      domains: [d],
      claims: claims(['shop.example', { namespace: 'acct-b', accountId: 'acc-b' }]),
      certificates: [theirs],
    });
    assert.deepEqual(kinds(steps), ['delete', 'apply', 'status']);
    assert.deepEqual(steps[0], {
      kind: 'delete',
      name: certificateSecretName('shop.example'),
      domain: 'shop.example',
      namespace: 'acct-a',
      preconditions: preconditionsOf({ name: 'shop.example', namespace: 'acct-a' }),
    });
    assert.equal(
      (steps[1] as Extract<CertManagerStep, { kind: 'apply' }>).certificate.spec?.secretTemplate?.annotations?.[
        certificateAnnotations.namespace
      ],
      'acct-b',
    );
    assert.equal((steps[2] as Extract<CertManagerStep, { kind: 'status' }>).status.phase, 'Pending');
  });
});

describe('cert-manager plan: what to delete', () => {
  const c = written({ name: 'gone.example', namespace: 'acct-a' });
  it('deletes the Certificate of a name whose claim is gone, unverified or another namespace’s', () => {
    for (const claim of [claims(), claims(['gone.example', { verified: false }]), claims(['gone.example', { namespace: 'acct-b' }])]) {
      const steps = plan({ domains: [], claims: claim, certificates: [c] });
      assert.deepEqual(steps, [
        {
          kind: 'delete',
          name: certificateSecretName('gone.example'),
          domain: 'gone.example',
          namespace: 'acct-a',
          preconditions: preconditionsOf({ name: 'gone.example', namespace: 'acct-a' }),
        },
      ]);
    }
  });

  it('deletes it when its Domain is cached in another phase, and a status left behind is cleared', () => {
    const d = domain('gone.example', { phase: 'Misconfigured', certificate: { phase: 'Issued', reason: 'Issued' } });
    const steps = plan({ domains: [d], claims: claims(['gone.example']), certificates: [c] });
    assert.deepEqual(kinds(steps), ['delete', 'clear']);
  });

  it('keeps it while the claim is verified and the cache has no Domain (behind, or empty)', () => {
    assert.deepEqual(plan({ domains: [], claims: claims(['gone.example']), certificates: [c] }), []);
  });

  it('never touches a Certificate that is not the API’s (its name is not its domain’s)', () => {
    const foreign = { ...c, metadata: { ...c.metadata, name: 'platform-wildcard' } };
    assert.deepEqual(plan({ domains: [], claims: claims(), certificates: [foreign] }), []);
  });

  it('deletes a Secret left without its Certificate only when its name is no longer its namespace’s', () => {
    const secret = { name: certificateSecretName('gone.example'), domain: 'gone.example', namespace: 'acct-a' };
    assert.deepEqual(plan({ domains: [], claims: claims(), secrets: [secret] }), [
      { kind: 'deleteSecret', name: secret.name, domain: 'gone.example', namespace: 'acct-a' },
    ]);
    assert.deepEqual(plan({ domains: [], claims: claims(['gone.example']), secrets: [secret] }), []);
    assert.deepEqual(
      kinds(plan({ domains: [], claims: claims(), certificates: [c], secrets: [secret] })),
      ['delete'],
      'with its Certificate',
    );
  });
});

describe('cert-manager plan: status and events', () => {
  const d = domain('shop.example');
  const status = (c: CertManagerCertificate | undefined, prev?: CertificateStatus) => certificateStatusOf(c, prev, issuerRef);

  it('is Pending while cert-manager issues, not Failed (Ready False DoesNotExist at first)', () => {
    const s = status(
      written(d, {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist' },
          { type: 'Issuing', status: 'True', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist' },
        ],
      }),
    );
    assert.equal(s.phase, 'Pending');
    assert.equal(s.reason, 'Issuing');
  });

  it('is Failed with the reason of a failed issuance, and told once per attempt', () => {
    const failed = (at: string) =>
      written(d, {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'DoesNotExist' },
          {
            type: 'Issuing',
            status: 'False',
            reason: 'Failed',
            message: 'The certificate request has failed to complete and will be retried: 403 unauthorized',
          },
        ],
        lastFailureTime: at,
      });
    const first = plan({ domains: [d], claims: claims(['shop.example']), certificates: [failed('2026-11-28T01:00:00Z')] });
    const s = first[0] as Extract<CertManagerStep, { kind: 'status' }>;
    assert.equal(s.status.phase, 'Failed');
    assert.equal(s.status.reason, 'Failed');
    assert.match(s.status.message ?? '', /403 unauthorized/);
    assert.equal(s.event?.type, 'certificate.failed');
    const told = { ...d, certificate: s.status };
    assert.deepEqual(plan({ domains: [told], claims: claims(['shop.example']), certificates: [failed('2026-11-28T01:00:00Z')] }), []);
    const retry = plan({ domains: [told], claims: claims(['shop.example']), certificates: [failed('2026-11-28T02:00:00Z')] });
    assert.equal(
      (retry[0] as Extract<CertManagerStep, { kind: 'status' }>).event?.type,
      'certificate.failed',
      'the next attempt failed too',
    );
  });

  it('is Pending with Ready’s reason when it is not ready and no issuance failed (cert-manager’s first word on a new Certificate)', () => {
    const notReady = written(d, {
      conditions: [{ type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist' }],
    });
    const s = status(notReady);
    assert.deepEqual(
      [s.phase, s.reason, s.message],
      ['Pending', 'DoesNotExist', 'cert-manager has not issued the certificate yet: Issuing certificate as Secret does not exist'],
    );
    const steps = plan({ domains: [d], claims: claims(['shop.example']), certificates: [notReady] });
    assert.deepEqual(kinds(steps), ['status']);
    assert.equal((steps[0] as Extract<CertManagerStep, { kind: 'status' }>).event, undefined, 'no certificate.failed');
  });

  it('tells a renewal (a new notAfter) as certificate.renewed, a failed renewal as Issued with the failure', () => {
    const issued = status(written(d, ready('2027-02-01T00:00:00Z')));
    const renewed = plan({
      domains: [{ ...d, certificate: issued }],
      claims: claims(['shop.example']),
      certificates: [written(d, ready('2027-05-01T00:00:00Z'))],
    })[0] as Extract<CertManagerStep, { kind: 'status' }>;
    assert.equal(renewed.status.reason, 'Renewed');
    assert.equal(renewed.event?.type, 'certificate.renewed');
    const renewalFailed = status(
      written(d, {
        ...ready('2027-02-01T00:00:00Z'),
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Ready' },
          { type: 'Issuing', status: 'False', reason: 'Failed', message: 'rate limited' },
        ],
        lastFailureTime: '2027-01-02T00:00:00Z',
      }),
      issued,
    );
    assert.deepEqual([renewalFailed.phase, renewalFailed.reason, renewalFailed.notAfter], ['Issued', 'Failed', '2027-02-01T00:00:00.000Z']);
    assert.match(renewalFailed.message ?? '', /^the renewal failed: rate limited/);
  });

  it('reads a status with nulls (a merge patch’s removals, as read back) as the one written: nothing again', () => {
    const notReady = written(d, {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'x' },
        { type: 'Issuing', status: 'False', reason: 'Failed', message: 'y' },
      ],
      lastFailureTime: '2026-11-28T01:00:00Z',
    });
    const first = plan({ domains: [d], claims: claims(['shop.example']), certificates: [notReady] })[0] as Extract<
      CertManagerStep,
      { kind: 'status' }
    >;
    assert.equal(first.event?.type, 'certificate.failed');
    const readBack = { ...first.status, notAfter: null, renewAfter: null, secretName: null, retryAfter: null };
    assert.deepEqual(
      plan({
        domains: [{ ...d, certificate: readBack as unknown as CertificateStatus }],
        claims: claims(['shop.example']),
        certificates: [notReady],
      }),
      [],
    );
  });

  it('keeps the reason of an issued certificate already told (no event after a restart)', () => {
    const issued = { ...status(written(d, ready('2027-02-01T00:00:00Z'))), reason: 'Renewed' };
    assert.equal(status(written(d, ready('2027-02-01T00:00:00Z')), issued).reason, 'Renewed');
    assert.deepEqual(
      plan({
        domains: [{ ...d, certificate: issued }],
        claims: claims(['shop.example']),
        certificates: [written(d, ready('2027-02-01T00:00:00Z'))],
      }),
      [],
    );
  });
});

describe('cert-manager plan: a certificate served while cert-manager issues anew', () => {
  const d = domain('shop.example');
  const served = [{ name: certificateSecretName('shop.example'), domain: 'shop.example', namespace: 'acct-a' }];
  const issued = certificateStatusOf(written(d, ready('2027-02-01T00:00:00Z')), undefined, issuerRef);
  const mine = { ...d, certificate: issued };
  /** The Certificate as rewritten (another issuer in the configuration), cert-manager issuing anew. */
  const reissuing = (status: CertManagerCertificate['status']) => written(d, status);
  const statusStep = (steps: CertManagerStep[]) =>
    steps.find((s): s is Extract<CertManagerStep, { kind: 'status' }> => s.kind === 'status');

  it('rewrites a Certificate whose issuer or secretTemplate changed without touching the status', () => {
    const c = written(d, ready('2027-02-01T00:00:00Z'));
    const otherIssuer = { ...c, spec: { ...c.spec, issuerRef: { ...issuerRef, name: 'old' } } };
    const otherTemplate = { ...c, spec: { ...c.spec, secretTemplate: { labels: { [certificateLabel]: 'cert-manager' } } } };
    for (const old of [otherIssuer, otherTemplate])
      assert.deepEqual(kinds(plan({ domains: [mine], claims: claims(['shop.example']), certificates: [old], secrets: served })), ['apply']);
  });

  it('keeps the served certificate (notAfter, Secret) while cert-manager reissues it, with no event', () => {
    const steps = plan({
      domains: [mine],
      claims: claims(['shop.example']),
      secrets: served,
      certificates: [
        reissuing({
          ...ready('2027-02-01T00:00:00Z'),
          conditions: [
            { type: 'Ready', status: 'False', reason: 'IncorrectIssuer', message: 'Secret was previously issued by a different issuer' },
            { type: 'Issuing', status: 'True', reason: 'IncorrectIssuer', message: 'Secret was previously issued by a different issuer' },
          ],
        }),
      ],
    });
    const s = statusStep(steps)!;
    assert.deepEqual(
      [s.status.phase, s.status.reason, s.status.notAfter, s.status.renewAfter, s.status.secretName],
      ['Issued', 'Reissuing', issued.notAfter, issued.renewAfter, issued.secretName],
    );
    assert.match(
      s.status.message ?? '',
      /served until 2027-02-01T00:00:00.000Z stays while cert-manager issues a new one: .*different issuer/,
    );
    assert.equal(s.event, undefined);
  });

  it('says a failed reissuance on the served certificate, told once, and no second certificate.issued for the same notAfter', () => {
    const failed = reissuing({
      ...ready('2027-02-01T00:00:00Z'),
      conditions: [
        { type: 'Ready', status: 'False', reason: 'IncorrectIssuer', message: 'Secret was previously issued by a different issuer' },
        { type: 'Issuing', status: 'False', reason: 'Failed', message: 'The certificate request has failed: 403' },
      ],
      lastFailureTime: '2026-11-30T00:00:00Z',
    });
    const first = statusStep(plan({ domains: [mine], claims: claims(['shop.example']), certificates: [failed], secrets: served }))!;
    assert.deepEqual(
      [first.status.phase, first.status.reason, first.status.notAfter, first.status.secretName, first.status.lastAttemptAt],
      ['Issued', 'Failed', issued.notAfter, issued.secretName, '2026-11-30T00:00:00.000Z'],
    );
    assert.match(
      first.status.message ?? '',
      /^a new certificate could not be issued: .*403; the one served until 2027-02-01T00:00:00.000Z stays$/,
    );
    assert.equal(first.event?.type, 'certificate.failed');
    const told = { ...d, certificate: first.status };
    assert.deepEqual(plan({ domains: [told], claims: claims(['shop.example']), certificates: [failed], secrets: served }), []);
    // The issuer back as it was: Ready again on the same certificate, which was told already.
    const back = statusStep(
      plan({
        domains: [told],
        claims: claims(['shop.example']),
        certificates: [written(d, ready('2027-02-01T00:00:00Z'))],
        secrets: served,
      }),
    )!;
    assert.deepEqual([back.status.phase, back.status.reason, back.status.notAfter], ['Issued', 'Issued', issued.notAfter]);
    assert.equal(back.event, undefined, 'no second certificate.issued for the same notAfter');
    // The new issuer's certificate: a new notAfter, told as a renewal.
    const renewed = statusStep(
      plan({
        domains: [told],
        claims: claims(['shop.example']),
        certificates: [written(d, ready('2027-03-01T00:00:00Z'))],
        secrets: served,
      }),
    )!;
    assert.deepEqual([renewed.status.reason, renewed.event?.type], ['Renewed', 'certificate.renewed']);
  });

  it('no longer says a certificate whose Secret is gone, or that has expired', () => {
    const issuing = reissuing({
      conditions: [
        { type: 'Ready', status: 'False', reason: 'DoesNotExist' },
        { type: 'Issuing', status: 'True', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist' },
      ],
    });
    const gone = statusStep(plan({ domains: [mine], claims: claims(['shop.example']), certificates: [issuing] }))!;
    assert.deepEqual([gone.status.phase, gone.status.reason, gone.status.notAfter], ['Pending', 'Issuing', undefined]);
    const theirs = [{ ...served[0]!, namespace: 'acct-b' }];
    assert.equal(
      statusStep(plan({ domains: [mine], claims: claims(['shop.example']), certificates: [issuing], secrets: theirs }))!.status.phase,
      'Pending',
      'a Secret made for another namespace is not this Domain’s',
    );
    const expired = certificateStatusOf(issuing, issued, issuerRef, { secret: true, now: new Date('2027-02-02T00:00:00Z') });
    assert.deepEqual([expired.phase, expired.notAfter], ['Pending', undefined]);
  });

  it('tells certificate.issued once per notAfter: a failed renewal in between is no new issuance', () => {
    const renewalFailed: CertificateStatus = {
      ...issued,
      reason: 'Failed',
      message: 'the renewal failed: x',
      lastAttemptAt: '2027-01-02T00:00:00.000Z',
    };
    const steps = plan({
      domains: [{ ...d, certificate: renewalFailed }],
      claims: claims(['shop.example']),
      certificates: [written(d, ready('2027-02-01T00:00:00Z'))],
      secrets: served,
    });
    const s = statusStep(steps)!;
    assert.deepEqual([s.status.phase, s.status.reason, s.status.lastAttemptAt], ['Issued', 'Issued', undefined]);
    assert.equal(s.event, undefined);
  });
});

describe('cert-manager configuration (SVC_CERT_MANAGER_ISSUER)', () => {
  const load = (env: Record<string, string>) =>
    loadComponentConfig('api', { SVC_CERTIFICATES_ISSUER: 'cert-manager', ...env }, { exists: () => false }).certificates;

  it('is an issuerRef: <Kind>[.<group>]/<name>, the group cert-manager.io by default', () => {
    assert.deepEqual(load({ SVC_CERT_MANAGER_ISSUER: 'ClusterIssuer/letsencrypt' }).certManager?.issuerRef, issuerRef);
    assert.deepEqual(load({ SVC_CERT_MANAGER_ISSUER: 'Issuer/team-ca.v2' }).certManager?.issuerRef, {
      kind: 'Issuer',
      name: 'team-ca.v2',
      group: 'cert-manager.io',
    });
    assert.deepEqual(load({ SVC_CERT_MANAGER_ISSUER: 'AWSPCAClusterIssuer.awspca.cert-manager.io/pca' }).certManager?.issuerRef, {
      kind: 'AWSPCAClusterIssuer',
      name: 'pca',
      group: 'awspca.cert-manager.io',
    });
  });

  it('is required with the cert-manager issuer, and refused when it names no issuer', () => {
    assert.throws(() => load({}), /SVC_CERT_MANAGER_ISSUER: required when SVC_CERTIFICATES_ISSUER is cert-manager/);
    assert.throws(() => load({ SVC_CERT_MANAGER_ISSUER: 'letsencrypt' }), /SVC_CERT_MANAGER_ISSUER: must be <Kind>/);
    assert.throws(() => load({ SVC_CERT_MANAGER_ISSUER: 'Certificate/x' }), /has the kinds Issuer and ClusterIssuer/);
    assert.throws(() => load({ SVC_CERT_MANAGER_ISSUER: 'ClusterIssuer/Bad_Name' }), /must be <Kind>/);
  });

  it('is not read for another issuer', () => {
    const c = loadComponentConfig(
      'api',
      { SVC_CERTIFICATES_ISSUER: 'acme', SVC_CERT_MANAGER_ISSUER: 'ClusterIssuer/x' },
      { exists: () => false },
    ).certificates;
    assert.equal(c.certManager, undefined);
  });
});
