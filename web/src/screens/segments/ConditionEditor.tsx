import { useQuery } from '@tanstack/react-query';
import { errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { eventNames } from './api.ts';
import { FilterBuilder } from './FilterBuilder.tsx';
import type { FilterCondition } from './filters.ts';
import { LiveCount } from './LiveCount.tsx';
import { useLiveCount, type KnownCount } from './useLiveCount.ts';

interface Props {
  label: string;
  value: FilterCondition;
  onChange: (next: FilterCondition) => void;
  /** What the count counts: a segment's contacts, a campaign's recipients. */
  count: (condition: FilterCondition | null) => Promise<number>;
  countKey: readonly unknown[];
  noun: (n: number) => string;
  /** Where the API names the condition in its field errors (`condition`, `audienceCondition`). */
  errorPrefix: string;
  /** Problems the last save found, keyed by their path in the condition. */
  saveErrors?: Record<string, string>;
  disabled?: boolean;
  /** A condition whose count is known already, so it is not asked for again (a saved segment's). */
  known?: KnownCount;
}

/** The filter builder with its live count: the segment screen's, and the campaign audience's. */
export function ConditionEditor({ label, value, onChange, count, countKey, noun, errorPrefix, saveErrors = {}, disabled, known }: Props) {
  const project = useCurrentProject();
  const names = useQuery({ queryKey: ['event-names', project.id], queryFn: () => eventNames(project.id), staleTime: 60_000 });
  const live = useLiveCount(countKey, value, count, errorPrefix, known);
  const errors = { ...saveErrors, ...live.errors };
  return (
    <>
      <FilterBuilder label={label} value={value} onChange={onChange} errors={errors} eventNames={names.data ?? []} disabled={disabled} />
      {live.error && Object.keys(live.errors).length === 0 ? (
        // Not a problem of the condition (a 429, the network, …): the API's own message.
        <p role="alert">{errorMessage(live.error)}</p>
      ) : (
        <LiveCount count={live.count} pending={live.pending} incomplete={Object.keys(live.errors).length > 0} noun={noun} />
      )}
    </>
  );
}
