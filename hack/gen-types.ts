import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from '../lib/paths.js';
import { generateResourceTypes, generatedTypesPath } from './resource-types.js';

const out = path.join(repoRoot, generatedTypesPath);
await writeFile(out, await generateResourceTypes(repoRoot));
console.log(`wrote ${path.relative(process.cwd(), out)}`);
