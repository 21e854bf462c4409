/** Names the service emits; none of them can be tracked by hand or deleted. */
export function isSystemEventName(name: string): boolean {
  const n = name.toLowerCase();
  return (
    n.startsWith('email.') ||
    n === 'contact.subscribed' ||
    n === 'contact.unsubscribed' ||
    /^segment\..+\.(entry|exit)$/.test(n)
  );
}
