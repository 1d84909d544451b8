// Self-signed certificates made in a test (ECDSA P-256, valid for a day), and the kubernetes.io/tls
// Secret ingress-auth serves one from (lib/certificates/contract.ts): for tests of the TLS listener
// that need no CA.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, webcrypto } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { certificateAnnotations, certificateLabel, certificateSecretName } from '../../lib/certificates/contract.js';

x509.cryptoProvider.set(globalThis.crypto);

export interface Pem {
  cert: string;
  key: string;
}

/** A self-signed certificate (ECDSA P-256) for these DNS names, valid for a day. */
export async function certificateFor(...names: string[]): Promise<Pem> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Date.now().toString(16),
    name: `CN=${names[0]}`,
    notBefore: new Date(Date.now() - 3600_000),
    notAfter: new Date(Date.now() + 86400_000),
    signingAlgorithm: alg,
    keys,
    extensions: [new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value })))],
  });
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'pkcs8' }) as string;
  return { cert: cert.toString('pem'), key };
}

/** The certificate Secret of `domain`, issued for a Domain of `domainNamespace`, as the issuer writes it. */
export function certificateSecret(pem: Pem, domain: string, domainNamespace: string): k8s.V1Secret {
  return {
    metadata: {
      name: certificateSecretName(domain),
      labels: { [certificateLabel]: 'acme' },
      annotations: { [certificateAnnotations.domain]: domain, [certificateAnnotations.namespace]: domainNamespace },
    },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(pem.cert).toString('base64'), 'tls.key': Buffer.from(pem.key).toString('base64') },
  };
}
