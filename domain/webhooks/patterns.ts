// Which events an endpoint wants: exact names, or patterns in which `*` stands for one
// dot-separated part (`email.*`, `segment.*.entry`); `*` alone is every event.

/** Why a pattern is not one, or null. */
export function invalidPattern(pattern: string): string | null {
  if (pattern === '*') return null;
  const parts = pattern.split('.');
  if (parts.some((part) => part === '')) return 'An empty part between dots';
  if (parts.some((part) => part !== '*' && part.includes('*'))) return '`*` stands for a whole dot-separated part (`email.*`), not part of one';
  return null;
}

/** Whether an event name is one an endpoint subscribed to. Names compare case-sensitively, as events are recorded. */
export function matchesPattern(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (!pattern.includes('*')) return pattern === name;
  const want = pattern.split('.');
  const have = name.split('.');
  return want.length === have.length && want.every((part, i) => part === '*' || part === have[i]);
}

export const wantsEvent = (patterns: string[], name: string): boolean => patterns.some((pattern) => matchesPattern(pattern, name));
