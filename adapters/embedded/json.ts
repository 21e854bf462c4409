/**
 * A deep copy of a JSON value (what the store holds): cheaper than structuredClone, which
 * handles every kind of value. An own `__proto__` key (JSON.parse makes one) stays a key.
 */
export function copyJson<V>(value: V): V {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) out.push(copyJson(value[i]));
    return out as V;
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(out, key, { value: item, writable: true, enumerable: true, configurable: true });
    else out[key] = item;
  }
  return out as V;
}
