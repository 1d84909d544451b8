// Copies the artifacts of a directory store (what SVC_ARTIFACT_DIR, or the chart's ReadWriteMany
// claim, held before an object store was configured) into the configured object store:
//   node dist/api/migrate-artifacts.js [--allow-refused] DIR
// Idempotent: what the bucket has is skipped, so it can run in every API pod as it starts (the
// chart's init container while api.artifacts.existingClaim is still given) and be run again after
// a failure. A file whose bytes are not its name is reported and left out; the exit code is then 1,
// unless --allow-refused (the init container's: a corrupt file must not keep every API pod from
// starting; its log says which). A DIR without sha256/ is an error, never "nothing to copy".
import { describeStoreError, S3ArtifactStore } from '../lib/artifacts/s3-store.js';
import { loadConfigOrExit } from '../lib/config.js';
import { createLogger } from '../lib/logger.js';

const config = loadConfigOrExit('artifacts-migration');
const log = createLogger('artifacts-migration', config.logLevel);
const args = process.argv.slice(2);
const allowRefused = args[0] === '--allow-refused';
const from = allowRefused ? args[1] : args[0];
const objectStore = config.deploys.objectStore;
if (!from || !objectStore) {
  console.error(
    !from
      ? 'usage: migrate-artifacts [--allow-refused] DIR   (DIR holds sha256/<hex> files, as SVC_ARTIFACT_DIR did)'
      : 'no object store is configured: set SVC_ARTIFACT_S3_ENDPOINT, _BUCKET, _ACCESS_KEY_ID and _SECRET_ACCESS_KEY',
  );
  process.exit(2);
}
const store = new S3ArtifactStore(objectStore, config.deploys.artifactDir);
try {
  await store.ensureBucket();
  const started = Date.now();
  const result = await store.migrateDirectory(from, (line) => log.info(`Copied ${line}`));
  for (const r of result.refused) log.error(`Not copied: ${r}`);
  log.info(
    { ...result, refused: result.refused.length, ms: Date.now() - started },
    `Artifacts of ${from} in s3://${objectStore.bucket}/${objectStore.prefix}: ${result.copied} copied, ${result.present} there already, ${result.refused.length} refused`,
  );
  if (result.refused.length && !allowRefused) process.exitCode = 1;
} catch (err) {
  log.error({ err }, `Moving the artifacts into the object store failed: ${describeStoreError(err)}; run it again to go on`);
  process.exitCode = 1;
} finally {
  store.close();
}
