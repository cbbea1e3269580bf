/**
 * The console's edit-then-approve form (A7) and batch answers (A8), issue 28.
 *
 * A card's calls are edited in a form generated from each tool's JSON Schema when the schema is flat
 * (string, number, integer, boolean and enum properties, and the call uses only those), or in a JSON
 * textarea otherwise. What is posted is turned back into the arguments object here (`editedArguments`)
 * and handed to the one answer path (`Keel.answerApproval`), which checks it against the schema and
 * the plugin's `validate` as it checks a model's call: this file never decides whether an edit is
 * valid. Every value is escaped by Hono JSX; no script is needed (the form works without one).
 */
import type { FC } from 'hono/jsx';
import type { ApprovalRecord, ToolSpec } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';

type Field =
  | { kind: 'string'; name: string; multiline: boolean }
  | { kind: 'number' | 'integer'; name: string }
  | { kind: 'boolean'; name: string }
  | { kind: 'enum'; name: string; options: unknown[] };

type Schema = Record<string, unknown>;
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Keywords a flat form can stand for: anything else (oneOf, patterns of keys, …) gets the JSON textarea. */
const FLAT_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'description', 'title', '$schema']);
const FIELD_KEYWORDS = new Set([
  'type',
  'enum',
  'description',
  'title',
  'default',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'pattern',
  'format',
]);

/**
 * The fields of a flat schema, or undefined when the call needs the JSON textarea: a nested or
 * combined schema, or arguments the form could not show (a key the schema does not declare, a value
 * whose type is not its field's).
 */
export function flatFields(parameters: unknown, args: Record<string, unknown>): Field[] | undefined {
  if (!isRecord(parameters) || (parameters.type !== undefined && parameters.type !== 'object')) return undefined;
  if (Object.keys(parameters).some((k) => !FLAT_KEYWORDS.has(k))) return undefined;
  const props = parameters.properties;
  if (!isRecord(props) || Object.keys(props).length === 0) return undefined;
  const fields: Field[] = [];
  for (const [name, p] of Object.entries(props)) {
    if (!isRecord(p) || Object.keys(p).some((k) => !FIELD_KEYWORDS.has(k))) return undefined;
    const value = args[name];
    if (Array.isArray(p.enum) && p.enum.length > 0 && p.enum.every((o) => o === null || typeof o !== 'object')) {
      if (value !== undefined && !p.enum.some((o) => o === value)) return undefined;
      fields.push({ kind: 'enum', name, options: p.enum });
    } else if (p.type === 'string') {
      if (value !== undefined && typeof value !== 'string') return undefined;
      fields.push({ kind: 'string', name, multiline: typeof value === 'string' && (value.includes('\n') || value.length > 80) });
    } else if (p.type === 'number' || p.type === 'integer') {
      if (value !== undefined && typeof value !== 'number') return undefined;
      fields.push({ kind: p.type, name });
    } else if (p.type === 'boolean') {
      if (value !== undefined && typeof value !== 'boolean') return undefined;
      fields.push({ kind: 'boolean', name });
    } else return undefined;
  }
  if (Object.keys(args).some((k) => !fields.some((f) => f.name === k))) return undefined;
  return fields;
}

/** The form field names of one call: `a.<i>.<property>` (flat form) or `json.<i>` (textarea), by the call's index on the card. */
const fieldName = (i: number, prop: string) => `a.${i}.${prop}`;
const jsonName = (i: number) => `json.${i}`;

