/**
 * The Chromium the browser tests drive: KEEL_CHROMIUM when set, else Debian's /usr/bin/chromium
 * (what .ci/run installs), else the headless Chromium that the `@sparticuz/chromium` devDependency
 * ships inside its npm package (Linux x64): its brotli files are unpacked once into a folder under
 * the temporary directory (named by the package's version) and reused by later test processes.
 * Where there is none, the test fails with one line naming what to install — it never skips.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { type BrowserContext, chromium } from 'playwright-core';

export interface TestChromium {
  executablePath: string;
  /** The environment to launch it with (the packaged one needs its own libraries and fonts). */
  env?: Record<string, string>;
  from: 'KEEL_CHROMIUM' | 'system' | '@sparticuz/chromium';
}

/** The flags every browser test launches Chromium with: headless on loopback, nothing fetched from outside. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const SYSTEM = '/usr/bin/chromium';
const INSTALL = 'apt-get install chromium, or set KEEL_CHROMIUM=/path/to/chromium';

export function testChromium(): TestChromium {
  const given = process.env.KEEL_CHROMIUM?.trim();
  if (given) {
    if (!existsSync(given)) throw new Error(`the browser tests need Chromium: KEEL_CHROMIUM=${given} does not exist (${INSTALL})`);
    return { executablePath: given, from: 'KEEL_CHROMIUM' };
  }
  if (existsSync(SYSTEM)) return { executablePath: SYSTEM, from: 'system' };
  const packaged = packagedChromium();
  if (packaged) return packaged;
  throw new Error(`the browser tests need Chromium, and none is installed: ${INSTALL} (@sparticuz/chromium ships one for Linux x64 only)`);
}

/** @sparticuz/chromium's Chromium, unpacked (once) beside its libraries and fonts; undefined where it has none. */
function packagedChromium(): TestChromium | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  let pkg: string;
  try {
    // Its exports give no package.json: from its entry module up to the folder that is the package.
    pkg = createRequire(import.meta.url).resolve('@sparticuz/chromium');
    while (!existsSync(join(pkg, 'bin', 'chromium.br'))) {
      if (dirname(pkg) === pkg) return undefined;
      pkg = dirname(pkg);
    }
  } catch {
    return undefined;
  }
  const src = join(pkg, 'bin');
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string };
  const dir = join(tmpdir(), `keel-chromium-${version}-${process.getuid?.() ?? 0}`);
  if (!existsSync(join(dir, 'chromium'))) unpack(src, dir);
  return {
    executablePath: join(dir, 'chromium'),
    env: { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: join(dir, 'lib'), FONTCONFIG_PATH: dir },
    from: '@sparticuz/chromium',
  };
}

/**
 * Unpacks into a folder of its own, then renames it into place: two test processes may unpack at
 * once, and neither ever sees the other's half-written files.
 */
function unpack(src: string, dir: string): void {
  const work = `${dir}.${process.pid}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const br = (name: string) => brotliDecompressSync(readFileSync(join(src, name)));
  writeFileSync(join(work, 'chromium'), br('chromium.br'), { mode: 0o755 });
  // The NSS and expat libraries it links against (a fresh machine may have none), a font, and
  // SwiftShader (its software GL).
  execFileSync('tar', ['x', '-C', work], { input: br('al2023.tar.br') });
  execFileSync('tar', ['x', '-C', work], { input: br('fonts.tar.br') });
  execFileSync('tar', ['x', '-C', work], { input: br('swiftshader.tar.br') });
  // Its own fonts.conf names the serverless folders it was made for; this one names ours. Without
  // any font, Chromium aborts at the first text it has to find a fallback font for.
  writeFileSync(
    join(work, 'fonts.conf'),
    `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(dir, 'fonts')}</dir>\n  <dir>/usr/share/fonts</dir>\n  <cachedir>${join(dir, 'fontconfig-cache')}</cachedir>\n</fontconfig>\n`,
  );
  try {
    renameSync(work, dir);
  } catch (e) {
    rmSync(work, { recursive: true, force: true });
    if (!existsSync(join(dir, 'chromium'))) throw e;
  }
}

/** The test Chromium, headless with a profile folder of its own, at a desktop size (the console's browser tests). */
export function launchTestBrowser(profile: string, viewport = { width: 1280, height: 800 }): Promise<BrowserContext> {
  const bin = testChromium();
  return chromium.launchPersistentContext(profile, {
    executablePath: bin.executablePath,
    env: bin.env,
    headless: true,
    viewport,
    args: CHROMIUM_ARGS,
  });
}
