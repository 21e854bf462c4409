export interface EventStats {
  start: string | null;
  end: string | null;
  total: number;
  events: { name: string; count: number }[];
}

export interface EventRecord {
  id: string;
  name: string;
  contactId: string;
  data: Record<string, string | number | boolean>;
  system: boolean;
  createdAt: string;
}