const FieldInput: FC<{ i: number; f: Field; value: unknown; required: boolean; id: string }> = ({ i, f, value, required, id }) => {
  const name = fieldName(i, f.name);
  switch (f.kind) {
    case 'string':
      return f.multiline ? (
        <textarea id={id} name={name} rows={4} required={required}>
          {typeof value === 'string' ? value : ''}
        </textarea>
      ) : (
        <input id={id} type="text" name={name} value={typeof value === 'string' ? value : ''} required={required} />
      );
    case 'number':
    case 'integer':
      return (
        <input
          id={id}
          type="number"
          inputmode={f.kind === 'integer' ? 'numeric' : 'decimal'}
          step={f.kind === 'integer' ? '1' : 'any'}
          name={name}
          value={typeof value === 'number' ? String(value) : ''}
          required={required}
        />
      );
    case 'boolean':
      return (
        <select id={id} name={name}>
          {!required && <option value="">(not given)</option>}
          <option value="true" selected={value === true}>
            true
          </option>
          <option value="false" selected={value === false}>
            false
          </option>
        </select>
      );
    case 'enum':
      return (
        <select id={id} name={name}>
          {!required && <option value="">(not given)</option>}
          {f.options.map((o) => (
            // The option's JSON, so a number or a boolean comes back as one.
            <option value={JSON.stringify(o)} selected={o === value}>
              {String(o)}
            </option>
          ))}
        </select>
      );
  }
};

/**
 * A7: the card's "Edit, then approve" form — a field per argument for a flat schema, a JSON textarea
 * otherwise; a tool declared `editable: false` shows why its call cannot be changed.
 */
export const EditForm: FC<{ a: ApprovalRecord; tools: ReadonlyMap<string, ToolSpec>; csrf: string }> = ({ a, tools, csrf }) => {
  const editable = a.items.some((item) => tools.get(item.tool)?.declaration.editable !== false && tools.has(item.tool));
  return (
    <details class="edit">
      <summary>Edit the arguments, then approve</summary>
      <form method="post" action={`/approvals/${a.id}`} class="edit-form">
        <input type="hidden" name="csrf" value={csrf} />
        <input type="hidden" name="edit" value="1" />
        {a.items.map((item, i) => {
          const tool = tools.get(item.tool);
          if (!tool) return <p class="note">{`${item.tool} is not available any more: its call cannot be edited.`}</p>;
          if (tool.declaration.editable === false)
            return <p class="note">{`${item.tool} is declared editable: false — its arguments cannot be changed.`}</p>;
          const schema = tool.parameters as Schema;
          const fields = flatFields(schema, item.args);
          const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
          return (
            <fieldset>
              <legend>{a.items.length > 1 ? `${item.tool} (${item.call_id})` : item.tool}</legend>
              {fields ? (
                fields.map((f) => {
                  const id = `e-${a.id}-${i}-${f.name}`;
                  return (
                    <p class="field">
                      <label for={id}>
                        {f.name}
                        {required.has(f.name) ? ' *' : ''}
                      </label>
                      <FieldInput i={i} f={f} value={item.args[f.name]} required={required.has(f.name)} id={id} />
                    </p>
                  );
                })
              ) : (
                <p class="field">
                  <label for={`e-${a.id}-${i}`}>Arguments (JSON)</label>
                  <textarea id={`e-${a.id}-${i}`} name={jsonName(i)} rows={6} class="json" spellcheck={false}>
                    {JSON.stringify(item.args, null, 2)}
                  </textarea>
                </p>
              )}
            </fieldset>
          );
        })}
        {editable && (
          <div class="buttons">
            <button type="submit" name="decision" value="approve" class="approve">
              Approve as edited
            </button>
          </div>
        )}
      </form>
    </details>
  );
};

/**
 * A7: the arguments a posted edit form stands for, in the shape `answerApproval` takes (one call:
 * its object; several: `{ call_id: {...} }`), or undefined when the form was not an edit. An empty
 * field is left out (a required one is then refused by the schema, naming it); a number field that
 * is not a number is kept as text, so the schema refuses it by name. Invalid JSON is bad_input.
 */
