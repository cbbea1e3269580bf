/**
 * Packages only some applications need, which Keel therefore does not install: they are optional
 * peer dependencies (package.json `peerDependencies` + `peerDependenciesMeta`, and devDependencies at
 * the same versions so this repository's own tests have them). Each loads on first use, through
 * `optionalImport`, and a missing one is a KeelError ('config') that names what to install and what
 * needs it; the CLI prints it and exits 2.
 */
import { KeelError } from './errors.js';

/**
 * Each optional package at the version Keel is built and tested against, grouped by the feature that
 * needs it: a feature's packages are installed together. package.json's peerDependencies say the same
 * (a test compares them).
 */
export const OPTIONAL_PACKAGES = {
  postgres: { pg: '8.23.1', 'pg-boss': '10.4.2' },
  otlp: {
    '@opentelemetry/exporter-trace-otlp-http': '0.223.1',
    '@opentelemetry/resources': '2.12.1',
    '@opentelemetry/sdk-trace-base': '2.12.1',
  },
  tokens: { 'ai-tokenizer': '1.0.6' },
  providers: { '@mariozechner/pi-ai': '0.73.1' },
  push: { 'web-push': '3.6.7' },
  policy: { '@cedar-policy/cedar-wasm': '4.13.0' },
} as const;

type Groups = typeof OPTIONAL_PACKAGES;
export type OptionalPackage = { [G in keyof Groups]: keyof Groups[G] }[keyof Groups] & string;

function groupOf(pkg: OptionalPackage): Record<string, string> {
  for (const g of Object.values(OPTIONAL_PACKAGES)) if (pkg in g) return g;
  throw new Error(`${pkg} is not one of Keel's optional packages`);
}

/** The command that adds a package and the ones installed with it, e.g. `npm install pg@8.23.1 pg-boss@10.4.2`. */
export function installCommand(pkg: OptionalPackage): string {
  return `npm install ${Object.entries(groupOf(pkg))
    .map(([name, version]) => `${name}@${version}`)
    .join(' ')}`;
}

/** The error for a missing optional package: what needs it, and the command that adds it. */
export function missingPackage(pkg: OptionalPackage, what: string): KeelError {
  return new KeelError('config', `${what} needs the package ${pkg}, which is not installed: ${installCommand(pkg)}`);
}

/** True when `err` says that this package (or one installed with it) itself cannot be found. */
export function isMissing(err: unknown, pkg: OptionalPackage): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || (e.code !== 'ERR_MODULE_NOT_FOUND' && e.code !== 'MODULE_NOT_FOUND') || typeof e.message !== 'string') return false;
  const names = Object.keys(groupOf(pkg));
  // Node: "Cannot find package 'pg' imported from …", "Cannot find module 'pg'"; a subpath of it counts too.
  const m = /Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)[^']*'/.exec(e.message);
  return m !== null && names.includes(m[1]);
}

/**
 * Loads an optional package on first use. `load` is the import itself (`() => import('pg')`), written
 * where it is used so that it resolves from there and keeps its types; a package that is not
 * installed becomes `missingPackage(pkg, what)`. Any other failure (a package that is installed but
 * broken, or a dependency of it missing) is thrown as it is.
 *
 *   const pg = await optionalImport('pg', 'the PostgreSQL store (--store postgres://…)', () => import('pg'));
 */
export async function optionalImport<T>(pkg: OptionalPackage, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isMissing(err, pkg)) throw missingPackage(pkg, what);
    throw err;
  }
}

const resolved = new Map<string, boolean>();

/** Whether an optional package can be loaded from here, without loading it (for features that are on only when it is). */
export function isInstalled(pkg: OptionalPackage): boolean {
  let found = resolved.get(pkg);
  if (found === undefined) {
    try {
      import.meta.resolve(pkg);
      found = true;
    } catch {
      found = false;
    }
    resolved.set(pkg, found);
  }
  return found;
}
