// Checks what a .vsix would ship: only the bundle, manifest, README, licence and changelog;
// no tests, sources, source maps, node_modules, env files or anything that looks like a key.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

const vsix = process.argv[2] ?? 'kernelevo.vsix';

/** Reads a zip's central directory (no dependency needed for a listing). */
function entries(buffer) {
  const eocd = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) {
    throw new Error(`${vsix} is not a zip file`);
  }
  const count = buffer.readUInt16LE(eocd + 10);
  let at = buffer.readUInt32LE(eocd + 16);
  const out = [];
  for (let i = 0; i < count; i++) {
    const method = buffer.readUInt16LE(at + 10);
    const compressed = buffer.readUInt32LE(at + 20);
    const nameLength = buffer.readUInt16LE(at + 28);
    const extraLength = buffer.readUInt16LE(at + 30);
    const commentLength = buffer.readUInt16LE(at + 32);
    const local = buffer.readUInt32LE(at + 42);
    const name = buffer.toString('utf8', at + 46, at + 46 + nameLength);
    const dataStart = local + 30 + buffer.readUInt16LE(local + 26) + buffer.readUInt16LE(local + 28);
    const raw = buffer.subarray(dataStart, dataStart + compressed);
    out.push({ name, read: () => (method === 8 ? inflateRawSync(raw) : raw) });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return out;
}

const files = entries(readFileSync(vsix));
const names = files.map((f) => f.name).sort();
const problems = [];

const allowed = new Set([
  '[Content_Types].xml',
  'extension.vsixmanifest',
  'extension/package.json',
  'extension/README.md',
  'extension/LICENSE.txt',
  'extension/LICENSE',
  'extension/CHANGELOG.md',
  'extension/changelog.md',
  'extension/readme.md',
  'extension/dist/extension.js',
]);
for (const name of names) {
  if (!allowed.has(name)) {
    problems.push(`unexpected file in the package: ${name}`);
  }
}
if (!names.includes('extension/dist/extension.js')) {
  problems.push('the bundled extension (dist/extension.js) is missing');
}
for (const bad of [/\.map$/, /(^|\/)test/i, /node_modules/, /(^|\/)\.env/, /\.ts$/, /\.vsix$/]) {
  for (const name of names.filter((n) => bad.test(n))) {
    problems.push(`${name} must not ship (${bad})`);
  }
}
const keyPatterns = [/sk-ant-[A-Za-z0-9_-]{10,}/, /sk-(proj-)?[A-Za-z0-9]{32,}/, /AKIA[0-9A-Z]{16}/, /-----BEGIN [A-Z ]*PRIVATE KEY-----/];
for (const file of files) {
  const text = file.read().toString('utf8');
  for (const pattern of keyPatterns) {
    if (pattern.test(text)) {
      problems.push(`${file.name} contains something that looks like a secret (${pattern})`);
    }
  }
  if (file.name === 'extension/dist/extension.js' && /sourceMappingURL/.test(text)) {
    problems.push('the bundle points at a source map');
  }
}
const manifest = JSON.parse(files.find((f) => f.name === 'extension/package.json').read().toString('utf8'));
for (const key of Object.keys(manifest.contributes?.configuration?.properties ?? {})) {
  if (/key|secret|password/i.test(key)) {
    problems.push(`setting ${key} would invite users to put a secret in settings`);
  }
}

// vsce's own view of the package agrees.
try {
  const listed = execFileSync('npx', ['--no-install', 'vsce', 'ls', '--no-dependencies'], { encoding: 'utf8' }).trim().split('\n').sort();
  const packaged = new Set(names.map((n) => n.toLowerCase().replace(/^extension\/license\.txt$/, 'extension/license')));
  for (const name of listed) {
    if (!packaged.has(`extension/${name}`.toLowerCase())) {
      problems.push(`vsce ls lists ${name}, which is not in ${vsix}`);
    }
  }
} catch (error) {
  problems.push(`vsce ls failed: ${error.message}`);
}

if (problems.length) {
  console.error(`${vsix}: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`${vsix}: ${names.length} entries, all expected:\n  ${names.join('\n  ')}`);
