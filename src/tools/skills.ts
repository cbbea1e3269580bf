/**
 * Skills: folders of instructions, each offered to the model as a read tool that returns its text.
 * Never runs code from a skill.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeDeclaration, TOOL_NAME } from '../manifest/schema.js';
import type { ToolSpec } from '../types/index.js';
import { yamlParse } from '../util/yaml.js';
import { makeToolSpec } from './spec.js';

export interface SkillSet {
  tools: ToolSpec[];
  /** Why a skill file did not become a tool (shadowing, bad front matter): recorded in the run's trace. */
  notes: string[];
  /** Changes when any skill file changes (cache key). */
  signature: string;
}

/** Skills folder: KEEL_SKILLS, else KEEL_HOME/skills. */
export function skillsDir(home: string, env: NodeJS.ProcessEnv): string {
  return env.KEEL_SKILLS || join(home, 'skills');
}

export function skillsSignature(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `${f}:${statSync(join(dir, f)).mtimeMs}`)
    .join('|');
}

const FRONT = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/**
 * Skill files (markdown with `name` and `description` front matter) become read tools returning
 * their instructions. R25: a skill may not take a name already in the pool — decided here, per
 * turn, from the pool itself, not from a fixed list.
 */
export function loadSkills(dir: string, pool: ReadonlyMap<string, ToolSpec>): SkillSet {
  const out: SkillSet = { tools: [], notes: [], signature: skillsSignature(dir) };
  if (!out.signature) return out;
  const seen = new Set<string>();
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.md'))
    .sort()) {
    const file = join(dir, f);
    const m = FRONT.exec(readFileSync(file, 'utf8'));
    let meta: { name?: unknown; description?: unknown } = {};
    try {
      meta = (m ? yamlParse(m[1]) : {}) ?? {};
    } catch {
      out.notes.push(`skill ${f} skipped: its front matter is not valid YAML`);
      continue;
    }
    const name = typeof meta.name === 'string' ? meta.name : '';
    if (!m || !name || typeof meta.description !== 'string') {
      out.notes.push(`skill ${f} skipped: it needs front matter with name and description`);
      continue;
    }
    if (!TOOL_NAME.test(name)) {
      out.notes.push(`skill ${f} skipped: name '${name}' must be lowercase letters, digits and _`);
      continue;
    }
    const taken = pool.get(name);
    if (taken || seen.has(name)) {
      out.notes.push(
        `skill ${name} (${f}) skipped: the name is already in the pool (${taken ? `from ${taken.plugin === 'core' ? 'the core' : `plugin ${taken.plugin}`}` : 'another skill'})`,
      );
      continue;
    }
    seen.add(name);
    const body = m[2].trim();
    out.tools.push(
      makeToolSpec(
        {
          name,
          description: `Skill: ${meta.description} (returns step-by-step instructions to follow)`,
          parameters: { type: 'object', properties: {}, additionalProperties: false },
          execute: () => body,
        },
        'skills',
        normalizeDeclaration({ effect: 'read' }),
      ),
    );
  }
  return out;
}
