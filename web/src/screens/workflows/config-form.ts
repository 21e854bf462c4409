import { SECONDS_PER_UNIT as SECONDS } from '../../../../domain/workflows/schema.ts';
import type { StepType } from './types.ts';

/** A step's config as the side panel's inputs hold it: strings, one per input. */
export type ConfigValues = Record<string, string>;

export type TimeoutUnit = keyof typeof SECONDS;

/** A timeout in seconds shown in the largest unit that divides it. */
function largestUnit(seconds: number): { amount: string; unit: TimeoutUnit } {
  for (const unit of ['weeks', 'days', 'hours', 'minutes'] as const) {
    if (seconds > 0 && seconds % SECONDS[unit] === 0) return { amount: String(seconds / SECONDS[unit]), unit };
  }
  return { amount: String(seconds), unit: 'seconds' };
}

/** The inputs' values for a saved config (or the defaults of a new step). */
export function toValues(type: StepType, config: Record<string, unknown>): ConfigValues {
  const text = (v: unknown) => (v === undefined || v === null ? '' : String(v));
  switch (type) {
    case 'SEND_EMAIL':
      return { templateId: text(config.templateId) };
    case 'DELAY':
      return { amount: text(config.amount ?? 1), unit: text(config.unit ?? 'days') };
    case 'WAIT_FOR_EVENT': {
      const { amount, unit } = largestUnit(Number(config.timeout ?? 86_400));
      return { eventName: text(config.eventName), timeoutAmount: amount, timeoutUnit: unit };
    }
    case 'CONDITION':
      return {
        field: text(config.field),
        operator: text(config.operator ?? 'equals'),
        value: typeof config.value === 'object' && config.value !== null ? JSON.stringify(config.value) : text(config.value),
        valueType: typeof config.value === 'number' ? 'number' : typeof config.value === 'boolean' ? 'boolean' : 'text',
        unit: text(config.unit),
      };
    case 'WEBHOOK':
      return {
        url: text(config.url),
        method: text(config.method ?? 'POST'),
        headers: Object.entries((config.headers ?? {}) as Record<string, string>).map(([k, v]) => `${k}: ${v}`).join('\n'),
      };
    case 'UPDATE_CONTACT':
      return { data: config.data ? JSON.stringify(config.data, null, 2) : '{\n  \n}' };
    case 'EXIT':
      return { reason: text(config.reason) };
    default:
      return {};
  }
}

/**
 * The config to send, from the inputs; the API's schema (stepConfigSchemas) then judges it.
 * Returns a field error for input that cannot even be read (JSON, a header line).
 */
export function fromValues(type: StepType, v: ConfigValues): { config: Record<string, unknown> } | { field: string; message: string } {
  const number = (s: string | undefined) => (s === undefined || s.trim() === '' ? Number.NaN : Number(s));
  switch (type) {
    case 'SEND_EMAIL':
      return { config: { templateId: v.templateId } };
    case 'DELAY':
      return { config: { amount: number(v.amount), unit: v.unit } };
    case 'WAIT_FOR_EVENT':
      return { config: { eventName: v.eventName, timeout: number(v.timeoutAmount) * SECONDS[(v.timeoutUnit as TimeoutUnit) ?? 'seconds'] } };
    case 'CONDITION': {
      const config: Record<string, unknown> = { field: v.field.trim(), operator: v.operator.trim() };
      if (v.value.trim() !== '') {
        if (v.valueType === 'number') config.value = number(v.value);
        else if (v.valueType === 'boolean') config.value = v.value.trim().toLowerCase() === 'true';
        else config.value = v.value;
      }
      if (v.unit.trim() !== '') config.unit = v.unit.trim();
      return { config };
    }
    case 'WEBHOOK': {
      const headers: Record<string, string> = {};
      for (const line of v.headers.split('\n').filter((l) => l.trim() !== '')) {
        const colon = line.indexOf(':');
        if (colon < 1) return { field: 'headers', message: `"${line}" is not a header: write Name: value` };
        headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
      }
      return { config: { url: v.url.trim(), method: v.method, headers } };
    }
    case 'UPDATE_CONTACT':
      try {
        return { config: { data: JSON.parse(v.data) } };
      } catch {
        return { field: 'data', message: 'Write the data as a JSON object, such as {"plan": "pro"}' };
      }
    case 'EXIT':
      return { config: v.reason.trim() ? { reason: v.reason.trim() } : {} };
    default:
      return { config: {} };
  }
}
