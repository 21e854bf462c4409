/**
 * A saved condition as a query over the project's contacts: compiled leniently (a key may have
 * changed type since it was saved), with the numbers of each mixed key it searches as text.
 */
import type { DocumentStore, Filter } from '../../ports/store.ts';
import { contacts } from '../contacts/collection.ts';
import type { DataFieldTypes } from '../contacts/data-types.ts';
import { compileCondition, mixedTextKeys } from './filter.ts';

export async function conditionQuery(store: DocumentStore, projectId: string, condition: unknown, now: Date, types: DataFieldTypes): Promise<Filter> {
  const numbers = await mixedNumbers(store, projectId, mixedTextKeys(condition, types));
  return compileCondition(condition, { now, types, numbers, strictTypes: false });
}

/**
 * The distinct numbers each key holds in the project: one count by value (SQLite groups it
 * itself; MongoDB and FerretDB run the same $match/$group), keeping the numbers.
 */
async function mixedNumbers(store: DocumentStore, projectId: string, keys: string[]): Promise<Record<string, number[]>> {
  const numbers: Record<string, number[]> = {};
  for (const key of keys) {
    const path = `data.${key}`;
    const values = await contacts(store).aggregate<{ _id: unknown }>([
      { $match: { projectId, [path]: { $exists: true } } },
      { $group: { _id: `$${path}`, n: { $sum: 1 } } },
    ]);
    numbers[key] = values.flatMap((v) => (typeof v._id === 'number' ? [v._id] : []));
  }
  return numbers;
}