export function editedArguments(
  a: ApprovalRecord,
  tools: ReadonlyMap<string, ToolSpec>,
  data: Record<string, string>,
): Record<string, unknown> | undefined {
  if (data.edit !== '1') return undefined;
  const byCall: Record<string, Record<string, unknown>> = {};
  a.items.forEach((item, i) => {
    const json = data[jsonName(i)];
    if (json !== undefined) {
      let v: unknown;
      try {
        v = JSON.parse(json);
      } catch (err) {
        throw new KeelError(
          'bad_input',
          `arguments${a.items.length > 1 ? `.${item.call_id}` : ''}: not valid JSON (${(err as Error).message})`,
        );
      }
      if (!isRecord(v))
        throw new KeelError('bad_input', `arguments${a.items.length > 1 ? `.${item.call_id}` : ''}: must be one JSON object`);
      byCall[item.call_id] = v;
      return;
    }
    const tool = tools.get(item.tool);
    const fields = tool && tool.declaration.editable !== false ? flatFields(tool.parameters, item.args) : undefined;
    if (!fields) return; // not edited on this form: the call keeps its arguments
    const args: Record<string, unknown> = {};
    for (const f of fields) {
      const raw = data[fieldName(i, f.name)];
      if (raw === undefined || raw === '') continue;
      if (f.kind === 'string') args[f.name] = raw;
      else if (f.kind === 'number' || f.kind === 'integer') args[f.name] = Number.isFinite(Number(raw)) ? Number(raw) : raw;
      else if (f.kind === 'boolean') args[f.name] = raw === 'true' ? true : raw === 'false' ? false : raw;
      else {
        try {
          args[f.name] = JSON.parse(raw);
        } catch {
          args[f.name] = raw;
        }
      }
    }
    byCall[item.call_id] = args;
  });
  if (a.items.length === 1) return byCall[a.items[0].call_id] ?? {};
  return byCall;
}

/** A8: the ids and runs a posted batch form selected: `id.<approval id>` and `run.<run id>` checkboxes. */
export function batchSelection(data: Record<string, string>): { ids: string[]; runs: string[] } {
  const ids: string[] = [];
  const runs: string[] = [];
  for (const [k, v] of Object.entries(data)) {
    if (v !== '1') continue;
    if (k.startsWith('id.') && k.length > 3) ids.push(k.slice(3));
    else if (k.startsWith('run.') && k.length > 4) runs.push(k.slice(4));
  }
  return { ids, runs };
}

/** A8: a card's checkbox, joined to the inbox's batch form (no nested forms). */
export const BatchCheck: FC<{ id: string; title: string }> = ({ id, title }) => (
  <label class="check select">
    <input type="checkbox" name={`id.${id}`} value="1" form="batch" aria-label={`Select: ${title}`} /> Select
  </label>
);

/** A8: the inbox's batch bar: approve or reject the selected cards (and every card of the chosen runs) in one action. */
export const BatchForm: FC<{ csrf: string; runs: { id: string; count: number }[] }> = ({ csrf, runs }) => (
  <form method="post" action="/approvals/answer" id="batch" class="batch" aria-label="Answer the selected cards">
    <input type="hidden" name="csrf" value={csrf} />
    <p class="meta">Tick Select on the cards below to answer them together: each is answered on its own, once.</p>
    {runs.map((r) => (
      <label class="check">
        <input type="checkbox" name={`run.${r.id}`} value="1" /> {`All ${r.count} from run ${r.id}`}
      </label>
    ))}
    <label>
      Reason (optional) <input type="text" name="reason" maxlength={4000} />
    </label>
    <div class="buttons">
      <button type="submit" name="decision" value="approve" class="approve">
        Approve selected
      </button>
      <button type="submit" name="decision" value="reject" class="reject">
        Reject selected
      </button>
    </div>
  </form>
);

/** A8: what a batch answer did, card by card. */
export const BatchResults: FC<{ results: { id: string; outcome: string; error?: string; run_id?: string }[] }> = ({ results }) => (
  <div>
    <h1>Answered</h1>
    <ul class="results">
      {results.map((r) => (
        <li class={`status-${r.outcome}`}>
          <code>{r.id}</code>{' '}
          {r.outcome === 'answered'
            ? 'answered'
            : r.outcome === 'expired'
              ? 'had expired: nothing ran'
              : `not answered: ${r.error ?? r.outcome}`}
          {r.run_id && (
            <>
              {' · '}
              <a href={`/runs/${r.run_id}`}>{`run ${r.run_id}`}</a>
            </>
          )}
        </li>
      ))}
    </ul>
    <p>
      <a href="/">Back to the inbox</a>
    </p>
  </div>
);
