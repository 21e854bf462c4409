import { DuplicateKeyError, type DocumentStore } from '../../ports/store.ts';
import { inferType, type DataType, type SimpleValue } from './schema.ts';

// In schema.ts, so the dashboard's data editor types values by the same rule.
export { inferType, type DataType };

/**
 * The types each data key has held in a project: one type, or every type recorded for it (a key
 * with more than one is "mixed").
 */
export type DataFieldTypes = Record<string, DataType | readonly DataType[]>;

/** The types a key has held, as a list (sorted, so messages name them in one order). */
export const typesOf = (types: DataType | readonly DataType[]): DataType[] => (typeof types === 'string' ? [types] : [...types].sort());

/** A key seen with more than one type across a project's contacts is read as a string (spec: contacts, rule 4). */
export const effectiveType = (types: DataType | readonly DataType[]): DataType => {
  const all = typesOf(types);
  return all.length === 1 ? all[0] : 'string';
};

const seen = new Set<string>();

/**
 * Records which types each data key has held in the project (`data_fields`), for segment
 * filters. The in-process set skips the write for pairs this process has recorded already.
 */
export async function recordDataTypes(store: DocumentStore, projectId: string, data: Record<string, SimpleValue>): Promise<void> {
  const fields = store.collection('data_fields');
  for (const [key, value] of Object.entries(data)) {
    const type = inferType(value);
    const mark = `${projectId}\u0000${key}\u0000${type}`;
    if (seen.has(mark)) continue;
    const record = () =>
      fields.updateOne({ _id: `${projectId}/${key}` }, { $addToSet: { types: type }, $setOnInsert: { projectId, key } }, { upsert: true });
    try {
      await record();
    } catch (err) {
      // Two contacts bringing a new key at once: MongoDB lets one upsert insert and fails the
      // other on the unique _id; the retry finds the document and adds its type.
      if (!(err instanceof DuplicateKeyError)) throw err;
      await record();
    }
    seen.add(mark);
  }
}

/** Every type each data key of the project has held (`data_fields`). */
export async function dataFieldTypes(store: DocumentStore, projectId: string): Promise<Record<string, DataType[]>> {
  const rows = await store.collection('data_fields').find({ projectId });
  return Object.fromEntries(rows.map((r) => [r.key as string, typesOf(r.types as DataType[])]));
}
