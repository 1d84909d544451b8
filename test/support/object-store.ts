// The local object store (versitygw, hack/dev.sh's `s3` component) as tests use it: a bucket of
// their own per test API, so one API's artifact collector never sees another's objects.
import { randomBytes } from 'node:crypto';
import { DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { ObjectStoreConfig } from '../../lib/artifacts/s3-store.js';

/** The local object store's endpoint and key pair (hack/test.sh exports them), when it runs. */
export function localObjectStore(): { endpoint: string; accessKeyId: string; secretAccessKey: string } | undefined {
  const {
    SVC_TEST_S3_ENDPOINT: endpoint,
    SVC_TEST_S3_ACCESS_KEY_ID: accessKeyId,
    SVC_TEST_S3_SECRET_ACCESS_KEY: secretAccessKey,
  } = process.env;
  return endpoint && accessKeyId && secretAccessKey ? { endpoint, accessKeyId, secretAccessKey } : undefined;
}

/** SVC_ARTIFACT_S3_* naming a new bucket on the local object store (the API makes it as it starts). */
export function freshBucketEnv(): Record<string, string> {
  const store = localObjectStore();
  if (!store) throw new Error('no local object store: run the tests through hack/test.sh (make test), which exports SVC_TEST_S3_*');
  return {
    SVC_ARTIFACT_S3_ENDPOINT: store.endpoint,
    SVC_ARTIFACT_S3_BUCKET: `svc-test-${randomBytes(6).toString('hex')}`,
    SVC_ARTIFACT_S3_ACCESS_KEY_ID: store.accessKeyId,
    SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: store.secretAccessKey,
  };
}

/** The store's configuration as the API reads it from freshBucketEnv()'s variables. */
export function objectStoreConfigOf(env: Record<string, string>): ObjectStoreConfig {
  return {
    endpoint: env.SVC_ARTIFACT_S3_ENDPOINT!,
    bucket: env.SVC_ARTIFACT_S3_BUCKET!,
    region: 'us-east-1',
    prefix: '',
    accessKeyId: env.SVC_ARTIFACT_S3_ACCESS_KEY_ID!,
    secretAccessKey: env.SVC_ARTIFACT_S3_SECRET_ACCESS_KEY!,
    pathStyle: true,
  };
}

/** Empties and deletes a bucket of the local object store (a test API's, as it closes). */
export async function dropBucket(bucket: string): Promise<void> {
  const store = localObjectStore();
  if (!store) return;
  const client = new S3Client({
    endpoint: store.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  try {
    for (;;) {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      for (const o of page.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key! }));
      if (!page.IsTruncated) break;
    }
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}
