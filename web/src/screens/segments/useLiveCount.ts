import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { filterConditionSchema } from '../../../../domain/segments/schema.ts';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { relativeTo, type FilterCondition } from './filters.ts';

/** `value`, once it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** A condition whose count is known already (a saved segment's, with its member count). */
export interface KnownCount {
  condition: FilterCondition | null;
  count: number;
}

/**
 * A live count of what a condition selects while it is edited: checked with the API's zod schema
 * first (nothing is asked while it is incomplete), then counted by the API (`count`) 400 ms after
 * the last change. Problems are keyed by their path in the condition, whether the schema or the
 * API found them (`errorPrefix` is where the API names the condition: `condition`, `audienceCondition`).
 */
export function useLiveCount(
  key: readonly unknown[],
  condition: FilterCondition | null,
  count: (condition: FilterCondition | null) => Promise<number>,
  errorPrefix: string,
  known?: KnownCount,
) {
  const settled = useDebounced(condition, 400);
  const checked: { data?: FilterCondition | null; errors?: FieldErrors } = settled === null ? { data: null } : validate(filterConditionSchema, settled);
  const asked = JSON.stringify(settled);
  // The saved condition's count came with the segment: not asked again (a second count of the same query).
  const isKnown = known !== undefined && asked === JSON.stringify(known.condition);
  const query = useQuery({
    queryKey: [...key, asked],
    queryFn: () => count(checked.data ?? null),
    enabled: checked.data !== undefined && !isKnown,
    placeholderData: keepPreviousData,
    retry: false,
  });
  if (isKnown) return { count: known.count, pending: settled !== condition, errors: {}, error: null };
  const errors = checked.errors ?? (query.error ? relativeTo(serverFieldErrors(query.error), errorPrefix) : {});
  return {
    count: checked.errors || query.error ? undefined : query.data,
    /** The count is being worked out (the condition changed, or the API is counting). */
    pending: settled !== condition || query.isFetching,
    errors,
    error: query.error,
  };
}
